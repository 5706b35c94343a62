import type { SyntaxNode } from '../../core/types.js';
import { freshName, identifiersIn } from '../context.js';
import { lineWith } from '../edit.js';
import type { LineEdit, Template, TemplateContext, TemplateResult } from '../types.js';

/** Names bound exactly once, at module level, to a literal (string, number, tuple of them). */
function moduleConstants(root: SyntaxNode): Set<string> {
  const count = new Map<string, number>();
  const lit = new Set<string>();
  for (const a of root.descendantsOfType(['assignment', 'augmented_assignment'])) {
    const l = a.childForFieldName('left');
    if (l?.type !== 'identifier') continue;
    count.set(l.text, (count.get(l.text) ?? 0) + 1);
    const atModule = a.parent?.type === 'expression_statement' && a.parent.parent?.type === 'module';
    const v = a.childForFieldName('right');
    if (atModule && a.type === 'assignment' && v && /^(?:string|concatenated_string|integer|float|tuple|true|false)$/.test(v.type)) lit.add(l.text);
  }
  return new Set([...lit].filter((n) => count.get(n) === 1));
}

function constantExpr(n: SyntaxNode, consts: ReadonlySet<string>, cp: string | null): boolean {
  if (/^(?:string|concatenated_string|integer|float|true|false|none)$/.test(n.type)) return n.descendantsOfType('interpolation').length === 0;
  if (n.type === 'identifier') return consts.has(n.text);
  if (n.type === 'tuple' || n.type === 'list' || n.type === 'parenthesized_expression') return n.namedChildren.every((c) => constantExpr(c, consts, cp));
  if (n.type === 'keyword_argument') return constantExpr(n.childForFieldName('value')!, consts, cp);
  if (n.type === 'attribute' && cp && n.text.startsWith(`${cp}.`)) return true;
  return false;
}

/**
 * A kernel compiled inside a hot function or a loop from constant arguments → a module-level
 * memoized factory (`functools.cache`) compiled on first use, called where the compile was.
 */
export const cachedKernel: Template = {
  id: 'cached-kernel',
  rules: ['nvrtc/compile-in-hot-path'],
  languages: ['python'],
  build(ctx: TemplateContext): TemplateResult {
    const call = ctx.node.type === 'call' ? ctx.node : null;
    if (!call) return { decline: 'not a call' };
    const root = ctx.source.root;
    const consts = moduleConstants(root);
    const cpImport = /^\s*import\s+cupy(?:\s+as\s+(\w+))?\s*$/m.exec(ctx.text);
    const cp = cpImport ? cpImport[1] ?? 'cupy' : null;
    const args = call.childForFieldName('arguments')?.namedChildren ?? [];
    const bad = args.find((a) => a.type !== 'comment' && !constantExpr(a, consts, cp));
    if (bad) return { decline: `argument \`${bad.text.slice(0, 40)}\` is not a module-level constant: the kernel depends on the call` };
    const fnTop = (() => {
      let s: SyntaxNode = call;
      while (s.parent && s.parent.type !== 'module') s = s.parent;
      return s.parent ? s : null;
    })();
    if (!fnTop || (fnTop.type !== 'function_definition' && fnTop.type !== 'decorated_definition' && fnTop.type !== 'class_definition')) return { decline: 'the compile is not inside a top-level function or class' };
    const callee = call.childForFieldName('function')!.text;
    if (call.startPosition.row !== call.endPosition.row && call.text.split('\n').length > 12) return { decline: 'the compile call spans too many lines to move' };
    const used = identifiersIn(root);
    const nameArg = args.find((a) => a.type === 'string' && /^[A-Za-z_]\w*$/.test(a.text.slice(1, -1)));
    const base = nameArg ? nameArg.text.slice(1, -1) : callee.replace(/^.*\./, '').toLowerCase();
    const factory = freshName(`_${base}_kernel`, used);
    if (!factory) return { decline: 'no free name for the factory' };
    const edits: LineEdit[] = [];
    const hasFunctools = /^\s*import\s+functools\s*$/m.test(ctx.text);
    const imports = root.namedChildren.filter((s) => s.type === 'import_statement' || s.type === 'import_from_statement' || s.type === 'future_import_statement');
    const callText = call.text.split('\n').map((l, i) => (i === 0 ? l : l.replace(/^\s{0,8}/, '        '))).join('\n');
    if (!hasFunctools) {
      if (imports.length === 0) return { decline: 'no import block to add `import functools` to' };
      edits.push({ startLine: imports[0].startPosition.row + 1, endLine: imports[0].startPosition.row, text: 'import functools' });
    }
    // Before the top-level definition, with the two blank lines PEP 8 puts between definitions.
    edits.push({ startLine: fnTop.startPosition.row + 1, endLine: fnTop.startPosition.row, text: ['@functools.cache', `def ${factory}():`, `    return ${callText}`, '', ''].join('\n') });
    edits.push(lineWith(ctx.lines, call, `${factory}()`));
    return {
      description: `Compile once: a module-level \`@functools.cache\` factory \`${factory}()\` builds the kernel on first use, and the hot path calls it.`,
      edits,
      behaviourPreserving: true,
    };
  },
};

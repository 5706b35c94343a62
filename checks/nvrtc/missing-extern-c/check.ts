import { cudaModel } from '../../../src/analysis/cuda.js';
import { calleePath, pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { collectSingleAssignments } from '../../../src/sources/nvrtc.js';
import type { Source } from '../../../src/sources/types.js';
import { NVRTC_COLD } from '../../../src/config/costs.js';

interface Lookups {
  /** Plain kernel names looked up, with how (`kernel_names=`, `RawKernel`, `get_function`, `cuModuleGetFunction`). */
  byName: Map<string, string>;
  /** Base names registered through `name_expressions=` / `nvrtcAddNameExpression` (lowered names are resolved by NVRTC). */
  nameExpressions: Set<string>;
}

const memo = new WeakMap<Source, Lookups>();

/** String values of a literal, a tuple/list of literals, or a name assigned once to one. */
function stringsOf(n: SyntaxNode | null | undefined, assigns: Map<string, SyntaxNode | null>, depth = 0): string[] {
  const v = unparen(n);
  if (!v || depth > 4) return [];
  if (v.type === 'string') {
    if (v.namedChildren.some((c) => c.type === 'interpolation')) return [];
    return [v.namedChildren.filter((c) => c.type === 'string_content').map((c) => c.text).join('')];
  }
  if (v.type === 'tuple' || v.type === 'list' || v.type === 'set') return v.namedChildren.flatMap((c) => stringsOf(c, assigns, depth + 1));
  if (v.type === 'identifier') return stringsOf(assigns.get(v.text), assigns, depth + 1);
  // `"name".encode()` for the driver API.
  if (v.type === 'call') {
    const f = v.childForFieldName('function');
    if (f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'encode') return stringsOf(f.childForFieldName('object'), assigns, depth + 1);
  }
  return [];
}

function lookups(py: Source): Lookups {
  const hit = memo.get(py);
  if (hit) return hit;
  const assigns = collectSingleAssignments(py.root);
  const byName = new Map<string, string>();
  const nameExpressions = new Set<string>();
  const add = (names: string[], how: string) => {
    for (const n of names) if (/^[A-Za-z_]\w*$/.test(n) && !byName.has(n)) byName.set(n, how);
  };
  for (const call of py.root.descendantsOfType('call')) {
    const path = calleePath(call.childForFieldName('function')) ?? '';
    const tail = path.split('.').pop() ?? '';
    const args = pyArgs(call);
    const ne = args.keywords.get('name_expressions');
    if (ne) for (const s of stringsOf(ne, assigns)) nameExpressions.add(s.replace(/<[\s\S]*$/, '').replace(/^.*::/, '').trim());
    if (tail === 'nvrtcAddNameExpression') for (const s of stringsOf(args.positional[1], assigns)) nameExpressions.add(s.replace(/<[\s\S]*$/, '').trim());
    if (tail === 'compile_kernels') add(stringsOf(args.keywords.get('kernel_names'), assigns), '`kernel_names=`');
    else if (tail === 'RawKernel') add(stringsOf(args.keywords.get('name') ?? args.positional[1], assigns), '`RawKernel(..., name)`');
    else if (tail === 'get_function') add(stringsOf(args.keywords.get('name') ?? args.positional[0], assigns), '`get_function(name)`');
    else if (tail === 'cuModuleGetFunction') add(stringsOf(args.positional[args.positional.length - 1], assigns), '`cuModuleGetFunction`');
  }
  const out = { byName, nameExpressions };
  memo.set(py, out);
  return out;
}

function hasCLinkage(fn: SyntaxNode): boolean {
  for (let p = fn.parent; p; p = p.parent) {
    if (p.type === 'linkage_specification' && /^"C"$/.test(p.childForFieldName('value')?.text ?? '')) return true;
  }
  return false;
}

function analyse(ctx: CheckContext): void {
  const py = ctx.source.parent;
  if (!py) return;
  const m = ctx.get(cudaModel);
  const kernels = m.functions.filter((f) => f.isKernel && f.name);
  if (!kernels.length) return;
  const l = lookups(py);
  if (!l.byName.size) return;
  const pyLines = py.text.split('\n');
  for (const fn of kernels) {
    const how = l.byName.get(fn.name);
    if (!how || l.nameExpressions.has(fn.name) || hasCLinkage(fn.node)) continue;
    // A template cannot have C linkage; NVRTC name expressions are the only way to look one up.
    if (fn.node.parent?.type === 'template_declaration') continue;
    const first = fn.node.child(0);
    if (!first) continue;
    const node = first.startPosition.row === first.endPosition.row ? first : fn.node;
    const description = `Prefix the definition with extern "C" so the symbol keeps the plain name ${fn.name} that ${how} looks up.`;
    let fix: { description: string; replace?: { from: SyntaxNode; text: string } } = { description };
    const at = ctx.source.toFile(first.startPosition.row, first.startPosition.column);
    const line = at ? pyLines[at.line - 1] : undefined;
    const col = at ? at.column - 1 : -1;
    const word = first.text.split(/\s/)[0];
    // `static` gives internal linkage, which `extern "C"` contradicts: leave that to the author.
    if (line !== undefined && node === first && line.slice(col).startsWith(word) && !/\bstatic\b/.test(fn.node.text.split('(')[0])) {
      fix = { description, replace: { from: first, text: line.slice(0, col) + 'extern "C" ' + line.slice(col) } };
    }
    ctx.report({ node, messageId: 'mangled', data: { name: fn.name, how }, fix });
  }
}

export default defineCheck({
  id: 'nvrtc/missing-extern-c',
  pass: 6,
  severity: 'low-medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['nvrtc-in-python'],
  citation: '003 §7.1 (template declares `extern "C" __global__`); 003 §7.2 (kernels looked up by plain name: `kernel_names=("entry_point_1", ...)`)',
  summary: 'Kernel looked up by its plain name but compiled with C++ linkage (mangled name).',
  why: 'Without extern "C" NVRTC emits the C++-mangled symbol (_Z…), so looking the kernel up by its plain name fails at load time, after the NVRTC compile (' + NVRTC_COLD + ') has already been paid (003 §7.1, §7.2, §7.3).',
  messages: {
    mangled: 'Kernel {{name}} is looked up by its plain name ({{how}}) but is not declared extern "C"; C++ name mangling will make the lookup fail.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

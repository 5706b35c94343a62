/**
 * What a finding says about the cross-file facts behind it: "`stage_counts()` (src/pipeline/counts.py:41)
 * synchronizes the device (src/pipeline/counts.py:44)". Called once per finding, only when the review has
 * a project index; looks at the calls in the flagged code and at the calls that bound the names it uses.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { calleePath } from '../sources/syntax.js';
import { describeFact, includedConstant, includedFunction, pyFunctionFacts } from './lookup.js';
import type { FunctionFacts } from './types.js';

const CALLS = ['call', 'call_expression'];

function factsOfCall(source: Source, config: ResolvedConfig, call: SyntaxNode): FunctionFacts | null {
  const fn = call.childForFieldName('function');
  if (!fn) return null;
  if (source.language === 'python') return pyFunctionFacts(config, source.path, calleePath(fn));
  const name = fn.type === 'template_function' ? fn.childForFieldName('name')?.text : fn.type === 'identifier' || fn.type === 'qualified_identifier' ? fn.text : null;
  return name ? includedFunction(config, source.path, name) : null;
}

function scopeOf(n: SyntaxNode): SyntaxNode {
  for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition') return p;
  let r = n;
  while (r.parent) r = r.parent;
  return r;
}

export function explainFinding(source: Source, config: ResolvedConfig, node: SyntaxNode): string | null {
  if (!config.projectIndex) return null;
  const notes: string[] = [];
  const seen = new Set<string>();
  const add = (f: FunctionFacts | null) => {
    if (!f) return;
    const key = `${f.path}#${f.name}`;
    if (seen.has(key)) return;
    seen.add(key);
    const d = describeFact(f);
    if (d) notes.push(d);
  };
  const own = CALLS.includes(node.type) ? [node, ...node.descendantsOfType(CALLS)] : node.descendantsOfType(CALLS);
  for (const c of own) add(factsOfCall(source, config, c));
  // Names the flagged code uses that a call to an indexed helper bound earlier in the same function.
  const names = new Set(node.descendantsOfType('identifier').map((i) => i.text));
  if (node.type === 'identifier') names.add(node.text);
  if (names.size && notes.length < 2) {
    const scope = scopeOf(node);
    for (const a of scope.descendantsOfType(['assignment', 'init_declarator'])) {
      if (a.startIndex > node.startIndex) break;
      const left = a.childForFieldName('left') ?? a.childForFieldName('declarator');
      const right = a.childForFieldName('right') ?? a.childForFieldName('value');
      if (!left || !right || !names.has(left.text.replace(/^[*&]+/, ''))) continue;
      const call = CALLS.includes(right.type) ? right : null;
      if (call) add(factsOfCall(source, config, call));
    }
  }
  // A constant of an included header that the flagged code names.
  if (source.language !== 'python') {
    for (const n of names) {
      const c = includedConstant(config, source.path, n);
      if (c && notes.length < 3) notes.push(`\`${c.name}\` is ${c.value} (${c.path}:${c.line})`);
    }
  }
  return notes.length ? ` (${notes.slice(0, 3).join('; ')})` : null;
}

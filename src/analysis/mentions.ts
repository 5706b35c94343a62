import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { lastName } from './syntax.js';
import { alternation } from '../core/regex.js';

/**
 * Text-first lookups for rules that care about a few API names: a regex over the source finds where
 * a vocabulary's names are written, and only those positions are turned into nodes. Walking every
 * identifier of a large file costs one N-API call per node; most files never mention the names.
 */

const cache = new WeakMap<readonly string[], RegExp | null>();

/** Last components of a vocabulary's entries (`cp.cuda.malloc_managed` → `malloc_managed`, `rmm::mr::x` → `x`). */
export function vocabNames(entries: readonly string[]): string[] {
  return [...new Set(entries.map((e) => lastName(e.replace(/^\*\./, '')) ?? e).filter((n) => /^\w+$/.test(n)))];
}

function regexFor(entries: readonly string[]): RegExp | null {
  if (cache.has(entries)) return cache.get(entries)!;
  const names = vocabNames(entries);
  const re = names.length ? new RegExp(`\\b(?:${alternation(names)})\\b`, 'g') : null;
  cache.set(entries, re);
  return re;
}

/** The source text writes one of the vocabulary's names somewhere (code, comment or string). */
export function mentions(source: Source, entries: readonly string[]): boolean {
  const re = regexFor(entries);
  if (!re) return false;
  re.lastIndex = 0;
  return re.test(source.text);
}

/** The smallest named node at each place the source writes one of the names. */
export function mentionNodes(source: Source, entries: readonly string[]): SyntaxNode[] {
  const re = regexFor(entries);
  if (!re) return [];
  const out: SyntaxNode[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(source.text); m; m = re.exec(source.text)) {
    const n = source.root.namedDescendantForIndex(m.index, m.index + m[0].length);
    if (n && n.startIndex === m.index) out.push(n);
  }
  return out;
}

/**
 * Python: the whole dotted reference a name ends (`malloc_managed` in `cp.cuda.malloc_managed` →
 * the attribute), or null when the name is an inner part of a longer chain or not a reference.
 */
export function pyReferenceOf(n: SyntaxNode): SyntaxNode | null {
  if (n.type !== 'identifier') return null;
  let ref = n;
  if (n.parent?.type === 'attribute') {
    if (n.parent.childForFieldName('attribute')?.id !== n.id) return null;
    ref = n.parent;
  }
  const outer = ref.parent;
  return outer?.type === 'attribute' && outer.childForFieldName('object')?.id === ref.id ? null : ref;
}

/** Python: the call whose callee is `ref` (`ref(...)`), or null. */
export function pyCallOf(ref: SyntaxNode): SyntaxNode | null {
  const par = ref.parent;
  return par?.type === 'call' && par.childForFieldName('function')?.id === ref.id ? par : null;
}

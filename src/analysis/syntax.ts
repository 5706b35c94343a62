import type { SyntaxNode } from '../core/types.js';
import { escapeRe } from '../core/regex.js';
import type { ResolvedConfig } from '../config/schema.js';
import { calleePath } from '../sources/syntax.js';
import type { Source } from '../sources/types.js';

// calleePath lives in src/sources/syntax.ts (the NVRTC source finder needs it too); re-exported here.
export { calleePath };

/**
 * Does a dotted path match a vocabulary entry? An entry matches the whole path or its tail
 * (`runtime.synchronize` matches `self.runtime.synchronize`); `*.name` matches any receiver.
 */
interface CompiledVocab {
  exact: Set<string>;
  /** `*.name` entries, as `.name`. */
  anyReceiver: string[];
  results: Map<string, boolean>;
}
const compiledVocabs = new WeakMap<readonly string[], CompiledVocab>();

export function matchesVocab(path: string | null, entries: readonly string[]): boolean {
  if (!path) return false;
  // Vocabularies are fixed per config; checks ask about the same paths over and over.
  let c = compiledVocabs.get(entries);
  if (!c) {
    c = { exact: new Set(entries.filter((e) => !e.startsWith('*.'))), anyReceiver: entries.filter((e) => e.startsWith('*.')).map((e) => e.slice(1)), results: new Map() };
    compiledVocabs.set(entries, c);
  }
  const hit = c.results.get(path);
  if (hit !== undefined) return hit;
  let r = c.exact.has(path);
  for (let i = 0; !r && i < path.length; i++) {
    const ch = path[i];
    if (ch === '.') r = c.exact.has(path.slice(i + 1));
    else if (ch === ':' && path[i + 1] === ':') r = c.exact.has(path.slice(i + 2));
  }
  if (!r) for (const tail of c.anyReceiver) if (path.length > tail.length && path.endsWith(tail)) r = true;
  c.results.set(path, r);
  return r;
}

/** Last component of a dotted path. */
export function lastName(path: string | null): string | null {
  if (!path) return null;
  const i = Math.max(path.lastIndexOf('.'), path.lastIndexOf(':'));
  return i >= 0 ? path.slice(i + 1) : path;
}

/** Positional arguments and keyword arguments of a Python call. */
const argsMemo = new WeakMap<object, Map<number, { positional: SyntaxNode[]; keywords: Map<string, SyntaxNode> }>>();

export function pyArgs(call: SyntaxNode): { positional: SyntaxNode[]; keywords: Map<string, SyntaxNode> } {
  let memo = argsMemo.get(call.tree);
  if (!memo) argsMemo.set(call.tree, (memo = new Map()));
  const id = call.id;
  let r = memo.get(id);
  if (!r) memo.set(id, (r = computePyArgs(call)));
  // Callers may push to the arrays they get: hand out copies.
  return { positional: r.positional.slice(), keywords: new Map(r.keywords) };
}

function computePyArgs(call: SyntaxNode): { positional: SyntaxNode[]; keywords: Map<string, SyntaxNode> } {
  const positional: SyntaxNode[] = [];
  const keywords = new Map<string, SyntaxNode>();
  const args = call.childForFieldName('arguments');
  if (args) {
    for (const a of args.namedChildren) {
      if (a.type === 'keyword_argument') {
        const k = a.childForFieldName('name')?.text;
        const v = a.childForFieldName('value');
        if (k && v) keywords.set(k, v);
      } else if (a.type !== 'comment') {
        positional.push(a);
      }
    }
  }
  return { positional, keywords };
}

export function unparen(n: SyntaxNode | null | undefined): SyntaxNode | null {
  let cur = n ?? null;
  while (cur && cur.type === 'parenthesized_expression') cur = cur.namedChildren[0] ?? null;
  return cur;
}

/** True when a is an ancestor-or-self of b (by range). */
export function contains(a: SyntaxNode, b: SyntaxNode): boolean {
  return a.startIndex <= b.startIndex && b.endIndex <= a.endIndex;
}

/** Iterative pre-order walk (no recursion: deeply nested input must not overflow the stack). */
export function* walk(root: SyntaxNode): Generator<SyntaxNode> {
  const cursor = root.walk();
  for (;;) {
    yield cursor.currentNode;
    if (cursor.gotoFirstChild()) continue;
    for (;;) {
      if (cursor.gotoNextSibling()) break;
      if (!cursor.gotoParent()) return;
    }
  }
}

/** Nearest ancestor of one of the given types, stopping at (and excluding) nodes of `stopAt` types. */
export function ancestor(n: SyntaxNode, types: readonly string[], stopAt: readonly string[] = []): SyntaxNode | null {
  let p = n.parent;
  while (p) {
    if (types.includes(p.type)) return p;
    if (stopAt.includes(p.type)) return null;
    p = p.parent;
  }
  return null;
}

const commentIndex = new WeakMap<object, { lines: string[]; byRow: Map<number, SyntaxNode[]> }>();

/**
 * Text of the comments that annotate a statement: on its own lines (trailing comments) and the block
 * of comment-only lines directly above it. Works for both grammars (`#` and `//` comments are `comment` nodes).
 */
export function commentsAround(stmt: SyntaxNode): string[] {
  let index = commentIndex.get(stmt.tree);
  if (!index) {
    const root = stmt.tree.rootNode;
    const byRow = new Map<number, SyntaxNode[]>();
    for (const c of root.descendantsOfType('comment')) {
      const list = byRow.get(c.startPosition.row) ?? [];
      list.push(c);
      byRow.set(c.startPosition.row, list);
    }
    commentIndex.set(stmt.tree, (index = { lines: root.text.split('\n'), byRow }));
  }
  const { lines, byRow } = index;
  const out: string[] = [];
  for (let r = stmt.startPosition.row; r <= stmt.endPosition.row; r++) for (const c of byRow.get(r) ?? []) if (c.startIndex >= stmt.startIndex) out.push(c.text);
  for (let r = stmt.startPosition.row - 1; r >= 0; r--) {
    const own = byRow.get(r) ?? [];
    if (!own.length || !/^\s*(#|\/\/|\/\*)/.test(lines[r] ?? '')) break;
    out.push(...own.map((c) => c.text));
  }
  return out;
}

/**
 * Does a file use a project vocabulary (catalog §2.4)? Each entry must appear as a whole name
 * (`runtime.launch`, `count_scatter_total`), so an English comment saying "launch" does not count.
 */
export function usesVocabulary(text: string, entries: readonly string[]): boolean {
  return entries.some((e) => {
    return new RegExp(`(^|[^\\w])${escapeRe(e)}\\b`).test(text);
  });
}

/** Flagged code as a message quotes it: one line, at most 60 characters. */
export function quote(n: SyntaxNode): string {
  const t = n.text.replace(/\s*\n\s*/g, ' ');
  return t.length > 60 ? t.slice(0, 57) + '...' : t;
}

/** Code text on one line (whitespace runs collapsed), cut to `max` characters for a message. */
export function oneLine(t: string, max = 60): string {
  const one = t.replace(/\s+/g, ' ').trim();
  return one.length > max ? one.slice(0, max - 3) + '...' : one;
}

/** Paths of tests, benchmarks and examples (moved here from python.ts: the CUDA model uses it too). */
export const TEST_OR_BENCH_PATH = /(^|\/)(tests?|benchmarks?|bench|examples?)\/|(^|\/)test_[^/]*\.py$|_test\.[^/]+$|(^|\/)bench_[^/]*$/;

/** One value per source and config (moved here from python.ts: the CUDA and Python models share it). */
export function memoized<T>(memo: WeakMap<Source, { config: ResolvedConfig; value: T }>, source: Source, config: ResolvedConfig, build: (s: Source, c: ResolvedConfig) => T): T {
  const hit = memo.get(source);
  if (hit && hit.config === config) return hit.value;
  const value = build(source, config);
  memo.set(source, { config, value });
  return value;
}

import { cudaModel } from '../../../src/analysis/cuda.js';
import { cppStatement, hostFunctionOf, pyStatement } from '../../../src/analysis/flow.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { bufferKey, cppBufferBase, streamKey, streamText } from '../../../src/analysis/streams.js';
import { matchesVocab, pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { POOL } from '../../../src/config/costs.js';

/**
 * One explicit release of a buffer that was allocated earlier in the same function.
 * `stmt` is the statement that releases it (`del a`, `a = None`, `cudaFree(a);`, `CUDA_CHECK(cudaFree(a));`).
 */
interface Release {
  key: string;
  stmt: SyntaxNode;
  /** The node to report and to order by: the target of `del a, b`, else the statement. */
  at: SyntaxNode;
  alloc: SyntaxNode;
  /** Stream of a stream-ordered free (`cudaFreeAsync(p, s)`), '' for an immediate one. */
  stream: string;
}

const FIX_TEXT = 'Release the temporaries in reverse allocation order (LIFO), last-allocated first, so the pool can coalesce the freed blocks.';
const STORE_METHODS = /^(append|extend|insert|add|put|put_nowait|appendleft|setdefault|update|push|submit)$/;

// ---------------------------------------------------------------- Python

/**
 * A use that makes another reference to the array: bound to a name or attribute (views `d[a:b]` keep the
 * base alive too), stored in a container, returned or yielded. After one, `del a` only drops a reference
 * and frees nothing, so its order says nothing about the pool.
 */
function pyEscapes(use: SyntaxNode): boolean {
  let cur = use;
  let p = use.parent;
  while (p && (['parenthesized_expression', 'tuple', 'list', 'expression_list', 'pair', 'dictionary', 'set'].includes(p.type) || (p.type === 'subscript' && p.childForFieldName('value')?.id === cur.id))) {
    cur = p;
    p = p.parent;
  }
  if (!p) return false;
  if (p.type === 'assignment') return p.childForFieldName('right')?.id === cur.id;
  if (p.type === 'return_statement' || p.type === 'yield' || p.type === 'named_expression') return true;
  if (p.type === 'argument_list') {
    const fn = p.parent?.childForFieldName('function');
    return fn?.type === 'attribute' && STORE_METHODS.test(fn.childForFieldName('attribute')?.text ?? '');
  }
  return false;
}

/** The value a name's last binding before `at` holds, when that binding allocates device memory. */
function pyAllocBefore(ctx: CheckContext, m: PyModel, scope: SyntaxNode, name: string, at: SyntaxNode, allocIds: Set<number>): SyntaxNode | null {
  const binds = m.assignmentsIn(scope).get(name) ?? [];
  let last: { node: SyntaxNode; value: SyntaxNode } | null = null;
  for (const b of binds) if (b.node.endIndex <= at.startIndex) last = b;
  if (!last || last.node.type !== 'assignment') return null;
  const v = unparen(last.value.type === 'assignment' ? last.value.childForFieldName('right') : last.value);
  if (!v) return null;
  // `d_b = d_a * 2`: elementwise arithmetic on a device array allocates its result.
  if (v.type === 'binary_operator' && last.value.type !== 'assignment') return m.isDevice(v) ? last.node : null;
  if (v.type !== 'call') return null;
  if (allocIds.has(v.id) || m.callMatches(v, ctx.config.vocab.async_alloc_calls)) return last.node;
  // `err, ptr = cudart.cudaMalloc(n)`: the pointer is the last target.
  if (last.value.type === 'assignment') return null;
  const fn = v.childForFieldName('function');
  const meth = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text ?? '' : '';
  // A new device array from a CuPy or CCCL call; views and host reads allocate nothing.
  if (m.isDevice(v) && !/^(view|reshape|ravel|transpose|swapaxes|squeeze|get|item|tolist)$/.test(meth)) return last.node;
  return null;
}

function pythonReleases(ctx: CheckContext): Release[] {
  const m = ctx.get(pythonModel);
  if (m.testOrBench) return [];
  const vocab = ctx.config.vocab;
  const allocIds = new Set(m.allocs.map((a) => a.id));
  const out: Release[] = [];
  const add = (name: SyntaxNode, stmt: SyntaxNode, at: SyntaxNode, stream: string) => {
    if (name.type !== 'identifier') return;
    const scope = m.scopeOf(stmt);
    if (scope.type !== 'function_definition' || m.debugGated(stmt)) return;
    const alloc = pyAllocBefore(ctx, m, scope, name.text, stmt, allocIds);
    if (!alloc) return;
    if (m.usesOf(name.text, scope).some((u) => u.startIndex > alloc.endIndex && u.endIndex <= stmt.startIndex && pyEscapes(u))) return;
    out.push({ key: name.text, stmt, at, alloc, stream });
  };
  const root = ctx.source.root;
  for (const d of root.descendantsOfType('delete_statement')) {
    const target = d.namedChildren[0];
    const names = target?.type === 'expression_list' ? target.namedChildren : target ? [target] : [];
    for (const n of names) add(n, d, names.length > 1 ? n : d, '');
  }
  for (const a of root.descendantsOfType('assignment')) {
    if (a.childForFieldName('right')?.type !== 'none' || a.parent?.type !== 'expression_statement') continue;
    const left = a.childForFieldName('left');
    if (left) add(left, a.parent, a.parent, '');
  }
  // cuda-python / CuPy runtime frees: `cudart.cudaFree(ptr)`, `cp.cuda.runtime.freeAsync(ptr, stream)`.
  const seen = new Set<number>();
  const asyncFrees = /[Ff]reeAsync/.test(ctx.source.text) ? root.descendantsOfType('call').filter((c) => m.callMatches(c, vocab.async_free_calls)) : [];
  for (const c of m.allocs.concat(asyncFrees)) {
    if (c.type !== 'call' || seen.has(c.id)) continue;
    seen.add(c.id);
    const isRaw = m.callMatches(c, vocab.raw_free_calls);
    const isAsync = !isRaw && m.callMatches(c, vocab.async_free_calls);
    if (!isRaw && !isAsync) continue;
    const { positional, keywords } = pyArgs(c);
    const arg = unparen(positional[0]);
    if (!arg) continue;
    const s = keywords.get('stream') ?? positional[1];
    const stmt = pyStatement(c);
    add(arg, stmt, stmt, isAsync ? `async:${s?.text.replace(/\s+/g, '') ?? ''}` : '');
  }
  return out;
}

// ---------------------------------------------------------------- CUDA C++

function cudaReleases(ctx: CheckContext): Release[] {
  const m = ctx.get(cudaModel);
  if (m.testOrBench) return [];
  const vocab = ctx.config.vocab;
  const allocs: Array<{ key: string; node: SyntaxNode; fn: number }> = [];
  const frees: Array<{ key: string; node: SyntaxNode; fn: number; stream: string }> = [];
  const allocVocab = [...vocab.alloc_calls, ...vocab.async_alloc_calls, ...vocab.managed_alloc_calls, ...vocab.pool_alloc_calls];
  for (const c of m.calls) {
    const fn = m.functionOf(c.node);
    if (!fn || !fn.isHost || m.debugGated(c.node)) continue;
    if (matchesVocab(c.path, vocab.async_free_calls) || matchesVocab(c.path, vocab.raw_free_calls)) {
      const base = cppBufferBase(c.args[0]);
      if (base?.type !== 'identifier') continue;
      const stream = matchesVocab(c.path, vocab.async_free_calls) ? `async:${streamKey(streamText(c.args[1] ?? null)) ?? ''}` : '';
      frees.push({ key: bufferKey(base.text), node: c.node, fn: fn.node.id, stream });
    } else if (matchesVocab(c.path, allocVocab) && /[Mm]alloc|MemAlloc/.test(c.name)) {
      const base = cppBufferBase(c.args[0]);
      if (base?.type === 'identifier') allocs.push({ key: bufferKey(base.text), node: c.node, fn: fn.node.id });
    }
  }
  const out: Release[] = [];
  for (const f of frees) {
    let alloc: SyntaxNode | null = null;
    for (const a of allocs) if (a.fn === f.fn && a.key === f.key && a.node.endIndex <= f.node.startIndex) alloc = a.node;
    if (!alloc) continue;
    const stmt = cppStatement(f.node);
    out.push({ key: f.key, stmt, at: stmt, alloc, stream: f.stream });
  }
  return out;
}

// ---------------------------------------------------------------- shared

/** Identifier uses of `key` strictly between two nodes, in the function that holds them. */
function usedBetween(fnBody: SyntaxNode, key: string, from: SyntaxNode, to: SyntaxNode, cache: Map<number, Map<string, SyntaxNode[]>>): boolean {
  let byName = cache.get(fnBody.id);
  if (!byName) {
    byName = new Map();
    for (const id of fnBody.descendantsOfType('identifier')) {
      const list = byName.get(id.text) ?? [];
      list.push(id);
      byName.set(id.text, list);
    }
    cache.set(fnBody.id, byName);
  }
  return (byName.get(key) ?? []).some((id) => id.startIndex >= from.endIndex && id.endIndex <= to.startIndex);
}

/** Only whitespace (and Python's `;`) around and between the two statements on their lines. */
function swapFix(ctx: CheckContext, a: SyntaxNode, b: SyntaxNode): FixSpec['replace'] | undefined {
  const text = ctx.linesOf(a, b);
  const lines = text.split('\n');
  const offsetOf = (n: SyntaxNode) => {
    let off = 0;
    for (let r = a.startPosition.row; r < n.startPosition.row; r++) off += lines[r - a.startPosition.row].length + 1;
    return off + n.startPosition.column;
  };
  const oa = offsetOf(a);
  const ob = offsetOf(b);
  if (text.slice(oa, oa + a.text.length) !== a.text || text.slice(ob, ob + b.text.length) !== b.text) return undefined;
  const before = text.slice(0, oa);
  const between = text.slice(oa + a.text.length, ob);
  const after = text.slice(ob + b.text.length);
  if (!/^[ \t]*$/.test(before) || !/^[\s;]*$/.test(between) || !/^[ \t]*$/.test(after)) return undefined;
  return { from: a, to: b, text: before + b.text + between + a.text + after };
}

/** `del a, b` → `del b, a`. */
function swapTargetsFix(ctx: CheckContext, del: SyntaxNode): FixSpec['replace'] | undefined {
  const list = del.namedChildren[0];
  if (list?.type !== 'expression_list' || list.namedChildren.length !== 2 || del.startPosition.row !== del.endPosition.row) return undefined;
  const line = ctx.linesOf(del);
  const col = list.startPosition.column;
  if (line.slice(col, col + list.text.length) !== list.text) return undefined;
  const [x, y] = list.namedChildren;
  return { from: del, text: line.slice(0, col) + `${y.text}, ${x.text}` + line.slice(col + list.text.length) };
}

/** The next statement after `s` in its block, skipping comments. */
function nextStatement(s: SyntaxNode): SyntaxNode | null {
  let n = s.nextNamedSibling;
  while (n && n.type === 'comment') n = n.nextNamedSibling;
  return n;
}

const EXITS = ['return_statement', 'raise_statement', 'throw_statement', 'goto_statement'];

/**
 * Cleanup on an error or early-exit path: an `except`/`catch` clause, or an `if` block that leaves the
 * function. It runs once when something failed; its release order does not shape the pool in steady state.
 */
function errorPath(stmt: SyntaxNode): boolean {
  const block = stmt.parent;
  if (!block) return false;
  for (let p: SyntaxNode | null = block; p && p.type !== 'function_definition' && p.type !== 'lambda_expression'; p = p.parent) {
    if (p.type === 'except_clause' || p.type === 'catch_clause') return true;
  }
  const owner = block.parent?.type === 'else_clause' ? block.parent.parent : block.parent;
  if (owner?.type !== 'if_statement' && owner?.type !== 'elif_clause') return false;
  return block.namedChildren.some((s) => EXITS.includes(s.type) && s.startIndex > stmt.startIndex);
}

function check(ctx: CheckContext, releases: Release[]): void {
  const cache = new Map<number, Map<string, SyntaxNode[]>>();
  releases = releases.filter((r) => !errorPath(r.stmt));
  // Releases of one block, in order: only a run in one block has an order the author wrote down.
  const byBlock = new Map<number, Release[]>();
  for (const r of releases) {
    const block = r.stmt.parent;
    if (!block) continue;
    const list = byBlock.get(block.id) ?? [];
    list.push(r);
    byBlock.set(block.id, list);
  }
  for (const list of byBlock.values()) {
    list.sort((x, y) => x.at.startIndex - y.at.startIndex);
    let i = 0;
    while (i + 1 < list.length) {
      const a = list[i];
      const b = list[i + 1];
      const fnNode = hostFunctionOf(a.stmt);
      const body = fnNode?.childForFieldName('body');
      const fifo =
        a.key !== b.key &&
        a.alloc.startIndex < b.alloc.startIndex &&
        // The lifetimes overlap: B was allocated while A was still live.
        b.alloc.endIndex <= a.stmt.startIndex &&
        a.stream === b.stream &&
        !!body &&
        // B is not needed between the two releases, so it could be released first.
        !usedBetween(body, b.key, a.at, b.at, cache);
      if (!fifo) {
        i++;
        continue;
      }
      // Three temporaries released a, b, c are one finding: the fix is one reversed run, not two swaps.
      let j = i + 1;
      while (j + 1 < list.length) {
        const c = list[j + 1];
        const prev = list[j];
        if (c.key === prev.key || prev.alloc.startIndex >= c.alloc.startIndex || c.alloc.endIndex > a.stmt.startIndex || c.stream !== a.stream || usedBetween(body!, c.key, a.at, c.at, cache)) break;
        j++;
      }
      const chain = list.slice(i, j + 1);
      let replace: FixSpec['replace'] | undefined;
      if (chain.length === 2) {
        if (a.stmt.id === b.stmt.id) replace = swapTargetsFix(ctx, a.stmt);
        else if (nextStatement(a.stmt)?.id === b.stmt.id) replace = swapFix(ctx, a.stmt, b.stmt);
      }
      const names = chain.map((r) => r.key);
      ctx.report({
        node: a.stmt.id === b.stmt.id ? a.stmt : a.at,
        messageId: 'fifo',
        data: { order: names.join(' → '), lifo: [...names].reverse().join(' → '), code: a.stmt.text.replace(/\s+/g, ' ').slice(0, 60) },
        fix: { description: `${FIX_TEXT} Release ${[...names].reverse().map((n) => `\`${n}\``).join(', then ')}.`, replace },
      });
      i = j + 1;
    }
  }
}

export default defineCheck({
  id: 'memory/fifo-deallocation',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'low',
  status: 'retired',
  languages: ['python', 'cuda'],
  citation: '003 §1.6 Fragmentation Avoidance ("Allocations freed in LIFO order where possible (pool coalescing works best)")',
  summary: 'Temporaries released explicitly in allocation (FIFO) order rather than reverse (LIFO) order.',
  why: 'Pool sub-allocations cost about 1 µs (' + POOL + ') only while the pool stays unfragmented; freeing the last-allocated block first lets it coalesce with the free space behind it, while FIFO frees leave holes below live blocks that later requests must fit around (003 §1.1, §1.6).',
  messages: {
    fifo: 'Temporaries are released in allocation (FIFO) order ({{order}}) at `{{code}}`; release in reverse (LIFO) order ({{lifo}}) where possible so the pool can coalesce.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const releases = ctx.source.language === 'cuda' ? cudaReleases(ctx) : ctx.source.language === 'python' ? pythonReleases(ctx) : [];
        if (releases.length < 2) return;
        check(ctx, releases);
      },
    };
  },
});

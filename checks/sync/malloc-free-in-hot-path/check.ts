import { oneLine } from '../../../src/analysis/syntax.js';
import { cudaModel, type ApiCall, type CudaModel } from '../../../src/analysis/cuda.js';
import { onceGuarded, pySetupOnceCall, setupOnceCall } from '../../../src/analysis/once.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { allocatingTypes, constructionsOf } from '../../../src/analysis/raii.js';
import { bufferUsedOnlyOnStream, soleStreamOf, streamFacts } from '../../../src/analysis/streams.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { MALLOC_SHORT, MALLOC_VS_POOL } from '../../../src/config/costs.js';


const JUDGMENT = 'Allocate from a pool instead: `cudaMallocAsync(&p, n, stream)` … `cudaFreeAsync(p, stream)` (stream-ordered; set the pool release threshold to UINT64_MAX so memory persists across syncs), or allocate once outside the loop and reuse the buffer.';
const PY_JUDGMENT = 'Allocate from the CuPy pool (`runtime.allocate(...)`, `cp.empty(...)`, `cp.cuda.alloc(nbytes)`), or allocate once outside the loop and reuse the buffer.';

/** `&p`, `(void**)&p`, `reinterpret_cast<void**>(&p)` → `p`. */
function outPointer(arg: SyntaxNode | undefined): string | null {
  if (!arg) return null;
  const addr = [arg, ...arg.descendantsOfType('pointer_expression')].find((n) => n.type === 'pointer_expression' && n.children[0]?.text === '&');
  const target = addr?.childForFieldName('argument');
  return target?.type === 'identifier' ? target.text : null;
}

/** The source line of `node` with `node` itself replaced by `text` (plus further same-line edits). */
function lineWith(ctx: CheckContext, edits: Array<{ node: SyntaxNode; text: string }>): string {
  const line = ctx.linesOf(edits[0].node);
  let out = line;
  for (const e of [...edits].sort((a, b) => b.node.startPosition.column - a.node.startPosition.column)) {
    const col = e.node.startPosition.column;
    out = out.slice(0, col) + e.text + out.slice(col + e.node.text.length);
  }
  return out;
}

/**
 * Catalog rewrite, `safe-one-line` only as specified: `cudaMalloc(&p, n)` in a function that has a
 * stream and a matching `cudaFree(p)` becomes `cudaMallocAsync(&p, n, stream)` / `cudaFreeAsync(p, stream)`.
 * "Has a stream" is made strict: every stream-ordered operation of the function runs on that one
 * stream and every kernel or call that takes `p` runs on it too, so stream order alone keeps the
 * allocation, its uses and the free in sequence.
 */
function asyncFixes(ctx: CheckContext, m: CudaModel, hits: ApiCall[]): Map<number, FixSpec> {
  const fixes = new Map<number, FixSpec>();
  const facts = ctx.get(streamFacts);
  const single = (c: ApiCall) => c.node.startPosition.row === c.node.endPosition.row;
  const pairable = m.calls.filter((c) => /^(::)?cudaMalloc$|^(::)?cudaFree$/.test(c.path));
  for (const mal of hits) {
    if (mal.path.replace(/^::/, '') !== 'cudaMalloc' || mal.args.length !== 2 || !single(mal)) continue;
    const ptr = outPointer(mal.args[0]);
    const fn = m.functionOf(mal.node);
    if (!ptr || !fn) continue;
    const sameFn = (c: ApiCall) => fn.node.startIndex <= c.node.startIndex && c.node.endIndex <= fn.node.endIndex && m.functionOf(c.node)?.node.id === fn.node.id;
    const mallocs = pairable.filter((c) => c.name === 'cudaMalloc' && sameFn(c) && outPointer(c.args[0]) === ptr);
    const frees = pairable.filter((c) => c.name === 'cudaFree' && c.args.length === 1 && c.args[0].text.trim() === ptr && sameFn(c));
    if (mallocs.length !== 1 || frees.length !== 1) continue;
    const free = frees[0];
    if (!hits.includes(free) || !single(free)) continue;
    const stream = soleStreamOf(facts, m, fn.node);
    if (!stream || !bufferUsedOnlyOnStream(m, fn.node, ptr, stream, [mal.node, free.node])) continue;
    const mText = `cudaMallocAsync(${mal.args[0].text}, ${mal.args[1].text}, ${stream})`;
    const fText = `cudaFreeAsync(${ptr}, ${stream})`;
    const description = `Stream-ordered allocation on \`${stream}\`: \`${mText}\` … \`${fText}\`.`;
    if (mal.node.startPosition.row === free.node.startPosition.row) {
      fixes.set(mal.node.id, { description, replace: { from: mal.node, text: lineWith(ctx, [{ node: mal.node, text: mText }, { node: free.node, text: fText }]) } });
      fixes.set(free.node.id, { description });
    } else {
      fixes.set(mal.node.id, { description, replace: { from: mal.node, text: lineWith(ctx, [{ node: mal.node, text: mText }]) } });
      fixes.set(free.node.id, { description, replace: { from: free.node, text: lineWith(ctx, [{ node: free.node, text: fText }]) } });
    }
  }
  return fixes;
}

/**
 * `cudaFree(tmp)` at the end of a function that takes (or fetches) a stream, after it queued work there:
 * the free waits for the whole device to drain, so the caller, which goes on queuing on that stream,
 * loses its pipeline even though no GPU work follows in this function. Not after a host sync of that
 * work (nothing is left in flight), nor in setup and teardown.
 */
function freeDrainsStream(m: CudaModel, facts: ReturnType<typeof streamFacts.compute>, ctx: CheckContext, c: ApiCall): boolean {
  if (!/Free/.test(c.name) || m.debugGated(c.node) || onceGuarded(c.node)) return false;
  const fn = m.functionOf(c.node);
  if (!fn || !fn.isHost || ctx.config.setupFunctions.test(fn.name) || !fn.node.childForFieldName('type')) return false;
  const contract = m.streamContract(fn);
  if (contract !== 'param' && contract !== 'local') return false;
  const inFn = (n: SyntaxNode) => m.functionOf(n)?.node.id === fn.node.id && n.endIndex <= c.node.startIndex;
  const before = [...m.launches.map((l) => l.node), ...m.calls.filter((x) => m.isGpuOp(x.node)).map((x) => x.node)].filter(inFn);
  if (!before.length) return false;
  const last = Math.max(...before.map((n) => n.endIndex));
  return ![...facts.syncs, ...facts.polls].some((y) => inFn(y.node) && y.node.startIndex >= last);
}

function checkCuda(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const vocab = ctx.config.vocab;
  const hot = (n: SyntaxNode) => m.hotPath(n) && !m.debugGated(n) && !onceGuarded(n);
  // Setup/teardown loops and allocations hoisted out of a driver loop run once per buffer: they are
  // cold raw allocations, memory/raw-cuda-malloc's finding.
  const facts = ctx.get(streamFacts);
  const hits = m.callsMatching(vocab.alloc_calls).filter((c) => (hot(c.node) || freeDrainsStream(m, facts, ctx, c)) && !setupOnceCall(m, c, ctx.config));
  const fixes = asyncFixes(ctx, m, hits);
  for (const c of hits) {
    ctx.report({ node: c.node, messageId: 'raw', data: { call: oneLine(c.node.text) }, fix: fixes.get(c.node.id) ?? { description: JUDGMENT } });
  }
  // RAII wrappers: constructing one runs its constructor's cudaMalloc (and, at scope exit, its cudaFree).
  const wrappers = allocatingTypes(m, vocab.alloc_calls);
  const types = new Set([...wrappers.keys(), ...vocab.raw_alloc_types]);
  for (const k of constructionsOf(m, types)) {
    const via = wrappers.get(k.type);
    // `thrust::device_vector<T, Alloc>`: an explicit allocator (rmm, a caching allocator) replaces cudaMalloc.
    if (!via && k.templateArgs > 1) continue;
    if (!hot(k.node)) continue;
    ctx.report({
      node: k.node,
      messageId: 'wrapper',
      data: { code: oneLine(k.node.text), api: via ? via.name : 'cudaMalloc', owner: via ? `the ${k.type} constructor` : `${k.type}'s default allocator` },
      fix: { description: `Construct the buffer once outside the loop and reuse it, or give ${k.type} a pool-backed (stream-ordered) allocator.` },
    });
  }
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const vocab = ctx.config.vocab;
  for (const call of ctx.source.root.descendantsOfType('call')) {
    if (!m.callMatches(call, vocab.alloc_calls)) continue;
    if (!m.hotPath(call) || m.debugGated(call) || onceGuarded(call)) continue;
    if (pySetupOnceCall(m, call, ctx.config)) continue;
    ctx.report({ node: call, messageId: 'raw', data: { call: oneLine(call.text) }, fix: { description: PY_JUDGMENT } });
  }
}

export default defineCheck({
  id: 'sync/malloc-free-in-hot-path',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'python'],
  citation: '003 §8.1 Implicit Synchronization; 003 §2.4 (cudaMalloc/cudaFree device-wide sync); 003 §1.1 Pool Allocation vs Direct CUDA Allocation; 003 §9 Pass 2 bullet 4',
  summary: 'Raw cudaMalloc/cudaFree (or a buffer wrapper that calls them) in a loop or hot function.',
  why: 'cudaMalloc/cudaFree synchronize the whole device and cost ' + MALLOC_VS_POOL + ' (the seed: ~100–1,000 µs against < 1 µs, ~1,000×; 2–5× end-to-end in the RAPIDS benchmarks) (003 §1.1, §2.4).',
  messages: {
    raw: 'Raw `{{call}}` in a hot path: each call synchronizes the whole device and costs ' + MALLOC_SHORT + '; use the pool.',
    wrapper: '`{{code}}` calls {{api}} (through {{owner}}) in a hot path: each call synchronizes the whole device and costs ' + MALLOC_SHORT + '; use the pool.',
  },
  fix: 'safe',
  supersedes: ['memory/raw-cuda-malloc'],
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'cuda') checkCuda(ctx);
        else if (ctx.source.language === 'python') checkPython(ctx);
      },
    };
  },
});

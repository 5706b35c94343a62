import { cudaModel } from '../../../src/analysis/cuda.js';
import { mentionNodes, mentions, pyCallOf, pyReferenceOf } from '../../../src/analysis/mentions.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { calleePath, lastName, matchesVocab, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';


const CU_FIX =
  'At pool setup: `cudaMemPool_t pool; cudaDeviceGetDefaultMemPool(&pool, dev); uint64_t keep = UINT64_MAX; cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);` (for a pool from `cudaMemPoolCreate`, set it on that pool). Keep the default only when other processes share the GPU.';
const PY_FIX =
  'At pool setup: `err, pool = cudart.cudaDeviceGetDefaultMemPool(dev)`, then `cudart.cudaMemPoolSetAttribute(pool, cudart.cudaMemPoolAttr.cudaMemPoolAttrReleaseThreshold, cudart.cuuint64_t(2**64 - 1))`; with CuPy, install `cp.cuda.MemoryAsyncPool()` (it raises the threshold) instead of bare `malloc_async`. Keep the default only when other processes share the GPU.';

/** `cudaMallocFromPoolAsync(&p, n, pool, s)` on a pool this file neither creates nor fetches: its owner configures it. */
const POOL_HANDLE = /(GetDefaultMemPool|GetMemPool|MemPoolCreate)$/;
const FROM_POOL = /FromPool/;

/**
 * The file sets a release threshold: a call (not a getter) that names `cudaMemPoolAttrReleaseThreshold`,
 * takes `release_threshold=` (RMM), or is itself a threshold setter (Warp).
 */
function configured(ctx: CheckContext): boolean {
  const names = ctx.config.vocab.release_threshold_settings;
  for (const n of mentionNodes(ctx.source, names)) {
    if (!/identifier$/.test(n.type)) continue;
    // The nearest call around the name: the setter it is passed to, or the setter it names.
    let call: SyntaxNode | null = n.parent;
    while (call && call.type !== 'call' && call.type !== 'call_expression' && !/statement|definition|block|module|translation_unit/.test(call.type)) call = call.parent;
    if (call?.type !== 'call' && call?.type !== 'call_expression') continue;
    if (!/Get/.test(lastName(calleePath(call.childForFieldName('function'))) ?? '')) return true;
  }
  return false;
}

/** A `# shared GPU` / `// multi-process` comment, or a mempool exported to other processes (IPC). */
function sharedGpu(ctx: CheckContext, calls: string[]): boolean {
  const text = ctx.source.text;
  for (const w of ctx.config.vocab.shared_gpu_markers) {
    const re = new RegExp(`(^|[^a-z])${w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([^a-z]|$)`, 'gi');
    for (let k = re.exec(text); k; k = re.exec(text)) {
      if (ctx.source.root.descendantForIndex(k.index + k[1].length)?.type === 'comment') return true;
    }
  }
  return calls.some((p) => matchesVocab(p, ctx.config.vocab.shared_pool_calls));
}

function checkCuda(ctx: CheckContext): SyntaxNode | null {
  const m = ctx.get(cudaModel);
  const vocab = ctx.config.vocab;
  const ownsPool = m.callsMatching(vocab.pool_config_calls).some((c) => POOL_HANDLE.test(c.name));
  const hot = m
    .callsMatching(vocab.async_alloc_calls)
    .filter((c) => !m.inDeviceCode(c.node) && !m.debugGated(c.node) && m.hotPath(c.node, { contract: false }) && (ownsPool || !FROM_POOL.test(c.name)));
  if (!hot.length || configured(ctx) || sharedGpu(ctx, m.calls.map((c) => c.path))) return null;
  return hot[0].node;
}

function checkPython(ctx: CheckContext): SyntaxNode | null {
  const m = ctx.get(pythonModel);
  const vocab = ctx.config.vocab;
  const matching = (v: readonly string[]) =>
    mentionNodes(ctx.source, v)
      .map((n) => {
        const ref = pyReferenceOf(n);
        return ref && pyCallOf(ref);
      })
      .filter((c): c is SyntaxNode => !!c && m.callMatches(c, v));
  const ownsPool = matching(vocab.pool_config_calls).some((c) => POOL_HANDLE.test(lastName(m.callPath(c)) ?? ''));
  const live = (n: SyntaxNode) => !m.debugGated(n) && m.hotPath(n);
  const direct = matching(vocab.async_alloc_calls).filter((c) => live(c) && (ownsPool || !FROM_POOL.test(m.callPath(c) ?? '')));
  // `set_allocator(cp.cuda.malloc_async)`: every CuPy allocation goes to the device's current mempool.
  const installs = matching(vocab.allocator_hooks).filter((c) =>
    (c.childForFieldName('arguments')?.descendantsOfType(['identifier', 'attribute']) ?? []).some((r) => r.parent?.type !== 'attribute' && m.pathMatches(r, vocab.async_alloc_calls)),
  );
  const site = installs.length && [...m.allocs, ...m.gpuOps.map((o) => o.node)].some((n) => live(n)) ? installs[0] : direct[0];
  if (!site) return null;
  // CuPy's MemoryAsyncPool (CuPy >= 10) sets the current pool's threshold to its limit, UINT64_MAX by default.
  if (configured(ctx) || matching(vocab.pool_alloc_calls).some((c) => lastName(m.callPath(c)) === 'MemoryAsyncPool')) return null;
  if (sharedGpu(ctx, matching(vocab.shared_pool_calls).map((c) => m.callPath(c) ?? ''))) return null;
  return site;
}

export default defineCheck({
  id: 'memory/async-pool-release-threshold',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  citation: '003 §1.4 Async Memory Pools (cudaMallocAsync) (critical configuration: release threshold); 003 §10 (row "cudaMallocAsync release threshold")',
  summary: 'Stream-ordered allocation (cudaMallocAsync) on a hot path in a file that never raises the mempool release threshold.',
  why: 'With the default release threshold of 0 the pool hands all unused memory back to the OS at every stream, event or device synchronization, so the next iteration pays the OS allocation again instead of a sub-microsecond pool reuse; set UINT64_MAX for single-process exclusive GPU use (003 §1.4, §10).',
  messages: {
    threshold: 'Stream-ordered pool behind `{{call}}` keeps the default release threshold 0, so all unused pool memory returns to the OS at every synchronization; set cudaMemPoolAttrReleaseThreshold to UINT64_MAX for exclusive-GPU iterative work.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const lang = ctx.source.language;
        // Whether the threshold is set is a property of the whole file; a hunk cannot show its absence.
        if ((lang !== 'cuda' && lang !== 'python') || !ctx.source.wholeFile) return;
        if (!mentions(ctx.source, ctx.config.vocab.async_alloc_calls)) return;
        const site = lang === 'cuda' ? checkCuda(ctx) : checkPython(ctx);
        if (site) ctx.report({ node: site, messageId: 'threshold', data: { call: oneLine(site.text) }, fix: { description: lang === 'cuda' ? CU_FIX : PY_FIX } });
      },
    };
  },
});

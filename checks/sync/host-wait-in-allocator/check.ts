import { cudaModel } from '../../../src/analysis/cuda.js';
import type { ApiCall, CudaFunction, CudaModel } from '../../../src/analysis/cuda.js';
import { contains, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const ID = 'sync/host-wait-in-allocator';
/**
 * Entry points of an allocator or memory resource: `allocate` / `deallocate` and their `do_` and `_async`
 * forms (RMM, CCCL memory resources), `malloc` / `free` / `alloc` / `dealloc` members of a project allocator.
 * The `_sync` forms (`allocate_sync`) promise the host a valid block: their wait is the contract.
 */
const ENTRY = /^(do_)?(allocate|deallocate|alloc|dealloc|malloc|free|release_block|return_block)(_async|Async)?$/;
/** Stream-ordered allocation and free: the block is valid in stream order, so no host wait is needed. */
const STREAM_ORDERED = /^(cudaMallocAsync|cudaFreeAsync|cudaMallocFromPoolAsync|cuMemAllocAsync|cuMemFreeAsync|cuMemAllocFromPoolAsync)$/;
/** Host waits on a stream or the device (event waits are how a pool steals blocks from another stream). */
const HOST_WAIT_CALL = /^(cudaStreamSynchronize|cuStreamSynchronize|cudaDeviceSynchronize|cuCtxSynchronize)$/;
/** `stream.sync()`, `stream.synchronize()`, `__stream.wait()` on a stream object (`cuda::stream_ref`, `rmm::cuda_stream_view`). */
const WAIT_METHOD = /^(sync|synchronize|wait)$/;

function hostWaits(m: CudaModel, fn: CudaFunction): ApiCall[] {
  const streams = m.streamNames(fn);
  return m.calls.filter((c) => {
    if (!contains(fn.body!, c.node)) return false;
    if (HOST_WAIT_CALL.test(c.name)) return true;
    const callee = c.node.childForFieldName('function');
    if (!WAIT_METHOD.test(c.name) || callee?.type !== 'field_expression' || c.args.length) return false;
    const obj = callee.childForFieldName('argument');
    return !!obj && (streams.has(obj.text) || /stream/i.test(obj.text));
  });
}

export default defineCheck({
  id: ID,
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda'],
  citation: '003 §1.1 (pool allocation vs direct CUDA allocation); 003 §2.2 (stream-ordered allocation); 003 §2.4 (cudaStreamSynchronize blocks the host)',
  summary: 'A stream-ordered allocator entry point (allocate / deallocate taking a stream, or one that calls cudaMallocAsync / cudaFreeAsync) blocks the host with a stream or device sync on every call.',
  why: 'A pool or stream-ordered allocator exists to make allocation cost ~1 µs and keep it off the host\'s critical path: the block is valid in stream order, and a free is safe as soon as it is queued on the stream that last used the block. A `cudaStreamSynchronize` (or `stream.sync()`, `cudaDeviceSynchronize`) inside `allocate` / `deallocate` turns every allocation and every free into a full drain of the stream: the host waits for all queued kernels before it can queue the next one, once per temporary buffer, so the GPU idles between launches.',
  messages: {
    hostWait:
      '`{{call}}` in allocator entry point `{{fn}}`{{why}} blocks the host until the stream drains on every {{op}}: a stream-ordered block needs no host wait (it is valid, and reusable, in stream order). Drop the sync, or keep the block on a per-stream free list and reuse it only on that stream (or after an event recorded on it).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language !== 'cuda') return;
        const m = ctx.get(cudaModel);
        if (m.testOrBench) return;
        for (const fn of m.functions) {
          if (!fn.isHost || !fn.body || fn.isKernel || fn.isDevice || !ENTRY.test(fn.name)) continue;
          const ordered = m.calls.find((c) => contains(fn.body!, c.node) && STREAM_ORDERED.test(c.name));
          const takesStream = m.streamContract(fn) === 'param';
          if (!ordered && !takesStream) continue;
          for (const w of hostWaits(m, fn)) {
            if (m.debugGated(w.node)) continue;
            const why = ordered ? ` (after \`${ordered.name}\`)` : ' (which takes the caller\'s stream)';
            const op = /de|free|release|return/i.test(fn.name) ? 'free' : 'allocation';
            ctx.report({ node: w.node, messageId: 'hostWait', data: { call: quote(w.node), fn: fn.name, why, op } });
          }
        }
      },
    };
  },
});

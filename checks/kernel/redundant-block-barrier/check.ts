import { barrierIntervals } from '../../../src/analysis/barriers.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { smemFacts } from '../../../src/analysis/smem.js';
import { calleePath } from '../../../src/analysis/syntax.js';
import { uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';

/**
 * A `__syncthreads()` that orders no exchange between the threads of the block: between it and the
 * barrier before it (or the kernel's start), or between it and the barrier after it (or the kernel's
 * end), no thread touches shared or global memory (src/analysis/barriers.ts proves it on every path).
 */
export default defineCheck({
  id: 'kernel/redundant-block-barrier',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  status: 'preview',
  citation: 'derived from real fixes (corpus bnb-01, cuml-11, cuml-12, fa-02, fa-03); 004 §H1.6 Table 8-1 (barrier stalls)',
  summary: 'Block barrier with no memory access between it and its neighbour barrier (or the kernel start or end): it orders nothing.',
  why: 'A block barrier makes every warp of the block wait for the slowest one; a barrier orders memory accesses of different threads only when some access lies between it and its neighbour barrier, so one with an empty interval on a side costs a block-wide stall per pass and protects nothing (004 §H1.6).',
  messages: {
    redundant: '`__syncthreads()` orders no memory exchange: no thread touches shared or global memory {{span}}, so every warp of the block waits here for nothing.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        const smem = ctx.get(smemFacts);
        const lineOf = (n: { startPosition: { row: number; column: number } }) => ctx.source.toFile(n.startPosition.row, n.startPosition.column)?.line ?? null;
        for (const c of ctx.source.root.descendantsOfType('call_expression')) {
          if (calleePath(c.childForFieldName('function')) !== '__syncthreads') continue;
          const f = m.functionOf(c);
          if (!f || !(f.isKernel || f.isDevice)) continue;
          // A barrier not every thread reaches is another rule's hazard; only whole-block barriers here.
          if (u.divergentBranchesAround(c, 'block').length) continue;
          const iv = barrierIntervals(m, smem, f, c);
          if (!iv) continue;
          // Two barriers with nothing between them: report the second one only (its `before` side), so that
          // deleting what is reported never leaves the pair without a barrier. An empty `after` side counts when
          // it runs to the kernel's end, to this barrier's next pass, or to a barrier inside a called helper.
          const after = iv.after && (!iv.after.other || iv.after.other.id === c.id || m.functionOf(iv.after.other)?.node.id !== f.node.id) ? iv.after : null;
          const got = iv.before ?? after;
          if (!got) continue;
          const o = got.other;
          const where = !o ? (got.side === 'before' ? 'since the kernel started' : 'before the kernel ends') : o.id === c.id ? `between one pass of this loop and the ${got.side === 'before' ? 'previous' : 'next'}` : `${got.side === 'before' ? 'since' : 'until'} the barrier on line ${lineOf(o) ?? '?'}`;
          ctx.report({ node: c, messageId: 'redundant', data: { span: where }, fix: { description: 'Delete the barrier, or move it to where a shared-memory write of one thread is read by another.' } });
        }
      },
    };
  },
});

import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

export default defineCheck({
  id: 'luisa/one-warp-block',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §5.7 Empirical Benchmark Results (warp-intrinsic reduction: 32 threads 2.1× slower than 64; VK streaming at 32 threads −39 %; divergent loop on DX at 32 threads 1.77× slower); 000 §3.8 Block-Size Scaling; 000 §7 rule 14',
  summary: 'Kernel block of exactly one 32-thread warp.',
  why: 'In the 000 §5.7 block-size sweep a 1-warp block was the outlier: the warp-intrinsic reduction ran 2.1× slower at 32 threads than at 64, Vulkan streaming lost 39 % and the divergent loop on DX was 1.77× slower.',
  messages: {
    oneWarp: '`{{code}}`: block of a single warp (32 threads): measured 1.8–2.1× slower than 64+ threads; pack 2–4 warps per block (one warp per item): `{{suggest}}`{{mapping}}.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        // The block-size sweeps of a benchmark or test try 32 on purpose.
        if (m.testOrBench) return;
        for (const b of m.bodies) {
          const bs = b.blockSize;
          if (!bs || bs.product !== 32 || b.kind === 'Callable') continue;
          // A pinned sub-32 warp (set_warp_size(16u)) makes a 32-thread block hold several warps.
          // So does a width chosen at run time (`set_warp_size(static_cast<uint8_t>(width))` on the SIMD backend).
          if (b.warpSize && (b.warpSize.value == null || b.warpSize.value < 32)) continue;
          // Every launch is a single block (`dispatch(32u)`): the problem is one warp wide, not the block.
          const launches = m.dispatches.filter((d) => d.kernel?.node.id === b.node.id);
          const threads = (args: readonly SyntaxNode[]): number | null => args.reduce<number | null>((acc, a) => { const v = m.constValue(a); return acc === null || v === null ? null : acc * v; }, 1);
          if (launches.length && launches.every((d) => { const t = threads(d.args); return t !== null && t <= 32; })) continue;
          // Lane-indexed Shared<T> still does the cross-lane work: luisa/lane-local-shared-to-warp comes first (000 §3.8).
          if (b.shared.some((s) => m.sharedAccesses(s).some((a) => m.laneDependent(a.index)))) continue;
          const twoD = (b.dims ?? 1) >= 2 || bs.dims[1] !== 1;
          const warpPerItem = m.callsIn(b.body, /^warp_/).length > 0;
          ctx.report({
            node: bs.node,
            messageId: 'oneWarp',
            data: {
              code: quote(bs.node),
              suggest: twoD ? 'set_block_size(16u, 8u, 1u)' : 'set_block_size(128u, 1u, 1u)',
              mapping: warpPerItem && !twoD ? ' with `item = block_id().x * 4u + thread_x() / warp_lane_count()` and `set_warp_size(32u)` pinned (000 §3.8)' : ', keeping `dispatch_id()` indexing',
            },
            fix: { description: 'Raise the block to 64–256 threads; for warp-per-item kernels map `item = block_id().x * warps_per_block + thread_x() / warp_lane_count()`, pin `set_warp_size`, and keep the `$if (item < n)` tail guard. The host dispatch is unchanged.' },
          });
        }
      },
    };
  },
});

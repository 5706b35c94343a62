import { cudaModel } from '../../../src/analysis/cuda.js';
import { quote } from '../../../src/analysis/syntax.js';
import type { GpuSpec } from '../../../src/config/gpus.js';
import { defineCheck } from '../../../src/engine/check.js';

/** Registers per thread left when M blocks of T threads must be resident: the file is split per warp in 256-register units. */
function regCap(gpu: GpuSpec, T: number, M: number): number {
  const warps = Math.ceil(T / gpu.warp) * M;
  const perWarp = Math.floor(gpu.regsPerSm / warps / gpu.regAllocGranularityPerWarp) * gpu.regAllocGranularityPerWarp;
  return Math.min(gpu.maxRegsPerThread, Math.floor(perWarp / gpu.warp));
}

export default defineCheck({
  id: 'kernel/launch-bounds-overconstrained',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation:
    '004 §H2.3 Compiler Hints to Optimize Occupancy; 004 §H4.4 Profiling and Mitigating Register Pressure ("relax your launch bounds … reduce the required MinBlocksPerSM or increase MaxThreadsPerBlock"); 003 §0 Target Hardware Reference Card',
  summary: '__launch_bounds__(T, M) whose T·M resident threads (or M blocks) exceed what a configured target SM can hold.',
  why: 'An SM holds at most 2,048 threads on CC 8.0/9.0 but 1,536 on CC 8.6/8.9 (003 §0), so 004\'s `__launch_bounds__(256, 8)` (2,048 threads, a 32-register cap) cannot be met on an RTX 3090/4090 and only squeezes registers toward spills (004 §H4.4).',
  messages: {
    threads:
      '__launch_bounds__(T, M) asks for T·M resident threads per SM, more than some target GPUs can hold (or the register cap it implies will force spills): `{{code}}` asks for {{t}} × {{m}} = {{tm}} threads per SM; {{gpu}} holds {{max}} ({{fit}} blocks of {{t}}), and the bound caps registers at {{cap}}/thread on {{capgpu}}.',
    blocks:
      '__launch_bounds__(T, M) asks for more resident blocks per SM than some target GPUs can hold: `{{code}}` asks for {{m}} blocks per SM; {{gpu}} holds at most {{max}} blocks per SM.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const targets = ctx.config.targets;
        if (targets.length === 0) return;
        for (const fn of m.functions) {
          const lb = fn.launchBounds;
          if (!lb?.minBlocks || !lb.maxThreads) continue;
          const T = m.constValue(lb.maxThreads);
          const M = m.constValue(lb.minBlocks);
          if (T === null || M === null || T <= 0 || M <= 0) continue;
          const byThreads = [...targets].sort((a, b) => a.maxThreadsPerSm - b.maxThreadsPerSm)[0];
          const byBlocks = [...targets].sort((a, b) => a.maxBlocksPerSm - b.maxBlocksPerSm)[0];
          const code = quote(lb.node);
          if (T * M > byThreads.maxThreadsPerSm) {
            const capGpu = [...targets].sort((a, b) => b.maxThreadsPerSm - a.maxThreadsPerSm)[0];
            const fit = Math.floor(byThreads.maxThreadsPerSm / T);
            ctx.report({
              node: lb.node,
              messageId: 'threads',
              data: { code, t: T, m: M, tm: T * M, gpu: byThreads.name, max: byThreads.maxThreadsPerSm, fit, cap: regCap(capGpu, T, M), capgpu: capGpu.name },
              fix: { description: `Reduce minBlocks to ${fit} (⌊${byThreads.maxThreadsPerSm}/${T}⌋ for ${byThreads.name}) or drop it, or raise maxThreads if the launches allow it.` },
            });
          } else if (M > byBlocks.maxBlocksPerSm) {
            ctx.report({
              node: lb.node,
              messageId: 'blocks',
              data: { code, m: M, gpu: byBlocks.name, max: byBlocks.maxBlocksPerSm },
              fix: { description: `Reduce minBlocks to ${byBlocks.maxBlocksPerSm} or fewer (${byBlocks.name}'s per-SM block limit).` },
            });
          }
        }
      },
    };
  },
});

import { warpsByRegisters } from '../../../src/analysis/occupancy.js';
import type { GpuSpec } from '../../../src/config/gpus.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const FLAG = /^-{1,2}maxrregcount(?:[=\s]\s*(\d+))?$/;
/** A tuning note next to the flag is the catalog's "comment with profiling evidence". */
const EVIDENCE = /profil|tuned|ncu|nsight|measured|benchmark/i;

/** Largest register count per thread that still gives 100 % theoretical occupancy (catalog §5.3: 32 on CC 8.0/9.0, 40 on 8.6/8.9). */
function fullOccupancyRegs(gpu: GpuSpec): number {
  let r = 1;
  while (r < gpu.maxRegsPerThread && warpsByRegisters(r + 1, gpu) >= gpu.maxWarpsPerSm) r++;
  return r;
}

function literal(s: SyntaxNode): string {
  return s.namedChildren.filter((c) => c.type === 'string_content').map((c) => c.text).join('');
}

export default defineCheck({
  id: 'kernel/maxrregcount-no-occupancy-gain',
  pass: 3,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation:
    '004 §H2.2 Techniques for Occupancy Tuning (Reduce per-thread register usage: "cap too aggressively → spill … find the smallest register limit that maximizes occupancy without excessive spilling"); 003 §8.6 Register Pressure (tables); 003 §7.4 Useful NVRTC Compiler Flags (`--maxrregcount=N`)',
  summary: 'An NVRTC/nvcc --maxrregcount below the register count that already gives 100 % occupancy on every target: it only adds spills.',
  why: '32 registers/thread already give 64 warps (100 %) on CC 8.0/9.0 and 40 give 48 warps (100 %) on CC 8.6/8.9 (003 §8.6, 256-register allocation per warp), so a lower cap cannot raise occupancy and only forces spills to local memory (004 §H2.2).',
  messages: {
    low: '--maxrregcount={{n}} is below the point where occupancy stops improving ({{full}} regs already give 100% on {{gpu}}); it only adds spills: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const targets = ctx.config.targets;
        if (targets.length === 0) return;
        // The cap must stay below full occupancy on every target to be pure loss: take the smallest onset.
        const onsets = targets.map((g) => ({ g, full: fullOccupancyRegs(g) })).sort((a, b) => a.full - b.full);
        const { g: gpu, full } = onsets[0];
        const lines = ctx.source.text.split('\n');
        for (const s of ctx.source.root.descendantsOfType('string')) {
          const m = FLAG.exec(literal(s).trim());
          if (!m) continue;
          let n = m[1] ? Number(m[1]) : null;
          if (n === null) {
            // `"-maxrregcount", "24"`: the count is the next element of the options sequence.
            const next = s.nextNamedSibling;
            n = next?.type === 'string' ? Number(literal(next).trim()) : next?.type === 'integer' ? Number(next.text) : NaN;
          }
          if (!Number.isFinite(n) || n === null || n <= 0 || n >= full) continue;
          const row = s.startPosition.row;
          const near = lines.slice(Math.max(0, row - 3), row + 2).filter((l) => l.includes('#')).map((l) => l.slice(l.indexOf('#')));
          if (near.some((c) => EVIDENCE.test(c))) continue;
          ctx.report({
            node: s,
            messageId: 'low',
            data: { n, full, gpu: gpu.name, code: s.text },
            fix: { description: `Remove the flag or raise it to ${full} (100% occupancy on ${gpu.name} already); prefer per-kernel __launch_bounds__.` },
          });
        }
      },
    };
  },
});

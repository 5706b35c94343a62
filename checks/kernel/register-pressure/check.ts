import { cudaModel } from '../../../src/analysis/cuda.js';
import { pct, warpsByRegisters } from '../../../src/analysis/occupancy.js';
import { defineCheck } from '../../../src/engine/check.js';

/** Catalog static trigger: ≥ 16 double locals in one kernel. */
const MIN_DOUBLES = 16;
/** A tuning note near the kernel or its bounds is the catalog's "profiled at lower occupancy" evidence. */
const EVIDENCE = /profil|tuned|ncu|nsight/i;

export default defineCheck({
  id: 'kernel/register-pressure',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation:
    '003 §8.6 Register Pressure; 003 §3.4 Kernel Fusion Opportunities (register pressure from fusion); 003 §10 (row "Registers per thread (warning)"); 004 §H2.2 (Reduce per-thread register usage); 004 §H4.4 Profiling and Mitigating Register Pressure',
  summary: 'A kernel with 16 or more double locals (each two 32-bit registers): likely past the 43 (consumer) / 64 (datacenter) registers/thread warning lines.',
  why: 'Each double takes two 32-bit registers, and occupancy drops below 100 % past ~43 registers/thread on CC 8.6/8.9 and below 50 % past 64 on CC 8.0/9.0 (003 §8.6, §10; 256-register allocation per warp), which starves latency hiding in memory-bound kernels.',
  messages: {
    doubles:
      'Kernel `{{kernel}}` keeps {{n}} double locals live ({{regs}}+ registers/thread for them alone) → {{occ}} theoretical occupancy on {{gpu}} ({{warps}} warps) at {{regs}} registers, before indices and pointers; occupancy falls below 100% past 43 registers/thread on CC 8.6/8.9 and below 50% past 64 on CC 8.0/9.0 — check `ptxas -v` for the real count and spills.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const targets = ctx.config.targets;
        if (targets.length === 0) return;
        const lines = ctx.source.text.split('\n');
        for (const fn of m.kernels.values()) {
          const body = fn.body;
          if (!fn.isKernel || !body) continue;
          let n = 0;
          for (const d of body.descendantsOfType('declaration')) {
            if (/\b__shared__\b|\bstatic\b/.test(d.text)) continue;
            const type = d.childForFieldName('type')?.text ?? '';
            if (type !== 'double') continue;
            // Local arrays live in local memory (not registers) unless fully unrolled; count scalars only.
            n += d.namedChildren.filter((c) => c.type === 'identifier' || (c.type === 'init_declarator' && c.childForFieldName('declarator')?.type === 'identifier')).length;
          }
          if (n < MIN_DOUBLES) continue;
          const start = fn.node.startPosition.row;
          const near = lines.slice(Math.max(0, start - 4), start + 2).join('\n');
          if (EVIDENCE.test(near)) continue;
          const regs = 2 * n;
          // Report the target that loses the most occupancy at this register count.
          const worst = targets
            .map((g) => ({ g, warps: warpsByRegisters(regs, g) }))
            .sort((a, b) => a.warps / a.g.maxWarpsPerSm - b.warps / b.g.maxWarpsPerSm)[0];
          ctx.report({
            node: fn.node.childForFieldName('declarator') ?? fn.node,
            messageId: 'doubles',
            data: { kernel: fn.name, n, regs, occ: pct(worst.warps / worst.g.maxWarpsPerSm), gpu: worst.g.name, warps: worst.warps },
            fix: { description: 'Split the kernel into smaller device functions, keep cold values in shared memory, use compute_t/float where precision allows, or set __launch_bounds__ after measuring spills (003 §8.6, 004 §H4.4).' },
          });
        }
      },
    };
  },
});

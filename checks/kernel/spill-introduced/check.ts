import { cudaModel } from '../../../src/analysis/cuda.js';
import { spillBytes } from '../../../src/compile/spills.js';
import { defineCheck } from '../../../src/engine/check.js';

/**
 * Reads the compiler's figures only (`--compile`, src/compile/): ptxas' spill stores and loads of
 * the kernel at the head against the base. Without them it reports nothing.
 */
export default defineCheck({
  id: 'kernel/spill-introduced',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §8.6 Register Pressure; 004 §H4.4 Profiling and Mitigating Register Pressure; 004 §H2.2 (Reduce per-thread register usage)',
  summary: 'The change makes nvcc spill registers of a kernel to local memory (ptxas spill stores/loads at the head above the base); needs --compile.',
  why: 'A spilled register lives in local memory, which is device memory behind L1: every spill store and reload is a memory round trip on the kernel\'s critical path, so a change that introduces spills usually costs more than the occupancy it was meant to buy (003 §8.6, 004 §H4.4).',
  messages: {
    spills: 'nvcc spills registers of `{{kernel}}` after this change ({{was}} → {{now}} B of spill stores and loads on {{arch}}): {{evidence}}.',
  },
  fix: 'judgment',
  status: 'preview',
  requires: 'compiler',
  create(ctx) {
    return {
      'source:exit'() {
        const evidence = ctx.config.compileEvidence;
        if (!evidence?.length) return;
        const m = ctx.get(cudaModel);
        for (const fn of m.kernels.values()) {
          const at = ctx.source.toFile(fn.node.startPosition.row, fn.node.startPosition.column);
          if (!at) continue;
          for (const ev of evidence) {
            if (ev.path !== ctx.source.path || ev.line !== at.line || ev.name !== fn.name) continue;
            const now = spillBytes(ev, 'head');
            const was = spillBytes(ev, 'base');
            if (now <= was) continue;
            const worst = ev.arches.reduce((a, b) => ((b.head ? b.head.spillStores + b.head.spillLoads : 0) > (a.head ? a.head.spillStores + a.head.spillLoads : 0) ? b : a));
            ctx.report({
              node: fn.node.childForFieldName('declarator') ?? fn.node,
              messageId: 'spills',
              data: { kernel: fn.name, was, now, arch: worst.arch, evidence: ev.text },
              fix: { description: 'Bring the live state back under the register budget: a smaller unroll or tile, fewer live per-thread arrays, a looser __launch_bounds__ minimum-blocks argument or -maxrregcount; or keep the spills only where a profile shows the occupancy gain pays for them (003 §8.6, 004 §H4.4).' },
            });
          }
        }
      },
    };
  },
});

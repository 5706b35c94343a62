import { cudaModel } from '../../../src/analysis/cuda.js';
import { hasGridStrideLoop, launchConfigs, prod } from '../../../src/analysis/launch-config.js';
import { occupancy } from '../../../src/analysis/occupancy.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

const GLOBAL_INDEX = /^\(?\s*(?:\(\s*\w+\s*\)\s*)?(blockIdx\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*blockIdx\.x)\s*\)?\s*\+\s*threadIdx\.x$|^threadIdx\.x\s*\+\s*\(?\s*(blockIdx\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*blockIdx\.x)\s*\)?$/;
const LOOPS = ['for_statement', 'while_statement', 'do_statement', 'for_range_loop'];
const STATEMENTS = ['expression_statement', 'declaration', 'if_statement', 'return_statement', 'switch_statement'];
/** 003 §3.2 / catalog: above ~20 statements the per-element work amortises the launch on its own. */
const HEAVY_STATEMENTS = 20;
/** Block size assumed for the recommended grid when no constant launch of the kernel is in the file. */
const DEFAULT_BLOCK = 256;

export default defineCheck({
  id: 'kernel/prefer-grid-stride-loop',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §3.2 Grid-Stride Loops vs One-Thread-Per-Element ("preferred for most vibeSpatial kernels")',
  summary: 'Cheap one-thread-per-element kernel (`i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n)`) without a grid-stride loop.',
  why: '003 §3.2 prefers grid-stride loops for most kernels: the grid can be sized once to SM_count × max_blocks_per_SM (003 §10; e.g. 132 × 8 = 1,056 blocks of 256 on H100) whatever n is, amortising launch overhead and avoiding a partial last wave (003 §8.8).',
  messages: {
    perElement:
      'One-thread-per-element kernel `{{name}}` (`{{index}}`, guarded by `{{guard}}`); a grid-stride loop decouples grid size from n, amortizes launch overhead, and avoids wave-quantization tails{{figure}}.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        if (m.testOrBench) return;
        const launches = ctx.get(launchConfigs);
        // Kernel strings in Python: the launches are the host file's (`RawKernel` calls, `runtime.launch`).
        const hostLaunches = ctx.source.parent ? launchConfigs.compute(ctx.source.parent, ctx.config) : [];
        const launched = (fn: { name: string }) => [...launches, ...hostLaunches].filter((l) => l.kernel?.fn === fn || l.kernel?.fn.name === fn.name);
        for (const fn of m.kernels.values()) {
          const body = fn.body;
          if (!body || hasGridStrideLoop(fn)) continue;
          if (LOOPS.some((t) => body.descendantsOfType(t).length > 0)) continue;
          // Cooperative-groups kernels need their exact grid; 2-D/3-D mappings are not a flat element loop.
          if (/\bcg::|cooperative_groups|this_grid\s*\(|\b(blockIdx|threadIdx)\.[yz]\b/.test(body.text)) continue;
          if (STATEMENTS.reduce((s, t) => s + body.descendantsOfType(t).length, 0) > HEAVY_STATEMENTS) continue;
          let index: SyntaxNode | null = null;
          let name = '';
          for (const d of body.descendantsOfType('init_declarator')) {
            const v = d.childForFieldName('value');
            if (v && GLOBAL_INDEX.test(v.text.replace(/\s+/g, ' ').trim())) {
              index = d;
              name = d.childForFieldName('declarator')?.text ?? '';
              break;
            }
          }
          if (!index || !/^\w+$/.test(name)) continue;
          // Exactly one bounds guard on the element index itself: `if (i < n)` or `if (i >= n) return;`.
          const guards = body.descendantsOfType('if_statement').filter((s) => {
            const c = s.childForFieldName('condition')?.text.replace(/[()\s]/g, '') ?? '';
            return new RegExp(`^${esc(name)}<[\\w.]+$|^${esc(name)}>=[\\w.]+$|^[\\w.]+>${esc(name)}$|&&${esc(name)}<|^${esc(name)}<[\\w.]+&&`).test(c);
          });
          if (guards.length !== 1) continue;
          // Warp-per-item / block-per-item: the element index is re-derived (`i / 32`, `i >> 5`) for the work.
          if (new RegExp(`\\b${esc(name)}\\s*(/|>>)\\s*(32|5|warpSize)\\b`).test(body.text)) continue;
          const cond = guards[0]!.childForFieldName('condition')!;
          // Only where the launch is in view: a kernel launched through a helper that sizes the grid from n
          // (`linear_kernel(k, 0, s, n, ...)`, `wp_launch_device(ctx, k, n, ...)`) or from another file gets one
          // thread per element by the project's design, and nothing here shows a grid to change.
          const mine = launched(fn);
          if (!mine.length) continue;
          const own = mine.filter((l) => l.block);
          const B = own.length ? prod(own[0]!.block!) : DEFAULT_BLOCK;
          const gpu = ctx.config.targets[0];
          let figure = '';
          if (gpu) {
            const occ = occupancy(gpu, { threadsPerBlock: B });
            if (occ.blocks > 0) figure = ` (then launch SM_count × blocks/SM: on ${gpu.name}, ${gpu.sms} SMs × ${occ.blocks} resident blocks of ${B} threads = ${gpu.sms * occ.blocks} blocks)`;
          }
          ctx.report({
            node: index,
            messageId: 'perElement',
            data: { name: fn.name, index: index.text, guard: `if ${cond.text}`, figure },
            fix: { description: `for (int ${name} = blockIdx.x * blockDim.x + threadIdx.x; ${name} < n; ${name} += blockDim.x * gridDim.x) { … }, and size the grid as SM_count × blocks/SM.` },
          });
        }
      },
    };
  },
});

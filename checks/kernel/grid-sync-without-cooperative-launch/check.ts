import { gridSyncIn } from '../../../src/analysis/cooperative.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { launchConfigs, prod } from '../../../src/analysis/launch-config.js';
import { occupancy, smallestSmTarget } from '../../../src/analysis/occupancy.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Launch-configuration attributes that make cudaLaunchKernelEx / cuLaunchKernelEx cooperative. */
const COOP_ATTR = /\b(cudaLaunchAttributeCooperative|CU_LAUNCH_ATTRIBUTE_COOPERATIVE)\b/;
/** CuPy launches every kernel of a RawModule/RawKernel built with this flag through cuLaunchCooperativeKernel. */
const CUPY_COOP = /\benable_cooperative_groups\s*=\s*True\b/;
/** A project launcher's cooperative switch (`runtime.launch(..., cooperative=True)`). */
const PY_COOP_KW = /\bcooperative(?:_launch)?\s*=\s*True\b/;

function enclosingFunction(n: SyntaxNode): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition') return p;
  return null;
}

export default defineCheck({
  id: 'kernel/grid-sync-without-cooperative-launch',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation: '003 §3.3 Cooperative Groups ("This requires cudaLaunchCooperativeKernel")',
  summary: 'Kernel with a grid-wide sync launched through an ordinary launch.',
  why: 'A grid-wide sync is only defined when every block is co-resident, which only cudaLaunchCooperativeKernel guarantees (grid ≤ maxActiveBlocksPerMultiprocessor × SM count, e.g. 132 SMs on H100; 003 §3.3); an ordinary launch hangs or fails once blocks wait for blocks that are not yet scheduled.',
  messages: {
    normal:
      'Kernel `{{kernel}}` performs a grid-wide sync (`{{sync}}`) but is launched with a normal {{via}}; grid.sync() requires a cooperative launch{{figure}}: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const text = ctx.source.text;
        const isPy = ctx.source.language === 'python';
        const cm = isPy ? null : ctx.get(cudaModel);
        for (const l of ctx.get(launchConfigs)) {
          if (!l.kernel) continue;
          const sync = gridSyncIn(l.kernel.fn.body);
          if (!sync) continue;
          let via: string;
          if (cm) {
            const launch = cm.launches.find((x) => x.node.id === l.node.id);
            if (!launch || launch.kind === 'cudaLaunchCooperativeKernel') continue;
            if (launch.kind === 'cudaLaunchKernelEx' || /Ex$/.test(l.node.text.split('(')[0])) {
              const fn = enclosingFunction(l.node);
              if (COOP_ATTR.test(fn?.text ?? text)) continue;
            }
            via = launch.kind === 'chevron' ? '<<<>>> launch' : `${launch.kind} call`;
          } else {
            if (/\bcu(da)?LaunchCooperativeKernel\b/.test(l.node.text) || PY_COOP_KW.test(l.node.text)) continue;
            if (CUPY_COOP.test(text)) continue;
            via = /\brun\w*\.launch\s*\(/.test(l.node.text) ? 'runtime.launch' : 'kernel call';
          }
          let figure = '';
          const gpu = smallestSmTarget(ctx.config.targets);
          if (gpu && l.block) {
            const o = occupancy(gpu, { threadsPerBlock: prod(l.block) });
            const cap = o.blocks * gpu.sms;
            const g = l.grid ? prod(l.grid) : null;
            figure = g !== null
              ? ` (grid of ${g} blocks of ${prod(l.block)} threads; on ${gpu.name} at most ${cap} such blocks (${gpu.sms} SMs × ${o.blocks}) can be co-resident, fewer if registers or shared memory limit residency)`
              : ` (blocks of ${prod(l.block)} threads: on ${gpu.name} at most ${cap} of them (${gpu.sms} SMs × ${o.blocks}) can be co-resident)`;
          }
          ctx.report({
            node: l.node,
            messageId: 'normal',
            data: { kernel: l.label, sync, via, figure, code: quote(l.node) },
            fix: { description: 'Launch with cudaLaunchCooperativeKernel (or CuPy enable_cooperative_groups=True) and bound the grid by the occupancy query × SM count, or split the kernel at the grid sync into two launches (count → exclusive_sum → scatter).' },
          });
        }
      },
    };
  },
});

import { hasGridStrideLoop, isCeilDivGrid, launchConfigs, prod, type LaunchConfig } from '../../../src/analysis/launch-config.js';
import { occupancy, pct, waves } from '../../../src/analysis/occupancy.js';
import { quote } from '../../../src/analysis/syntax.js';
import type { GpuSpec } from '../../../src/config/gpus.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Catalog defaults (§3 kernel/wave-quantization): a tail of at most 10 % of a wave, in a grid of fewer than 4 waves. */
const TAIL_FRACTION = 0.1;
const MAX_WAVES = 4;

/** Resident blocks per SM for this launch: the §5.3 formula when the block is constant, else the bound's minBlocks, else 1 (003 §8.8's example). */
function blocksPerSm(gpu: GpuSpec, l: LaunchConfig): { b: number; how: string } {
  const lb = l.kernel?.fn.launchBounds;
  const minBlocks = lb?.minBlocks ? l.kernel!.model.constValue(lb.minBlocks) : null;
  if (l.block) {
    const o = occupancy(gpu, { threadsPerBlock: prod(l.block) });
    if (o.blocks > 0) return { b: o.blocks, how: `${o.blocks} resident block(s) of this size per SM` };
  }
  if (minBlocks && minBlocks > 0) return { b: minBlocks, how: `${minBlocks} block(s)/SM by __launch_bounds__` };
  return { b: 1, how: 'assuming 1 block/SM' };
}

/** First element of a Python grid tuple, or the grid itself; a name is followed to its one assignment in the function. */
function gridExtent(n: SyntaxNode | null): SyntaxNode | null {
  let g = n;
  if (g && (g.type === 'tuple' || g.type === 'parenthesized_expression')) g = g.namedChildren[0] ?? g;
  if (g?.type === 'identifier') {
    let fn = g.parent;
    while (fn && !['function_definition', 'module', 'translation_unit'].includes(fn.type)) fn = fn.parent;
    const name = g.text;
    const defs = (fn?.descendantsOfType(['assignment', 'init_declarator']) ?? []).filter((a) => (a.childForFieldName('left') ?? a.childForFieldName('declarator'))?.text === name);
    if (defs.length === 1) return defs[0]!.childForFieldName('right') ?? defs[0]!.childForFieldName('value') ?? g;
  }
  return g;
}

export default defineCheck({
  id: 'kernel/wave-quantization',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation: '003 §8.8 Wave Quantization; 003 §3.2 (grid sizing); 003 §10 (rows "Wave quantization overhead", "Grid-stride loop grid size")',
  summary: 'A constant grid just over a whole number of waves (SMs × resident blocks/SM), or an uncapped ceil(n/block) grid for a grid-stride kernel.',
  why: 'One wave is SM_count × blocks_per_SM blocks; a grid just over it (129 blocks on the 128-SM RTX 4090) runs a nearly empty last wave and wastes ~50 % of the GPU time (003 §8.8), most visibly for kernels under 1 ms.',
  messages: {
    tail:
      'Grid of {{g}} blocks of {{b}} threads is just over {{full}} full wave(s) on {{gpu}} ({{sms}} SMs × {{how}} = {{w}} blocks per wave): the last wave runs {{last}} block(s), so {{idle}} of the SM slots over the launch sit idle{{others}}. Size the grid to exactly fill the GPU and use a grid-stride loop: `{{code}}`.',
    uncapped:
      'Kernel `{{kernel}}` has a grid-stride loop but is launched with one block per {{b}} elements ({{grid}}); cap the grid at SM_count × blocks_per_SM (one full wave) so no partial last wave is left: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        for (const l of ctx.get(launchConfigs)) {
          if (l.testOrBench) continue;
          if (l.grid) {
            const G = prod(l.grid);
            const hits: string[] = [];
            let first: Record<string, string | number> | null = null;
            for (const gpu of ctx.config.targets) {
              const { b, how } = blocksPerSm(gpu, l);
              const w = waves(gpu, G, b);
              const rem = G % w.wave;
              // "Just over" a wave: a grid smaller than one wave is grid-too-small's concern, not a tail.
              if (G <= w.wave || rem === 0 || rem > TAIL_FRACTION * w.wave || G >= MAX_WAVES * w.wave) continue;
              hits.push(`${gpu.name} (last wave ${w.lastWaveBlocks}/${w.wave})`);
              first ??= { gpu: gpu.name, sms: gpu.sms, how, w: w.wave, full: w.fullWaves, last: w.lastWaveBlocks, idle: pct(w.idleFraction) };
            }
            if (first) {
              const others = hits.length > 1 ? `; also ${hits.slice(1).join(', ')}` : '';
              ctx.report({
                node: l.node,
                messageId: 'tail',
                data: { ...first, g: G, b: l.block ? prod(l.block) : '?', others, code: quote(l.node) },
                fix: { description: `Launch SM_count × blocks_per_SM blocks (cudaOccupancyMaxActiveBlocksPerMultiprocessor × multiProcessorCount${ctx.projectVocabulary ? ', or runtime.launch_config' : ''}) and loop over the elements with a grid stride.` },
              });
            }
            continue;
          }
          const fn = l.kernel?.fn;
          const g = gridExtent(l.gridNode);
          if (!fn || !hasGridStrideLoop(fn) || !isCeilDivGrid(g)) continue;
          ctx.report({
            node: l.node,
            messageId: 'uncapped',
            data: { kernel: fn.name, b: l.block ? prod(l.block) : 'block', grid: quote(g!), code: quote(l.node) },
            fix: { description: 'grid = min(ceil(n / block), sm_count * blocks_per_sm), with blocks_per_sm from cudaOccupancyMaxActiveBlocksPerMultiprocessor.' },
          });
        }
      },
    };
  },
});

import { launchConfigs, prod } from '../../../src/analysis/launch-config.js';
import { smallestSmTarget } from '../../../src/analysis/occupancy.js';
import { ancestor, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import { LAUNCH } from '../../../src/config/costs.js';

/** Final passes of multi-pass reductions/scans combine at most one block of partials (catalog do-not-flag). */
const FINAL_PASS = /final|finalize|combine|second_pass|last_block|_tail/i;
const LOOPS = ['for_statement', 'while_statement', 'do_statement', 'for_range_loop'];
/** The kernel requires a one-block grid: `assert(gridDim.x == 1)` (a deterministic single-block reduction). */
const ONE_BLOCK_ASSERT = /\bassert\s*\(\s*gridDim\.x\s*==\s*1\s*\)/;

export default defineCheck({
  id: 'kernel/grid-too-small',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation:
    '003 §8.4 Small Kernel Launches (detection rules 1 and 3; "Minimum grid sizes to saturate GPU" table); 003 §3.5 Launch Overhead Amortization; 003 §10 (row "Minimum threads per launch"); 004 §H2.2 Techniques for Occupancy Tuning ("launching at least as many blocks as SMs")',
  summary: 'Constant launch configuration too small to occupy the GPU: one block, a partial warp, or fewer blocks than half the SMs of a target.',
  why: 'A grid needs at least SM_count/2 blocks just to reach half the SMs (54 on A100, 66 on H100, 41 on RTX 3090, 64 on RTX 4090; 003 §8.4), 32 threads is the absolute minimum and ~10,000 the target (003 §10), and each launch already costs ' + LAUNCH + ' (003 §3.5: 3–5 µs).',
  messages: {
    small:
      'Launch is too small to use the GPU (grid of {{g}} block(s) × {{b}} threads): at least {{min_blocks}} blocks are needed just to cover half the SMs of {{gpu}} ({{sms}} SMs; 004 advises ≥ {{sms}} blocks): `{{code}}`.',
    partialWarp:
      'Launch is too small to use the GPU (grid of {{g}} block(s) × {{b}} threads): a block of {{b}} thread(s) is a partial warp, so {{idle}} of its 32 lanes idle; 32 threads is the absolute minimum (003 §10) and {{gpu}} needs ≥ {{min_blocks}} blocks of them to cover half its {{sms}} SMs: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const gpu = smallestSmTarget(ctx.config.targets);
        if (!gpu) return;
        const minBlocks = Math.ceil(gpu.sms / 2);
        const launches = ctx.get(launchConfigs);
        for (const l of launches) {
          if (l.testOrBench || !l.grid || !l.block) continue;
          const G = prod(l.grid);
          const B = prod(l.block);
          if (G <= 0 || B <= 0) continue;
          if (FINAL_PASS.test(l.label)) continue;
          if (G === 1) {
            // The kernel itself demands one block (determinism by a single-block reduction).
            if (ONE_BLOCK_ASSERT.test(l.kernel?.fn.body?.text ?? '')) continue;
            // A second pass: the same function launched this kernel before with a larger grid, and this one-block
            // launch combines that pass's per-block partials (at most one block of them).
            const fn = ancestor(l.node, ['function_definition']);
            const earlier = fn && launches.some((o) => o !== l && o.label === l.label && o.node.startIndex < l.node.startIndex && ancestor(o.node, ['function_definition'])?.id === fn.id && (!o.grid || prod(o.grid) > 1));
            if (earlier) continue;
          }
          // A <<<1,1>>> kernel without a loop keeps a scalar on the device instead of a D2H round trip
          // (003 §8.2 outranks §8.4); without its body we cannot tell, so stay quiet.
          if (G === 1 && B === 1) {
            const body = l.kernel?.fn.body;
            if (!body || !LOOPS.some((t) => body.descendantsOfType(t).length > 0)) continue;
          }
          const flagged = G === 1 || B < 32 || G * B < 32 || G < minBlocks;
          if (!flagged) continue;
          const data = { g: G, b: B, min_blocks: minBlocks, gpu: gpu.name, sms: gpu.sms, idle: 32 - (B % 32), code: quote(l.node) };
          ctx.report({
            node: l.node,
            messageId: B < 32 ? 'partialWarp' : 'small',
            data,
            fix: { description: `Batch the work into one launch over all items and size it as min(ceil(n/block), SMs × blocks/SM) with a grid-stride loop (≥ ${minBlocks} blocks; ${gpu.name} has ${gpu.sms} SMs).` },
          });
        }
      },
    };
  },
});

import { luisaModel, type LuisaModel, selectsFewThreads } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** The warp collective that pre-aggregates each shared atomic operation. */
const AGGREGATE: Record<string, string> = {
  fetch_add: 'warp_active_sum',
  fetch_sub: 'warp_active_sum',
  fetch_min: 'warp_active_min',
  fetch_max: 'warp_active_max',
  fetch_or: 'warp_active_bit_or',
  fetch_and: 'warp_active_bit_and',
  fetch_xor: 'warp_active_bit_xor',
};


/** The operand already is a warp aggregate (`fetch_add(warp_active_sum(x))`, or a local holding one). */
function preAggregated(m: LuisaModel, operand: SyntaxNode | undefined): boolean {
  const e = unparen(operand);
  if (!e) return false;
  if (/\bwarp_(active|prefix)_\w+\s*\(/.test(e.text)) return true;
  if (e.type === 'identifier') {
    const d = m.declOf(e.text, e);
    return !!d?.value && /\bwarp_(active|prefix)_\w+\s*\(/.test(d.value.text);
  }
  return false;
}

export default defineCheck({
  id: 'luisa/shared-atomic-to-warp-collective',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §3.1 Shared-Memory Atomic → Warp Collective',
  summary: 'Every thread of the block does a shared-memory atomic on the same slot.',
  why: 'Atomics on one shared slot serialize: a 256-thread block issues 256 contended updates where a warp_active_sum per warp and one atomic from the first active lane issue 8, and the warp collective itself needs no barrier (000 §3.1, §7 rule 1).',
  messages: {
    contended: 'Every thread performs the shared-memory atomic `{{code}}` on the same slot of `{{name}}`{{figure}}; aggregate per warp with {{aggregate}} and let one lane do the atomic: `$if (warp_is_first_active_lane()) { {{name}}.atomic({{index}}).{{op}}(…); };`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const d of m.shared) {
          if (!d.body || !d.name) continue;
          for (const a of m.sharedAccesses(d)) {
            if (a.kind !== 'atomic' || !a.atomicOp || !AGGREGATE[a.atomicOp] || !a.index) continue;
            // A uniform slot: a literal or a block-uniform expression; a per-thread or per-warp index spreads the contention.
            if (m.constValue(a.index) === null && m.laneDependent(a.index)) continue;
            const fetch = a.node.parent?.parent;
            if (fetch?.type !== 'call_expression') continue;
            // The returned old value is each thread's own slot (queue append, 000 §4.3): a warp
            // collective would need warp_prefix_count_bits to hand out slots.
            if (fetch.parent?.type !== 'expression_statement') continue;
            if (m.deviceBranchesAround(fetch).some((b) => !b.inElse && selectsFewThreads(m, b.condition))) continue;
            const operand = fetch.childForFieldName('arguments')?.namedChildren[0];
            if (preAggregated(m, operand)) continue;
            const block = m.kernelOf(fetch)?.blockSize?.product ?? null;
            const warp = m.kernelOf(fetch)?.warpSize?.value ?? 32;
            const figure = block && block > warp ? ` (${block} serialized atomics per ${block}-thread block, against ${Math.ceil(block / warp)} after a per-warp aggregate)` : '';
            const agg = AGGREGATE[a.atomicOp];
            const aggregate = operand && m.constValue(operand) === 1 && a.atomicOp === 'fetch_add'
              ? `\`warp_active_sum(1)\` (or \`warp_active_count_bits(cond)\` under a condition)`
              : `\`${agg}(${operand?.text ?? 'v'})\``;
            ctx.report({
              node: fetch,
              messageId: 'contended',
              data: { code: quote(fetch), name: d.name, figure, aggregate, index: a.index.text, op: a.atomicOp },
            });
          }
        }
      },
    };
  },
});

import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode, smemFacts } from '../../../src/analysis/smem.js';
import { calleePath, lastName, unparen } from '../../../src/analysis/syntax.js';
import { uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Accumulating atomics: many lanes adding into one address serialize there. */
const ACCUMULATE = /^(atomicAdd|atomicSub|atomicMax|atomicMin|atomicOr|atomicAnd|atomicXor|unsafeAtomicAdd|gpuAtomicAdd|fastAtomicAdd|atomic_add|atomicAddNoRet)(_block|_system)?$/;
/** A reduction across lanes somewhere in the function: the author aggregates before the atomic. */
const AGGREGATE = /^(__shfl(_down|_xor|_up)?(_sync)?|__reduce_\w+_sync|__match_any_sync|reduce|reduce_sum|inclusive_scan|exclusive_scan|Sum|Reduce|warp_?[Rr]educe\w*|block_?[Rr]educe\w*|warp[A-Z]\w*|block[A-Z]\w*[Rr]educ\w*|shfl\w*)$/;

/** Guard that lets only one lane (or thread) through: `lane == 0`, `threadIdx.x == 0`, `!tid`. */
function singleLane(cond: SyntaxNode): boolean {
  return /(==\s*0[uU]?\b|\b0[uU]?\s*==|^\(?\s*!\s*[A-Za-z_][\w.]*\s*\)?$|==\s*(lane|leader|src_?lane)\b|\b(is_?leader|leader|elected|is_?first)\b)/.test(cond.text);
}

export default defineCheck({
  id: 'kernel/contended-atomic-without-warp-aggregation',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §8.7 Global Memory Atomics; 000 §4.3 shared-memory privatization; derived from real fixes',
  summary: 'Every lane of a warp issues an accumulating atomic to the same address, with no warp or block reduction first.',
  why: 'Atomics to one address serialize: when all 32 lanes of every warp add into the same word, each warp pays 32 round trips at the L2 (or the shared-memory bank) instead of one. A shuffle reduction across the warp (or a block reduction) followed by one atomic per warp or block removes the contention (003 §8.7).',
  messages: {
    contended: '`{{call}}` adds into `{{addr}}`, the same address for every lane of the warp{{scope}}, with no warp reduction first: the 32 lanes serialize on it. Reduce across the warp (`__shfl_down_sync` / `cg::reduce`) and let one lane issue the atomic{{block}}.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        const smem = ctx.get(smemFacts);
        for (const c of ctx.source.root.descendantsOfType('call_expression')) {
          const f = m.functionOf(c);
          if (!f || !(f.isKernel || f.isDevice) || !f.body) continue;
          const name = lastName(calleePath(c.childForFieldName('function')) ?? '') ?? '';
          if (!ACCUMULATE.test(name)) continue;
          const args = c.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
          const addr = unparen(args[0]);
          const value = unparen(args[1]);
          if (!addr || !value) continue;
          // A result that is used (slot allocation, tickets) is not an accumulation.
          let stmt = c.parent;
          while (stmt && (stmt.type === 'parenthesized_expression' || stmt.type === 'cast_expression')) stmt = stmt.parent;
          if (stmt?.type !== 'expression_statement') continue;
          // The same address in every lane, but a per-lane value: an integer literal increment is aggregated by the compiler.
          if (u.level(addr) === 'thread') continue;
          if (value.type === 'number_literal' && !/[.eEfF]/.test(value.text.replace(/^0x/i, ''))) continue;
          if (u.level(value) !== 'thread') continue;
          // One lane per warp or block already (`if (lane == 0)`), or any thread-dependent guard that picks a leader.
          const around = u.divergentBranchesAround(c, 'warp');
          if (around.some((b) => singleLane(b.condition))) continue;
          // The function reduces across lanes somewhere before the atomic: the author aggregates.
          const before = f.body.descendantsOfType('call_expression').filter((x) => x.startIndex < c.startIndex);
          if (before.some((x) => AGGREGATE.test(lastName(calleePath(x.childForFieldName('function')) ?? '') ?? ''))) continue;
          const base = addr.text.replace(/^[&*\s(]+/, '').match(/^[A-Za-z_]\w*/)?.[0] ?? '';
          const shared = !!base && !!smem.declFor(base, c);
          const blockWide = u.level(addr) === 'block';
          ctx.report({
            node: c,
            messageId: 'contended',
            data: {
              call: quoteCode(c.text, 50),
              addr: quoteCode(addr.text, 40),
              scope: blockWide ? (shared ? ' (shared memory: every thread of the block)' : ' (and for every warp of the block)') : '',
              block: blockWide && !shared ? ' (or reduce across the block first, one atomic per block)' : '',
            },
          });
        }
      },
    };
  },
});

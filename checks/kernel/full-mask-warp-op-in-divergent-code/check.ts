import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { matchesVocab } from '../../../src/analysis/syntax.js';
import { constantBlockOf, evalWithBlockDim, isFullMask, uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import type { CudaFunction, CudaModel } from '../../../src/analysis/cuda.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/**
 * For `threadIdx.x < E` (or a local copy of `threadIdx.x`), how many of warp 0's 32 lanes enter, with the
 * launch's constant block size substituted for `blockDim.x`: the 003 §5.4 guard lets 8 of 32 in at 256 threads.
 */
function lanesEntering(ctx: CheckContext, m: CudaModel, fn: CudaFunction, cond: SyntaxNode): string {
  let c: SyntaxNode | null = cond;
  while (c && (c.type === 'parenthesized_expression' || c.type === 'condition_clause')) c = c.namedChildren[c.namedChildren.length - 1] ?? null;
  if (c?.type !== 'binary_expression') return '';
  const op = c.childForFieldName('operator')?.type ?? '';
  const l = c.childForFieldName('left');
  const r = c.childForFieldName('right');
  if (!l || !r || !['<', '<='].includes(op)) return '';
  const isTx = l.text.replace(/\s/g, '') === 'threadIdx.x' || (l.type === 'identifier' && new RegExp(`\\b${esc(l.text)}\\s*=\\s*threadIdx\\.x\\s*;`).test(fn.body?.text ?? ''));
  if (!isTx) return '';
  const block = constantBlockOf(ctx.source, ctx.config, fn);
  const bx = block?.[0];
  const direct = m.constValue(r);
  const e = direct ?? (bx ? evalWithBlockDim(r.text, bx, m) : null);
  if (e === null) return '';
  const k = Math.max(0, Math.min(32, e + (op === '<=' ? 1 : 0)));
  if (k <= 0 || k >= 32) return '';
  return direct !== null ? `: only ${k} of the 32 lanes of warp 0 enter` : `: with the ${block![1] * block![2] === 1 ? `${bx}-thread` : block!.join('×')} blocks it is launched with, only ${k} of the 32 lanes of warp 0 enter`;
}

export default defineCheck({
  id: 'kernel/full-mask-warp-op-in-divergent-code',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '(derived) 003 §5.1/§5.2/§5.4 (all use `0xFFFFFFFF` masks); 000 §3.7 step 3 rule 1 and 000 §7 rule 13 ("All lanes must participate in every shuffle"), applied to CUDA\'s `*_sync` semantics',
  summary: 'Full-mask warp collective executed under a thread-dependent condition.',
  why: 'A `*_sync` collective with mask 0xFFFFFFFF requires all 32 lanes of the warp to execute it; 000 §7 rule 13 ("All lanes must participate in every shuffle") and the 003 §5.4 step 3 pattern, where only `(blockDim.x + 31) / 32` lanes of warp 0 enter, make the result undefined on Volta and later.',
  messages: {
    divergent: '`{{call}}` uses a full mask but runs under the thread-dependent condition `{{cond}}`{{where}}; lanes named in the mask that do not reach the call make the result undefined.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        const vocab = ctx.config.vocab.warp_collective_calls;
        for (const c of m.calls) {
          if (!matchesVocab(c.path, vocab)) continue;
          const f = m.functionOf(c.node);
          if (!f || !(f.isKernel || f.isDevice)) continue;
          // A mask from __activemask() or a ballot of the guard names only the lanes that arrive.
          if (!isFullMask(c.args[0], m, ctx.config)) continue;
          const div = u.divergentBranchesAround(c.node, 'warp');
          if (!div.length) continue;
          const d = div[0];
          ctx.report({
            node: c.node,
            messageId: 'divergent',
            data: {
              call: quoteCode(c.node.text, 50),
              cond: quoteCode(d.condition.text.replace(/^\((.*)\)$/s, '$1'), 50),
              where: d.kind === 'if' ? lanesEntering(ctx, m, f, d.condition) : d.kind === 'early-exit' ? ` (lanes left through an earlier \`${d.node.text.replace(/;$/, '')}\`)` : d.kind === 'loop' ? ' (a loop whose trip count differs between lanes)' : '',
            },
            fix: { description: 'Hoist the collective out of the condition (compute it in all lanes, use the result under the condition), or take `unsigned m = __ballot_sync(0xffffffffu, cond);` before the branch and pass `m` as the mask.' },
          });
        }
      },
    };
  },
});

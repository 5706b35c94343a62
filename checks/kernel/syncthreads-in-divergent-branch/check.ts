import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { matchesVocab } from '../../../src/analysis/syntax.js';
import { constantBlockOf, uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** `block.sync()` / `cg::this_thread_block().sync()`: a cooperative-groups block barrier. */
function isGroupBlockSync(call: SyntaxNode, body: SyntaxNode | null): boolean {
  const fn = call.childForFieldName('function');
  if (fn?.type !== 'field_expression' || fn.childForFieldName('field')?.text !== 'sync') return false;
  const obj = fn.childForFieldName('argument');
  if (!obj) return false;
  if (/this_thread_block\s*\(\s*\)$/.test(obj.text)) return true;
  // A named group counts when it was declared as the block (not a tile or a coalesced group).
  const decl = new RegExp(`\\b(thread_block|auto)\\s+${obj.text.replace(/\W/g, '')}\\s*=\\s*(cg::|cooperative_groups::)?this_thread_block\\b`);
  return !!body && decl.test(body.text);
}

export default defineCheck({
  id: 'kernel/syncthreads-in-divergent-branch',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '(derived) 000 §10.7 Barriers in generated code ("never inside a thread_id-divergent branch"), applied to CUDA; 004 §H1.6 Table 8-1 (barrier stalls)',
  summary: 'Block barrier reachable only by some threads of the block.',
  why: 'A block barrier waits for all threads of the block (up to 1,024, i.e. 32 warps); if a thread-dependent condition or an early return keeps some of them away, the block hangs or proceeds with a half-written tile (000 §10.7, 004 §H1.6).',
  messages: {
    divergent: '`{{call}}` is reachable only by some threads of the block (thread-dependent condition `{{cond}}`{{where}}); this can hang or corrupt results{{figure}}.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        const vocab = ctx.config.vocab.block_barrier_calls;
        for (const c of ctx.source.root.descendantsOfType('call_expression')) {
          const f = m.functionOf(c);
          if (!f || !(f.isKernel || f.isDevice)) continue;
          const path = m.calls.find((x) => x.node.id === c.id)?.path ?? null;
          if (!matchesVocab(path, vocab) && !isGroupBlockSync(c, f.body)) continue;
          // The whole block must arrive: a branch on the warp index is divergent too.
          const div = u.divergentBranchesAround(c, 'block');
          if (!div.length) continue;
          const d = div[0];
          ctx.report({
            node: c,
            messageId: 'divergent',
            data: {
              call: quoteCode(c.text, 50),
              cond: quoteCode(d.condition.text.replace(/^\((.*)\)$/s, '$1'), 50),
              figure: (() => {
                const b = constantBlockOf(ctx.source, ctx.config, f);
                if (!b) return '';
                const threads = b[0] * b[1] * b[2];
                return ` (all ${Math.ceil(threads / 32)} warps of the ${b[1] * b[2] === 1 ? `${threads}-thread` : `${b.join('×')} (${threads}-thread)`} blocks it is launched with must arrive)`;
              })(),
              where: d.kind === 'early-exit' ? `, taken by an earlier \`${d.node.text.replace(/;$/, '')}\`` : d.level === 'warp' ? ', the warp index: other warps of the block skip it' : '',
            },
            fix: { description: 'Move the barrier out of the condition so every thread of the block reaches it; keep the guarded work under the condition and let out-of-range threads fall through instead of returning early.' },
          });
        }
      },
    };
  },
});

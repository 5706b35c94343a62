import { luisaModel } from '../../../src/analysis/luisa.js';
import { calleePath, lastName, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

export default defineCheck({
  id: 'luisa/callback-blocks-or-submits',
  pass: 2,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §8.8.6 Key Rules, rule 5 ("should not throw, block on the GPU, or perform GPU API calls on the same stream")',
  summary: 'add_callback / add_dtor_callback body submits to a stream, synchronizes, dispatches, commits or throws.',
  why: 'Callbacks run on the backend\'s completion/worker thread (Stream::_thd on Vulkan, CommandQueue::_execute_thread on DX), so submitting to or synchronizing the stream there can deadlock that thread and an exception escapes a noexcept callback (000 §8.8.1, §8.8.6 rule 5).',
  messages: {
    blocks: '`{{code}}` inside `{{method}}`: Callback runs on an internal worker thread and must not submit to or synchronize the stream, block on the GPU, or throw. Signal host code (a work queue or condition variable) and submit from there.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const c of m.callsNamed(/^add_(dtor_)?callback$/)) {
          const lam = c.args[0];
          const body = lam?.type === 'lambda_expression' ? lam.childForFieldName('body') : null;
          if (!body || m.inDeviceCode(c.node)) continue;
          let hit: SyntaxNode | null = null;
          for (const n of body.descendantsOfType(['call_expression', 'throw_statement', 'throw_expression', 'binary_expression'])) {
            // A nested lambda handed to a queue runs later on a host thread.
            let p = n.parent;
            while (p && p.type !== 'lambda_expression') p = p.parent;
            if (p?.id !== lam!.id) continue;
            if (n.type === 'throw_statement' || n.type === 'throw_expression') { hit = n; break; }
            if (n.type === 'binary_expression') {
              if (n.childForFieldName('operator')?.type !== '<<') continue;
              if (m.submissions.some((s) => s.expr.id === n.id && s.targetKind === 'stream')) { hit = n; break; }
              continue;
            }
            const name = lastName(calleePath(n.childForFieldName('function'))) ?? '';
            if (/^(synchronize|dispatch|commit)$/.test(name) || /^LUISA_ERROR/.test(name)) { hit = n; break; }
          }
          if (!hit) continue;
          ctx.report({
            node: hit,
            messageId: 'blocks',
            data: { code: quote(hit), method: c.name },
            fix: { description: 'Move the GPU submission out of the callback: have the callback push to a host work queue or notify a condition variable, and submit from the host thread.' },
          });
        }
      },
    };
  },
});

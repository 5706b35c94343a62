import { cppFlowsTo, hostFunctionOf } from '../../../src/analysis/flow.js';
import { luisaModel } from '../../../src/analysis/luisa.js';
import { calleePath, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** `std::move(sub)` → `sub`. */
function movedName(n: SyntaxNode | null | undefined): string | null {
  const a = unparen(n ?? null);
  if (a?.type !== 'call_expression' || !/^(std::|luisa::)?move$/.test(calleePath(a.childForFieldName('function')) ?? '')) return null;
  const x = a.childForFieldName('arguments')?.namedChildren[0];
  return x?.type === 'identifier' ? x.text : null;
}

export default defineCheck({
  id: 'luisa/dtor-callback-dropped-by-merge',
  pass: 2,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §8.8.1 Understanding the Two Callbacks (dtor callbacks "are not transferred by add_range() / operator<<(CommandList&&)")',
  summary: 'A CommandList with add_dtor_callback is merged with add_range()/operator<<, which drops its dtor callbacks.',
  why: 'add_range() / operator<<(CommandList&&) move only commands, callbacks and presents and then clear() the source, so its dtor callbacks (staging frees, file closes) never run on the merged list (000 §8.8.1, src/runtime/command_list.cpp:44-58).',
  messages: {
    dropped: '`{{code}}` merges `{{sub}}`, which has `{{sub}}.add_dtor_callback(…)` (line {{line}}): This CommandList\'s dtor callbacks are dropped when it is merged with add_range()/operator<<; the cleanup will never run. Register the dtor callback on the destination list after merging, or commit `{{sub}}` separately.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const dtors = m.callsNamed('add_dtor_callback').filter((c) => c.receiver?.type === 'identifier' && !m.inDeviceCode(c.node));
        if (!dtors.length) return;
        const merges: Array<{ node: SyntaxNode; sub: string }> = [];
        for (const c of m.callsNamed('add_range')) {
          const s = movedName(c.args[0]);
          if (s) merges.push({ node: c.node, sub: s });
        }
        for (const b of ctx.source.root.descendantsOfType('binary_expression')) {
          if (b.childForFieldName('operator')?.type !== '<<') continue;
          const s = movedName(b.childForFieldName('right'));
          if (s) merges.push({ node: b, sub: s });
        }
        const reported = new Set<number>();
        for (const d of dtors) {
          const sub = d.receiver!.text;
          const decl = m.declOf(sub, d.node);
          for (const mg of merges) {
            if (mg.sub !== sub || reported.has(mg.node.id) || hostFunctionOf(mg.node)?.id !== hostFunctionOf(d.node)?.id) continue;
            if (m.declOf(sub, mg.node)?.node.id !== decl?.node.id || !cppFlowsTo(d.node, mg.node)) continue;
            reported.add(mg.node.id);
            ctx.report({
              node: mg.node,
              messageId: 'dropped',
              data: { code: quote(mg.node), sub, line: d.node.startPosition.row + 1 },
              fix: { description: `Register the cleanup on the destination list after the merge, or submit \`${sub}\` with its own \`stream << ${sub}.commit();\`.` },
            });
          }
        }
      },
    };
  },
});

import { functionName } from '../../../src/analysis/flow.js';
import { luisaModel, type Submission } from '../../../src/analysis/luisa.js';
import { lastName, calleePath, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Functions that run once per frame or step (catalog: "a function named like frame|iteration|step|update|render"). */
const PER_FRAME = /frame|iteration|step|update|render/i;
/** Paths where the host needs each result immediately (000 §8.3): batching would delay the feedback. */
const INTERACTIVE = /interactive|latency|pick|hover|cursor|mouse|debug/i;

const isCall = (n: SyntaxNode, name: string): boolean => {
  if (n.type !== 'call_expression') return false;
  return lastName(calleePath(n.childForFieldName('function'))) === name;
};

export default defineCheck({
  id: 'luisa/commandlist-batching',
  pass: 2,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §8.4 General Recipe (step 1 "look for repeated stream << statements inside a loop"); 000 §8.5 Performance Impact; 000 §8.7 Key Rules 1 and 4',
  summary: 'Several separate stream submissions per loop iteration or per frame instead of one CommandList commit.',
  why: 'Every `stream <<` statement is its own submission with its own driver and queue-flush cost, so N statements per iteration pay it N times where one CommandList commit pays it once (O(N) → O(1), 000 §8.5–8.6; "5+ stream submissions per iteration" is the guide\'s strong signal).',
  messages: {
    separate:
      '{{count}} separate submissions to `{{stream}}` per {{where}} (first: `{{code}}`){{strong}}; record them into one CommandList and commit once: `auto cl = CommandList::create(); cl << …; {{stream}} << cl.commit();`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        // A `stream << a << b` chain is one submission (the stream's delegate batches it); only
        // separate statements pay the submission cost again.
        const counted = (s: Submission): boolean => {
          if (s.targetKind !== 'stream' || m.inDeviceCode(s.stmt)) return false;
          const commands = s.operands.filter((o) => !isCall(o, 'synchronize'));
          if (!commands.length) return false;
          // Already batched (000 §8.4 step 4).
          if (commands.some((o) => o.type === 'call_expression' && /\.commit\s*\(/.test(o.text))) return false;
          // A readback the host waits for right away is the §8.3 "immediate feedback" case.
          if (s.synchronizes && commands.some((o) => /\bcopy_to\s*\(/.test(o.text)) && INTERACTIVE.test(s.stmt.text)) return false;
          if (m.cuda.debugGated(s.stmt)) return false;
          const f = m.cuda.functionOf(s.stmt);
          if (f && INTERACTIVE.test(f.name)) return false;
          return true;
        };
        const subs = m.submissions.filter(counted);
        if (subs.length < 2) return;
        const streamKey = (s: Submission): string => s.target.text.replace(/\s/g, '');

        // Group by (innermost host loop or per-frame function, stream): different streams cannot
        // share a CommandList (000 §8.3).
        const groups = new Map<string, { scope: SyntaxNode; where: string; items: Submission[] }>();
        for (const s of subs) {
          const loops: SyntaxNode[] = [];
          for (let l = m.hostLoopOf(s.stmt); l; l = m.hostLoopOf(l)) loops.push(l);
          const scopes: Array<{ scope: SyntaxNode; where: string }> = loops.map((l) => ({ scope: l, where: 'loop iteration' }));
          if (!loops.length) {
            const f = m.cuda.functionOf(s.stmt);
            if (f?.isHost && PER_FRAME.test(f.name)) scopes.push({ scope: f.node, where: `call of \`${functionName(f.node)}\`` });
          }
          for (const sc of scopes) {
            const key = `${sc.scope.id}:${streamKey(s)}`;
            let g = groups.get(key);
            if (!g) groups.set(key, (g = { scope: sc.scope, where: sc.where, items: [] }));
            g.items.push(s);
          }
        }
        // Innermost scopes first: an outer loop around a reported inner loop adds nothing new.
        const ordered = [...groups.values()].sort((a, b) => a.scope.endIndex - a.scope.startIndex - (b.scope.endIndex - b.scope.startIndex));
        const done = new Set<number>();
        for (const g of ordered) {
          if (g.items.length < 2 || g.items.some((s) => done.has(s.stmt.id))) continue;
          for (const s of g.items) done.add(s.stmt.id);
          const first = g.items[0];
          ctx.report({
            node: first.stmt,
            messageId: 'separate',
            data: {
              count: g.items.length,
              stream: first.target.text,
              where: g.where,
              code: quote(first.stmt),
              strong: g.items.length >= 5 ? ' — ≥5 per iteration: strong signal (000 §8.5)' : '',
            },
            fix: { description: `Create one \`CommandList::create()\` per iteration, append the ${g.items.length} commands with \`<<\`, and submit it with a single \`${first.target.text} << cl.commit();\`; add one \`synchronize()\` only if the host reads results.` },
          });
        }
      },
    };
  },
});

import { cppFlowsTo, unconditionalWithin } from '../../../src/analysis/flow.js';
import { luisaModel } from '../../../src/analysis/luisa.js';
import { contains, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

export default defineCheck({
  id: 'luisa/missing-final-synchronize',
  pass: 2,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §8.8.3 The Pipelined Iteration Pattern; 000 §8.8.6 Key Rules, rule 4',
  summary: 'Pipelined loop commits CommandLists with callbacks and never synchronizes after the loop.',
  why: 'add_callback fires only after the GPU finishes each list, so without one final synchronize() after the loop the last iterations\' callbacks may still be pending when the function returns or the program exits (000 §8.8.3, §8.8.6 rule 4).',
  messages: {
    missing: '`{{code}}` commits `{{list}}`{{cb}} in a loop, and nothing synchronizes `{{stream}}` after the loop: Pipelined loop commits CommandLists with callbacks but never synchronizes afterwards; the last callbacks may not fire before exit or before results are used. Add `{{stream}} << synchronize();` after the loop.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const syncs: SyntaxNode[] = m.submissions.filter((s) => s.synchronizes).map((s) => s.stmt);
        for (const c of m.callsNamed('synchronize')) if (c.receiver && !c.args.length) syncs.push(c.node);
        const reportedLoops = new Set<number>();
        for (const s of m.submissions) {
          if (s.targetKind !== 'stream' || s.synchronizes || m.inDeviceCode(s.stmt)) continue;
          const commit = s.operands.find((o) => o.type === 'call_expression' && /^\w+\.commit$/.test(o.childForFieldName('function')?.text ?? ''));
          if (!commit) continue;
          const list = commit.childForFieldName('function')!.childForFieldName('argument')!.text;
          const f = m.cuda.functionOf(s.stmt);
          if (!f?.body) continue;
          let loop = m.hostLoopOf(s.stmt);
          if (!loop) continue;
          for (let l = m.hostLoopOf(loop); l; l = m.hostLoopOf(l)) loop = l;
          if (reportedLoops.has(loop.id)) continue;
          // Callbacks on the list, visibly or through a builder that returns it (`make_batch(i)`).
          const visible = m.callsNamed('add_callback').some((cb) => cb.receiver?.text === list && contains(f.node, cb.node));
          const decl = m.declOf(list, s.stmt);
          const built = !!decl?.value && decl.value.type === 'call_expression' && !/CommandList::create/.test(decl.value.text);
          if (!visible && !built) continue;
          const L = loop;
          const synced = syncs.some((y) => contains(f.node, y) && y.startIndex > s.stmt.endIndex && (contains(L, y) || (cppFlowsTo(L, y) && unconditionalWithin(y, f.body!))));
          if (synced) continue;
          reportedLoops.add(L.id);
          // Insert the sync after the loop's last line, at the loop's indentation.
          let end: SyntaxNode = L;
          while (end.lastChild) end = end.lastChild;
          const lastLine = ctx.linesOf(end).split('\n').pop()!;
          const indent = /^\s*/.exec(ctx.linesOf(L).split('\n')[0])![0];
          const tailBlank = lastLine.slice(end.endPosition.column).trim() === '';
          ctx.report({
            node: s.stmt,
            messageId: 'missing',
            data: { code: quote(s.stmt), list, stream: s.target.text, cb: visible ? ' (with `add_callback`)' : '' },
            fix: { description: `Add \`${s.target.text} << synchronize();\` after the loop.`, ...(tailBlank ? { replace: { from: end, text: `${lastLine}\n${indent}${s.target.text} << synchronize();` } } : {}) },
          });
        }
      },
    };
  },
});

import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Host handle types: assigning one changes what later recorded code refers to, not a device value. */
const HANDLE_TYPE = /\*\s*$|^(const\s+)?(std::|luisa::)?(shared_ptr|unique_ptr|reference_wrapper|optional)\s*<|(BufferView|ImageView|VolumeView|BufferVar|ImageVar|Handle|Slot|Storage|View)\s*(<.*>)?\s*$/;

export default defineCheck({
  id: 'luisa/codegen-storage-rebinding-in-loop',
  pass: 3,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.5 Accumulation into per-thread state across a device loop',
  summary: 'Host pointer or handle rebound inside a device loop body, which is recorded only once.',
  why: 'A device `$for` body is emitted once on the host, so any storage decision in it (local vs shared backing) is baked at emission time: rebinding a host handle between "iterations" silently binds to the emission-time storage and loses the accumulation (000 §10.5).',
  messages: {
    rebind: 'A host-side handle is rebound inside a device $for body to change where a value lives between iterations (`{{code}}`; `{{name}}` is a host {{what}} declared before the loop); the body is emitted once, so the rebinding is baked at emission time and the accumulation is lost.',
  },
  fix: 'judgment',
  create(ctx) {
    const assigns: SyntaxNode[] = [];
    return {
      assignment_expression(n) {
        assigns.push(n);
      },
      'source:exit'() {
        if (!assigns.length) return;
        const m = ctx.get(luisaModel);
        if (!m.source.dsl?.size && !ctx.source.text.includes('dynamic_range')) return;
        const done = new Set<number>();
        for (const a of assigns) {
          if (a.childForFieldName('operator')?.text !== '=') continue;
          const l = a.childForFieldName('left');
          if (l?.type !== 'identifier') continue;
          const loop = m.deviceLoopsAround(a)[0];
          if (!loop || done.has(loop.id) || !m.inDeviceCode(a)) continue;
          const d = m.declOf(l.text, a);
          // Declared inside the loop: a fresh binding per recorded body, nothing is carried.
          if (!d || d.node.startIndex >= loop.startIndex) continue;
          const type = d.type.trim();
          const isPtr = d.pointer;
          if (!isPtr && !HANDLE_TYPE.test(type)) continue;
          // Used in the same body after the rebinding (`*acc_view += …`, `acc_view->…`, `view.write(…)`).
          const body = loop.type === 'for_range_loop' ? loop.childForFieldName('body') : loop.childForFieldName('consequence') ?? loop.childForFieldName('body');
          if (!body) continue;
          const used = body.descendantsOfType('identifier').some((i: SyntaxNode) => i.text === l.text && i.startIndex > a.endIndex);
          if (!used) continue;
          done.add(loop.id);
          ctx.report({
            node: a,
            messageId: 'rebind',
            data: { code: quoteCode(a.text, 60), name: l.text, what: isPtr ? 'pointer' : `\`${quoteCode(type, 30)}\` handle` },
            fix: { description: 'Choose the storage once before the loop (promote the accumulator to a Shared<T>-backed slot if it must be visible to other threads) and read/write it once per iteration inside the $for (000 §10.5).' },
          });
        }
      },
    };
  },
});

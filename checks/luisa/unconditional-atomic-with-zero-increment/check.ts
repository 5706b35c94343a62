import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Read-modify-write operations for which a zero operand leaves the slot unchanged. */
const ZERO_IDENTITY = /^fetch_(add|sub|or|xor)$/;
const ZERO = /^(0+|0*\.0*|0x0+)([uUlLfFhH]|ul|UL|ull|ULL|ll|LL|_h)*$/;

export default defineCheck({
  id: 'luisa/unconditional-atomic-with-zero-increment',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §3.1 Shared-Memory Atomic → Warp Collective; 000 §3.5 Conditional Participation; 000 §4.3 Block-Local Atomic Privatization',
  summary: 'Every thread issues an atomic whose operand is zero for the threads a predicate rejects (`fetch_add(ite(pred, 1u, 0u))`), instead of issuing it only under `$if (pred)`.',
  why: 'An atomic with a zero operand changes nothing but still takes its turn on the slot: on a block-shared counter the updates serialize (000 §3.1), so the rejected threads lengthen the queue for every accepted one. Leaving them out with a `$if` (000 §3.5) issues only the atomics that do work.',
  messages: {
    zero: '`{{code}}`: threads for which `{{cond}}` is {{when}} still issue this atomic with a zero operand; the update is a no-op for them but still contends for the slot. Issue it only under `$if ({{guard}})` (initialise the result for the other threads if it is used).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.bodies.length) return;
        const isZero = (n: SyntaxNode | null | undefined): boolean => {
          const v = unparen(n ?? null);
          if (!v) return false;
          if (v.type === 'number_literal') return ZERO.test(v.text.replace(/'/g, ''));
          if (v.type === 'call_expression') {
            const f = v.childForFieldName('function');
            const name = f?.type === 'template_function' ? f.childForFieldName('name')?.text : f?.text;
            const args = v.childForFieldName('arguments')?.namedChildren ?? [];
            if (name && /^(def|(luisa::)?make_\w+[234]|(static_)?cast)$/.test(name) && args.length >= 1) return args.every((a) => isZero(a));
          }
          return false;
        };
        // `ite(p, x, 0)` / `ite(p, 0, x)` / `select(0, x, p)` (false value first), through one local.
        const selectedZero = (n: SyntaxNode | null | undefined, depth = 0): { cond: SyntaxNode; zeroWhen: boolean } | null => {
          const v = unparen(n ?? null);
          if (!v) return null;
          if (v.type === 'identifier' && depth < 2) {
            const d = m.declOf(v.text, v);
            if (!d || d.param || !d.value) return null;
            return selectedZero(d.value, depth + 1);
          }
          if (v.type !== 'call_expression') return null;
          const name = v.childForFieldName('function')?.text ?? '';
          const args = v.childForFieldName('arguments')?.namedChildren ?? [];
          if (args.length !== 3) return null;
          if (/^(luisa::compute::)?ite$/.test(name)) {
            const [p, t, f] = args;
            if (isZero(f) && !isZero(t)) return { cond: p, zeroWhen: false };
            if (isZero(t) && !isZero(f)) return { cond: p, zeroWhen: true };
          }
          if (/^(luisa::compute::)?select$/.test(name)) {
            const [f, t, p] = args;
            if (isZero(f) && !isZero(t)) return { cond: p, zeroWhen: false };
            if (isZero(t) && !isZero(f)) return { cond: p, zeroWhen: true };
          }
          return null;
        };
        for (const c of m.callsNamed(ZERO_IDENTITY)) {
          if (!c.receiver || c.args.length !== 1 || !m.inDeviceCode(c.node)) continue;
          // The receiver is an atomic reference: `x.atomic(i)`, `x->atomic(i).y`, `x.atomic(i)[k]`.
          let r = unparen(c.receiver);
          for (let k = 0; k < 3 && r && r.type !== 'call_expression'; k++) {
            r = r.type === 'field_expression' || r.type === 'subscript_expression' ? unparen(r.childForFieldName('argument') ?? r.namedChildren[0] ?? null) : null;
          }
          if (r?.type !== 'call_expression') continue;
          const fn = r.childForFieldName('function');
          if (fn?.type !== 'field_expression' || fn.childForFieldName('field')?.text !== 'atomic') continue;
          const sel = selectedZero(c.args[0]);
          // A literal predicate is not a choice between threads.
          if (!sel || /^(true|false)$/.test(sel.cond.text)) continue;
          const cond = sel.cond.text.replace(/\s+/g, ' ');
          ctx.report({
            node: c.node,
            messageId: 'zero',
            data: { code: quote(c.node), cond, when: sel.zeroWhen ? 'true' : 'false', guard: sel.zeroWhen ? `!(${cond})` : cond },
          });
        }
      },
    };
  },
});

import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

type Base = 'bool' | 'float' | 'int';
interface OpType { base: Base; vector: boolean; shown: string }

const ARITH = /^warp_(active_(sum|product|min|max)|prefix_(sum|product))$/;
const BITS = /^warp_active_bit_(and|or|xor)$/;
const VOTES = /^warp_(active_(all|any|count_bits|bit_mask)|prefix_count_bits)$/;

/** DSL value types as declared: `Float`, `UInt3`, `Bool`, `Var<float2>`, `Expr<bool>`, `Half4`. */
function classifyType(t: string): OpType | null {
  const s = t.replace(/\b(const|luisa::compute::|compute::)\b|&/g, '').replace(/\s+/g, '');
  const shown = s;
  let m = /^(Bool|Float|Half|Double|Int|UInt|Short|UShort|Long|ULong|Byte|UByte)([234])?$/.exec(s);
  if (m) return { base: baseOf(m[1].toLowerCase()), vector: !!m[2], shown };
  m = /^(Var|Expr)<(bool|float|half|double|int|uint|short|ushort|long|ulong|slong|byte|ubyte|uint32_t|int32_t)([234])?>$/.exec(s);
  if (m) return { base: baseOf(m[2]), vector: !!m[3], shown };
  return null;
}
function baseOf(t: string): Base {
  if (t === 'bool') return 'bool';
  if (t === 'float' || t === 'half' || t === 'double') return 'float';
  return 'int';
}

/** The operand's type from its declaration or its own shape; null when unknown. */
function operandType(m: LuisaModel, n: SyntaxNode | null): OpType | null {
  const u = unparen(n);
  if (!u) return null;
  if (u.type === 'identifier') {
    const d = m.declOf(u.text, u);
    if (!d) return null;
    const t = classifyType(d.type);
    if (t) return t;
    // `auto hit = dist < radius;`
    if (/^auto\b/.test(d.type.trim()) && d.value && !d.param) return shapeOf(d.value);
    return null;
  }
  return shapeOf(u);
}
function shapeOf(n: SyntaxNode): OpType | null {
  const u = unparen(n);
  if (!u) return null;
  if (u.type === 'binary_expression') {
    const op = u.childForFieldName('operator')?.type ?? '';
    if (['<', '>', '<=', '>=', '==', '!=', '&&', '||'].includes(op)) return { base: 'bool', vector: false, shown: 'Bool' };
  }
  if (u.type === 'unary_expression' && u.childForFieldName('operator')?.type === '!') return { base: 'bool', vector: false, shown: 'Bool' };
  if (u.type === 'true' || u.type === 'false') return { base: 'bool', vector: false, shown: 'bool' };
  if (u.type === 'number_literal' && /[.eE]|f$/i.test(u.text) && !/^0x/i.test(u.text)) return { base: 'float', vector: false, shown: 'float' };
  if (u.type === 'call_expression') {
    const f = u.childForFieldName('function')?.text ?? '';
    const mk = /^make_(float|int|uint|bool|half)([234])$/.exec(f);
    if (mk) return { base: baseOf(mk[1]), vector: true, shown: `${mk[1]}${mk[2]}` };
  }
  return null;
}

export default defineCheck({
  id: 'luisa/warp-op-operand-type',
  pass: 3,
  severity: 'low',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §1.2 Active-Lane Reductions (type requirements); 000 §7 rule 7 (vector types; vote ops take scalar Expr<bool> only; lane index must be integral)',
  summary: 'Warp collective called with an operand type it does not accept (a Bool to warp_active_sum, a float to a bit op, a vector to a vote).',
  why: 'warp_active_sum/product/min/max and the prefixes reject booleans, warp_active_bit_and/or/xor require integral operands, the vote and ballot ops take a scalar Expr<bool> only, and the warp_read_lane lane index must be integral, so the kernel does not compile (000 §1.2, §7 rule 7).',
  messages: {
    bad: '{{op}} does not accept a {{type}} operand (`{{arg}}`); {{hint}}.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const c of m.callsNamed(/^warp_/)) {
          if (c.receiver || !c.args.length || !m.inDeviceCode(c.node)) continue;
          let arg = c.args[0];
          let bad: string | null = null;
          let hint = '';
          if (ARITH.test(c.name)) {
            const t = operandType(m, arg);
            if (t?.base === 'bool') {
              bad = t.shown;
              hint = t.vector ? 'convert it first (`make_uint' + (/\d$/.exec(t.shown)?.[0] ?? '') + '(…)`/`cast`)' : c.name.startsWith('warp_prefix') ? 'use warp_prefix_count_bits for booleans' : 'use warp_active_count_bits to count true lanes, or warp_active_any/all';
            }
          } else if (BITS.test(c.name)) {
            const t = operandType(m, arg);
            if (t?.base === 'float') {
              bad = t.shown;
              hint = 'reinterpret or convert it to an integer first (`as<uint>(x)` / `cast<uint>(x)`)';
            }
          } else if (VOTES.test(c.name)) {
            const t = operandType(m, arg);
            if (t?.vector) {
              bad = t.shown;
              hint = t.base === 'bool' ? 'vote on one component or reduce it first (`any(v)` / `all(v)`)' : 'pass a scalar comparison (`v.x > 0.f`)';
            }
          } else if (c.name === 'warp_read_lane' && c.args.length === 2) {
            arg = c.args[1];
            const t = operandType(m, arg);
            if (t && (t.base === 'float' || t.vector)) {
              bad = t.shown;
              hint = 'the lane index must be an integral scalar (`cast<uint>(…)`)';
            }
          }
          if (!bad) continue;
          const argText = arg.text.replace(/\s+/g, ' ');
          ctx.report({ node: c.node, messageId: 'bad', data: { op: c.name, type: bad, arg: argText.length > 40 ? argText.slice(0, 37) + '...' : argText, hint } });
        }
      },
    };
  },
});

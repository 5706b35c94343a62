import { cudaModel, type CudaFunction } from '../../../src/analysis/cuda.js';
import { castOf, declaredType, lineRewritable, unparenC } from '../../../src/analysis/precision-kernel.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

type Side = 'min' | 'max';
type Rounding = 'rn' | 'rd' | 'ru' | 'rz';

/** Which end of the box a name holds; null when the name does not say (`v`, `bx0`). */
function sideOf(name: string): Side | null {
  const words = name.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase().split(/[_\d]+/);
  const min = words.some((w) => /^(min\w*|lo|low|lower|left|bottom|west|south)$/.test(w) || /min$/.test(w));
  const max = words.some((w) => /^(max\w*|hi|high|upper|right|top|east|north)$/.test(w) || /max$/.test(w));
  return min === max ? null : min ? 'min' : 'max';
}

const MINMAX_CALL = /^(fmin|fmax|min|max|::min|::max|std::min|std::max)$/;
/** Bounds drawn on screen tolerate a half-ulp shift (catalog do-not-flag "bounds used only for display"). */
const DISPLAY = /display|render|draw|screen|viewport|pixel|label/i;

/** Is `v` an fp64 value of `fn`: a `double` scalar, an element of a `double*`, or fmin/fmax over one? */
function isDouble(fn: CudaFunction, v: SyntaxNode): boolean {
  const u = unparenC(v);
  if (!u) return false;
  if (u.type === 'identifier') {
    const t = declaredType(fn, u.text);
    return !!t && !t.pointer && t.type.replace(/^const\s+/, '') === 'double';
  }
  if (u.type === 'subscript_expression') {
    const base = unparenC(u.childForFieldName('argument'));
    const t = base?.type === 'identifier' ? declaredType(fn, base.text) : null;
    return !!t && t.pointer && t.type.replace(/^const\s+/, '') === 'double';
  }
  if (u.type === 'call_expression') {
    const f = u.childForFieldName('function')?.text ?? '';
    if (f === '__ldg') return true;
    return MINMAX_CALL.test(f) && (u.childForFieldName('arguments')?.namedChildren ?? []).some((a) => isDouble(fn, a));
  }
  return false;
}

/** Side of a stored value: the value's own name, the min/max call computing it, else the output's name. */
function sideOfValue(v: SyntaxNode, out: string): Side | null {
  const u = unparenC(v);
  if (u?.type === 'call_expression') {
    const f = u.childForFieldName('function')?.text ?? '';
    if (MINMAX_CALL.test(f)) return /min/.test(f) ? 'min' : 'max';
  }
  const fromValue = u?.type === 'identifier' ? sideOf(u.text) : null;
  return fromValue ?? sideOf(out);
}

interface Site {
  node: SyntaxNode;
  rhs: SyntaxNode;
  value: SyntaxNode;
  side: Side;
  fn: string;
}

function analyse(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const bounds = new RegExp(alternation(ctx.config.vocab.bounds_kernel_names), 'i');
  const sites: Site[] = [];
  for (const fn of m.functions) {
    if (!(fn.isKernel || fn.isDevice) || !fn.body || !bounds.test(fn.name) || DISPLAY.test(fn.name)) continue;
    const assigns = fn.body.descendantsOfType('assignment_expression');
    for (const a of assigns) {
      if (a.childForFieldName('operator')?.text !== '=') continue;
      const left = a.childForFieldName('left');
      const base = left?.type === 'subscript_expression' ? unparenC(left.childForFieldName('argument')) : left?.type === 'pointer_expression' ? unparenC(left.childForFieldName('argument')) : null;
      if (base?.type !== 'identifier' || DISPLAY.test(base.text)) continue;
      const out = declaredType(fn, base.text);
      // Only a `float*` output narrows; fp64 outputs keep every bit.
      if (!out?.pointer || out.type.replace(/^const\s+/, '') !== 'float') continue;
      const rhs = unparenC(a.childForFieldName('right'));
      if (!rhs) continue;
      let value: SyntaxNode | null = null;
      let rounding = 'rn' as Rounding;
      const cast = castOf(rhs);
      if (cast) {
        if (cast.type !== 'float') continue;
        value = cast.value;
      } else if (rhs.type === 'call_expression') {
        const f = /^__double2float_(rn|rd|ru|rz)$/.exec(rhs.childForFieldName('function')?.text ?? '');
        if (!f) continue;
        rounding = f[1] as Rounding;
        value = rhs.childForFieldName('arguments')?.namedChildren[0] ?? null;
      } else if (rhs.type === 'identifier' || rhs.type === 'subscript_expression') {
        // Implicit double → float conversion in the store: also round-to-nearest.
        value = rhs;
      }
      if (!value || !isDouble(fn, value)) continue;
      const side = sideOfValue(value, base.text);
      if (!side) continue;
      // `_rd` for the min and `_ru` for the max are the conservative roundings (003 §6.3); `_rz` is
      // conservative for one sign only.
      if ((side === 'min' && rounding === 'rd') || (side === 'max' && rounding === 'ru')) continue;
      // A later `out[i] = nextafterf(out[i], …)` on the same element widens it explicitly.
      const target = left!.text;
      if (assigns.some((b) => b.startIndex > a.startIndex && b.childForFieldName('left')?.text === target && /nextafterf|__double2float_r[du]|__f(add|sub)_r[du]/.test(b.childForFieldName('right')?.text ?? ''))) continue;
      sites.push({ node: a, rhs, value, side, fn: fn.name });
    }
  }
  // One suggestion per line rewrites every narrowed store on it (`bx0[i] = …;  bx1[i] = …;`).
  const byRow = new Map<number, Site[]>();
  for (const s of sites) byRow.set(s.node.startPosition.row, [...(byRow.get(s.node.startPosition.row) ?? []), s]);
  for (const [, row] of byRow) {
    const line = ctx.linesOf(row[0].node);
    let fixed = line;
    let rewritable = row.every((s) => s.node.startPosition.row === s.node.endPosition.row) && lineRewritable(ctx, row[0].node, line);
    for (const s of [...row].sort((a, b) => b.rhs.startPosition.column - a.rhs.startPosition.column)) {
      const from = s.rhs.startPosition.column;
      const to = from + s.rhs.text.length;
      if (fixed.slice(from, to) !== s.rhs.text) rewritable = false;
      else fixed = fixed.slice(0, from) + conservative(s) + fixed.slice(to);
    }
    row.forEach((s, i) => {
      ctx.report({
        node: s.node,
        messageId: 'roundToNearest',
        data: { code: oneLine(s.node.text), fixed: `${s.node.childForFieldName('left')!.text} = ${conservative(s)}`, fn: s.fn },
        fix: {
          description: 'Round the min down (`__double2float_rd`) and the max up (`__double2float_ru`) so the fp32 box still contains the fp64 one.',
          ...(rewritable && i === 0 ? { replace: { from: row[0].node, text: fixed } } : {}),
        },
      });
    });
  }
}

function conservative(s: Site): string {
  return `__double2float_${s.side === 'min' ? 'rd' : 'ru'}(${s.value.text})`;
}

function oneLine(t: string): string {
  const s = t.replace(/\s+/g, ' ').trim();
  return s.length > 70 ? `${s.slice(0, 67)}…` : s;
}

export default defineCheck({
  id: 'precision/nonconservative-fp32-bounds',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['nvrtc-in-python', 'cuda'],
  citation:
    '003 §6.3 When fp32 Is Sufficient ("Coarse spatial filters … false negatives are not [OK] — use conservative fp32 rounding for bounds: round min DOWN, max UP")',
  summary: 'fp64 bounds narrowed to a float* output with round-to-nearest instead of min-down / max-up.',
  why: 'fp32 keeps ~7 decimal digits (003 §6.3), so at 1e6-magnitude coordinates round-to-nearest can move a box edge inward by up to ~0.03 units, and a coarse filter built on it drops true candidates, which 003 §6.3 does not allow (false positives OK, false negatives not).',
  messages: {
    roundToNearest:
      'Bounds are narrowed to fp32 with round-to-nearest (`{{code}}` in {{fn}}); min must round down and max round up (`{{fixed}}`), or the coarse filter can drop true candidates.',
  },
  fix: 'safe',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

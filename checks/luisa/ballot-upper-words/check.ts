import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const WORD: Record<string, number> = { y: 1, z: 2, w: 3 };
/** `warp_lane_count() > 32u`, `>= 64u`, `device.compute_warp_size() > 32`: the only code where .y/.z/.w hold lanes. */
const WIDE_GUARD = /(warp_lane_count|compute_warp_size)\s*\(\s*\)\s*(>\s*(32|48|63)u?\b|>=\s*(33|64)u?\b)|\b(32|48|63)u?\s*<\s*(\w+\.)?(warp_lane_count|compute_warp_size)\s*\(/;

/** Is `n` the value of a `warp_active_bit_mask(...)` call, directly or through a local initialized with one? */
function ballotSource(m: LuisaModel, n: SyntaxNode | null): SyntaxNode | null {
  const u = unparen(n);
  if (!u) return null;
  if (u.type === 'call_expression' && u.childForFieldName('function')?.text === 'warp_active_bit_mask') return u;
  if (u.type === 'identifier') {
    const d = m.declOf(u.text, u);
    const v = unparen(d?.value ?? null);
    if (v?.type === 'call_expression' && v.childForFieldName('function')?.text === 'warp_active_bit_mask') return v;
  }
  return null;
}

function guardedWide(m: LuisaModel, n: SyntaxNode): boolean {
  for (let cur = n.parent; cur; cur = cur.parent) {
    if (cur.type === 'lambda_expression' && m.bodyOf(n)?.node.id === cur.id) break;
    if (cur.type !== 'if_statement') continue;
    const cond = cur.childForFieldName('condition');
    const alt = cur.childForFieldName('alternative');
    if (cond && !(alt && alt.startIndex <= n.startIndex && n.endIndex <= alt.endIndex) && WIDE_GUARD.test(cond.text)) return true;
  }
  return false;
}

export default defineCheck({
  id: 'luisa/ballot-upper-words',
  pass: 3,
  severity: 'low',
  kind: 'portability',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §1.2 Active-Lane Reductions (warp_active_bit_mask: on CUDA packed as uint4(ballot,0,0,0), ".y/.z/.w are only meaningful for subgroup widths above 32")',
  summary: '.y/.z/.w of warp_active_bit_mask(...), which are always 0 on 32-lane backends.',
  why: 'warp_active_bit_mask returns a uint4 ballot that CUDA packs as uint4(ballot, 0, 0, 0), so on 32-lane backends (CUDA, Metal) only .x carries lanes and .y/.z/.w are only meaningful for subgroups wider than 32 (000 §1.2).',
  messages: {
    upper: '.{{c}} of warp_active_bit_mask is always 0 on 32-lane backends (CUDA, Metal) (`{{code}}`); use .x only, or guard on warp_lane_count() > {{lanes}}u.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.callsNamed('warp_active_bit_mask').length) return;
        for (const fe of m.source.root.descendantsOfType(['field_expression', 'subscript_expression'])) {
          let word: number | undefined;
          let c = '';
          let base: SyntaxNode | null;
          if (fe.type === 'field_expression') {
            c = fe.childForFieldName('field')?.text ?? '';
            word = WORD[c];
            base = fe.childForFieldName('argument');
          } else {
            const idx = fe.childForFieldName('indices')?.namedChildren[0] ?? fe.childForFieldName('index');
            const v = m.constValue(idx);
            word = v !== null && v >= 1 && v <= 3 ? v : undefined;
            c = word ? 'yzw'[word - 1] : '';
            base = fe.childForFieldName('argument');
          }
          if (!word || !m.inDeviceCode(fe)) continue;
          if (!ballotSource(m, base)) continue;
          // A kernel pinned to a 64- or 128-wide subgroup really has lanes in the upper words.
          const pinned = m.kernelOf(fe)?.warpSize?.value ?? null;
          if (pinned !== null && pinned > 32 * word) continue;
          if (guardedWide(m, fe)) continue;
          ctx.report({ node: fe, messageId: 'upper', data: { c, code: quote(fe), lanes: 32 * word } });
        }
      },
    };
  },
});

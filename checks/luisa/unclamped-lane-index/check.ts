import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const LANE_CALL = /^(warp_lane_id|thread_x)$/;
const LANE_NAME = /^(lane|lane_id|lane_idx|laneid|lane_index|warp_lane)$/i;

/** `warp_lane_id()`, `thread_x()`, `thread_id().x`, or a local/parameter holding the lane. */
function isLane(m: LuisaModel, n: SyntaxNode | null, depth = 0): boolean {
  const u = unparen(n);
  if (!u || depth > 3) return false;
  if (u.type === 'call_expression') return LANE_CALL.test(u.childForFieldName('function')?.text ?? '') && (u.childForFieldName('arguments')?.namedChildren.length ?? 0) === 0;
  if (u.type === 'field_expression') return u.childForFieldName('field')?.text === 'x' && /^thread_id\s*\(\s*\)$/.test(u.childForFieldName('argument')?.text ?? '');
  if (u.type === 'identifier') {
    const d = m.declOf(u.text, u);
    if (d?.value && !d.param) return isLane(m, d.value, depth + 1);
    return LANE_NAME.test(u.text);
  }
  return false;
}

/** `lane + k` (k > 0 or a variable offset): the shape 000 §3.7 step 3 rule 2 asks to clamp. */
function laneOffset(m: LuisaModel, e: SyntaxNode | null): { lane: SyntaxNode; offset: SyntaxNode } | null {
  const u = unparen(e);
  if (u?.type !== 'binary_expression' || u.childForFieldName('operator')?.type !== '+') return null;
  const l = u.childForFieldName('left');
  const r = u.childForFieldName('right');
  if (!l || !r) return null;
  for (const [lane, offset] of [[l, r], [r, l]] as const) {
    if (!isLane(m, lane) || isLane(m, offset)) continue;
    const k = m.constValue(offset);
    if (k !== null && k <= 0) return null;
    return { lane, offset };
  }
  return null;
}

const squash = (s: string): string => s.replace(/\s+/g, '');

export default defineCheck({
  id: 'luisa/unclamped-lane-index',
  pass: 3,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §3.7 step 3, rule 2 ("Clamp out-of-range lane indices"); 000 §7 rule 13',
  summary: 'warp_read_lane source index lane + k that can run past warp_lane_count() - 1.',
  why: 'For the top k lanes of a warp, lane + k is past warp_lane_count() - 1, and an out-of-range source lane is not defined across backends (CUDA wraps it modulo the width, HLSL WaveReadLaneAt leaves it undefined); clamping with min(lane + k, warp_lane_count() - 1u) is free because those lanes discard the result (000 §3.7 step 3 rule 2).',
  messages: {
    unclamped: 'warp_read_lane source index `{{index}}` can exceed warp_lane_count() - 1; clamp it with min({{index}}, warp_lane_count() - 1u).',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const c of m.callsNamed('warp_read_lane')) {
          if (c.receiver || c.args.length !== 2 || !m.inDeviceCode(c.node)) continue;
          const idx = c.args[1];
          let shape = laneOffset(m, idx);
          // `UInt src_lane = lane_id + offset; … warp_read_lane(v, src_lane)`.
          let via: string | null = null;
          const ui = unparen(idx);
          if (!shape && ui?.type === 'identifier') {
            const d = m.declOf(ui.text, ui);
            if (d?.value && !d.param) {
              shape = laneOffset(m, d.value);
              via = ui.text;
            }
          }
          if (!shape) continue;
          if (fixedUp(m, c.node, via ?? squash(unparen(idx)!.text))) continue;
          const index = via ?? unparen(idx)!.text.replace(/\s+/g, ' ');
          let fix: { description: string; replace?: { from: SyntaxNode; text: string } } = { description: `Clamp the source lane: \`min(${index}, warp_lane_count() - 1u)\`.` };
          // With more than one warp per block thread_x() is not the lane, and clamping it to the last lane
          // would be wrong for warps 1..n (luisa/thread-x-as-lane-index): no suggestion then.
          const threadBased = /\bthread_(x|id)\s*\(/.test(shape.lane.text) || (shape.lane.type === 'identifier' && /\bthread_(x|id)\s*\(/.test(m.declOf(shape.lane.text, shape.lane)?.value?.text ?? ''));
          const oneWarp = (m.kernelOf(c.node)?.blockSize?.product ?? Infinity) <= 32;
          if (!via && c.node.startPosition.row === c.node.endPosition.row && (!threadBased || oneWarp)) {
            const line = m.lineText(idx);
            const a = idx.startPosition.column;
            const b = idx.endPosition.column;
            if (line !== null && line.slice(a, b) === idx.text) {
              fix = { ...fix, replace: { from: c.node, text: `${line.slice(0, a)}min(${unparen(idx)!.text}, warp_lane_count() - 1u)${line.slice(b)}` } };
            }
          }
          ctx.report({ node: c.node, messageId: 'unclamped', data: { index }, fix });
        }
      },
    };
  },
});

/**
 * The 000 §2.5 ShuffleDown fix-up: right after the read, a `$if` on the same source index
 * (`$if (src_lane > valid_item) { temp = result; };`) replaces the out-of-range lanes' values.
 */
function fixedUp(m: LuisaModel, call: SyntaxNode, index: string): boolean {
  let stmt: SyntaxNode | null = call;
  while (stmt && stmt.parent && stmt.parent.type !== 'compound_statement') stmt = stmt.parent;
  let next = stmt?.nextNamedSibling ?? null;
  for (let i = 0; i < 3 && next; i++, next = next.nextNamedSibling) {
    if (next.type !== 'if_statement' || !m.isDeviceBranch(next)) continue;
    const cond = m.conditionOf(next);
    if (!cond) continue;
    const t = squash(cond.text);
    if (/[<>]/.test(t) && (new RegExp(`\\b${index.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w])`).test(t) || t.includes(index))) return true;
  }
  return false;
}

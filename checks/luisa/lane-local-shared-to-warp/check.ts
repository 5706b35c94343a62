import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { contains, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const LANE_CALL = /^warp_lane_id\s*\(\s*\)$/;
const THREAD_CALL = /^(thread_x\s*\(\s*\)|thread_id\s*\(\s*\)\s*\.\s*x)$/;

/** `warp_lane_id()` (or, in a one-warp block, `thread_x()`), or a local initialised from one. */
function isLane(m: LuisaModel, n: SyntaxNode | null | undefined, oneWarp: boolean, depth = 0): boolean {
  const e = unparen(n);
  if (!e || depth > 3) return false;
  if (LANE_CALL.test(e.text) || (oneWarp && THREAD_CALL.test(e.text))) return true;
  if (e.type === 'identifier') {
    const d = m.declOf(e.text, e);
    return !!d && !d.param && isLane(m, d.value, oneWarp, depth + 1);
  }
  return false;
}

/**
 * A lane-local slot: the lane, optionally ± or XOR a constant (or, in a one-warp block, a uniform
 * offset such as a Hillis–Steele distance), clamped with min/max or wrapped with %.
 */
function laneSlot(m: LuisaModel, n: SyntaxNode | null | undefined, oneWarp: boolean, depth = 0): boolean {
  const e = unparen(n);
  if (!e || depth > 6) return false;
  if (isLane(m, e, oneWarp)) return true;
  const fixed = (x: SyntaxNode | null): boolean => !!x && (m.constValue(x) !== null || /warp_lane_count\s*\(\s*\)/.test(x.text) || (oneWarp && !m.laneDependent(x)));
  if (e.type === 'binary_expression') {
    const op = e.childForFieldName('operator')?.type ?? '';
    const l = e.childForFieldName('left');
    const r = e.childForFieldName('right');
    if (op === '+' || op === '^') return (laneSlot(m, l, oneWarp, depth + 1) && fixed(r)) || (laneSlot(m, r, oneWarp, depth + 1) && fixed(l));
    if (op === '-' || op === '%' || op === '&') return laneSlot(m, l, oneWarp, depth + 1) && fixed(r);
    return false;
  }
  if (e.type === 'call_expression' && /^(min|max|clamp)$/.test(e.childForFieldName('function')?.text ?? '')) {
    const args = e.childForFieldName('arguments')?.namedChildren ?? [];
    return args.some((a) => laneSlot(m, a, oneWarp, depth + 1)) && args.every((a) => laneSlot(m, a, oneWarp, depth + 1) || fixed(a));
  }
  return false;
}

/** `warp_base + lane`: a per-warp segment of a multi-warp block, the warp base being the same in every lane of the warp. */
function segmentSlot(m: LuisaModel, n: SyntaxNode | null | undefined): boolean {
  const e = unparen(n);
  if (e?.type !== 'binary_expression' || e.childForFieldName('operator')?.type !== '+') return false;
  const l = e.childForFieldName('left');
  const r = e.childForFieldName('right');
  const base = (x: SyntaxNode | null): boolean => !!x && m.laneDependent(x) && !m.warpDivergent(x);
  return (base(l) && laneSlot(m, r, false)) || (base(r) && laneSlot(m, l, false));
}

export default defineCheck({
  id: 'luisa/lane-local-shared-to-warp',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §3.7 Shared-Memory Cross-Lane Communication → Warp Intrinsics (Generic Recipe, steps 1–3); 000 §7 rule 12; 000 §10.7 (single-warp blocks)',
  summary: 'Shared<T> used only to exchange values between the lanes of one warp.',
  why: 'A lane-to-lane exchange through Shared<T> costs a store, a block-wide sync_block() and a load, while warp_read_lane / warp_active_bit_mask / warp_prefix_sum are usually a single instruction with no barrier and no shared capacity (HLSL caps shared memory at 32 KiB per group), and 000 §5.7 measured the one-warp blocks such kernels run in 1.8–2.1× slower than 64+ threads (000 §3.7, §3.8, §7 rule 12).',
  messages: {
    laneLocal: '`Shared<{{type}}> {{name}}` is used only to exchange values between lanes of one warp ({{accesses}} accesses, each at a lane-indexed or broadcast slot{{scope}}); warp intrinsics (warp_read_lane, warp_active_bit_mask, warp_prefix_sum) need no barrier and no shared capacity{{barriers}}.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const d of m.shared) {
          if (!d.body || !d.name || d.viaNew) continue;
          const kernel = m.kernelOf(d.node);
          if (!kernel || kernel.kind === 'Callable') continue;
          const threads = kernel.blockSize?.product ?? null;
          const width = kernel.warpSize?.value ?? null;
          // Only a pinned warp width makes "the block is one warp" or "32 slots per warp" exact.
          if (width === null || threads === null) continue;
          const oneWarp = threads <= width;
          const accesses = m.sharedAccesses(d);
          if (!accesses.some((a) => a.kind === 'write' || a.kind === 'atomic') || !accesses.some((a) => a.kind === 'read')) continue;
          // The array must not escape into a helper (a callable argument, a pointer): those accesses are invisible.
          const escapes = d.body.body.descendantsOfType('identifier').some((id) => id.text === d.name && !contains(d.node, id) && !accesses.some((a) => contains(a.node, id)));
          if (escapes) continue;
          let laneIndexed = 0;
          const local = accesses.every((a) => {
            if (!a.index) return false;
            if (m.constValue(a.index) !== null) return oneWarp; // a broadcast slot is only warp-local when the block is one warp
            const ok = oneWarp ? laneSlot(m, a.index, true) : segmentSlot(m, a.index);
            if (ok) laneIndexed++;
            return ok;
          });
          if (!local || (!oneWarp && !laneIndexed)) continue;
          const syncs = m.callsIn(kernel.body, 'sync_block').filter((c) => !c.receiver).length;
          ctx.report({
            node: d.node,
            messageId: 'laneLocal',
            data: {
              type: d.elemType,
              name: d.name,
              accesses: accesses.length,
              scope: oneWarp ? `, in a ${threads}-thread block of one ${width}-lane warp` : ', each warp in its own segment',
              barriers: syncs ? ', and the sync_block() calls that only publish it can then go' : '',
            },
          });
        }
      },
    };
  },
});

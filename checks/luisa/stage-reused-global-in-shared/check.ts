import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** The HLSL codegen asserts ≤ 32 KiB of groupshared per block (000 §4.7 rule 6). */
const SHARED_BUDGET = 32768;
const LOOP_TYPES = ['for_statement', 'while_statement', 'for_range_loop', 'if_statement'];

function singleThread(m: LuisaModel, cond: SyntaxNode | null): boolean {
  const c = unparen(cond);
  if (c?.type !== 'binary_expression') return false;
  const op = c.childForFieldName('operator')?.type;
  const l = c.childForFieldName('left');
  const r = c.childForFieldName('right');
  if (op === '&&' || op === '&') return singleThread(m, l) || singleThread(m, r);
  return op === '==' && ((m.laneDependent(l) && m.constValue(r) !== null) || (m.laneDependent(r) && m.constValue(l) !== null));
}

function elemBytes(type: string): number {
  if (/double|Double|ulong|ULong|slong|SLong/.test(type)) return /[234]\b|[234]>/.test(type) ? 32 : 8;
  const v = /(?:float|int|uint|Float|Int|UInt)([234])\b/.exec(type);
  return v ? 4 * (v[1] === '3' ? 4 : Number(v[1])) : 4;
}

export default defineCheck({
  id: 'luisa/stage-reused-global-in-shared',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §4.6 Shared as Staging / Scratch for Reuse & Exchange; 000 §4.2 When to prefer shared memory ("Global data reused by many threads in a block: Stage global → shared once")',
  summary: 'Every thread of a block re-reads the same global range in a device loop.',
  why: 'When every thread of a block reads the same global elements, staging them into Shared<T> once per block and sync_block() turns block_size global reads of each element into one (000 §4.2, §4.6), within the 32 KiB HLSL groupshared limit.',
  messages: {
    reused: 'Every thread re-reads the same global elements in a loop (`{{code}}`: base `{{base}}` is the same for the whole block); stage them into Shared<T> once per block and sync_block(), then read the tile in the loop.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (m.testOrBench) return;
        const sharedNames = new Set(m.shared.map((s) => s.name));
        for (const b of m.bodies) {
          if (b.kind === 'Callable') continue;
          const threads = b.blockSize?.product ?? null;
          // One warp per block: a warp_read_lane broadcast beats a shared round trip.
          if (threads !== null && threads <= Math.max(32, b.warpSize?.value ?? 0)) continue;
          for (const loop of b.body.descendantsOfType(LOOP_TYPES)) {
            if (!m.isDeviceLoop(loop) || m.bodyOf(loop) !== b) continue;
            const parts = m.loopParts(loop);
            if (!parts?.variable || !parts.end) continue;
            const k = parts.variable;
            if (m.laneDependent(parts.end) || m.laneDependent(parts.start)) continue;
            if (m.deviceBranchesAround(loop).some((br) => !br.inElse && singleThread(m, br.condition))) continue;
            const start = parts.start ? m.constValue(parts.start) : 0;
            const end = m.constValue(parts.end);
            const reported = new Set<string>();
            for (const r of m.callsIn(loop, 'read')) {
              if (!r.receiver || m.deviceLoopsAround(r.node)[0]?.id !== loop.id) continue;
              const recv = unparen(r.receiver)!.text.replace(/^\*|->$/g, '');
              if (sharedNames.has(recv) || reported.has(recv)) continue;
              const decl = m.declOf(recv, r.node);
              if (!decl || !/(Buffer|Image)/.test(decl.type)) continue;
              const idx = unparen(r.args[0]);
              if (!idx) continue;
              let base: SyntaxNode | null = null;
              if (idx.type === 'identifier' && idx.text === k) base = null;
              else if (idx.type === 'binary_expression' && idx.childForFieldName('operator')?.type === '+') {
                const l = unparen(idx.childForFieldName('left'));
                const rr = unparen(idx.childForFieldName('right'));
                if (rr?.text === k) base = l;
                else if (l?.text === k) base = rr;
                else continue;
                if (!base || m.laneDependent(base)) continue;
              } else continue;
              // Larger than the HLSL groupshared floor: no single stage fits.
              if (end !== null && start !== null && (end - start) * elemBytes(decl.type) > SHARED_BUDGET) continue;
              reported.add(recv);
              ctx.report({
                node: r.node,
                messageId: 'reused',
                data: { code: quote(r.node), base: base ? quote(base) : '0' },
                fix: { description: '`Shared<T> tile{N}; tile[thread_x()] = buf.read(base + thread_x()); sync_block();` (loop over tiles when N exceeds the block), then read `tile[k]` inside the loop.' },
              });
            }
          }
        }
      },
    };
  },
});

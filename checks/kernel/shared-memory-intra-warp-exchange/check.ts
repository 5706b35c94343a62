import { cudaModel } from '../../../src/analysis/cuda.js';
import { laneEvaluator, type LaneValue } from '../../../src/analysis/lanes.js';
import { quoteCode, smemFacts } from '../../../src/analysis/smem.js';
import { calleePath, lastName, unparen, walk } from '../../../src/analysis/syntax.js';
import { constantBlockOf } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

interface Access { node: SyntaxNode; outer: string[]; last: SyntaxNode; write: boolean }

const BARRIERS = /^(__syncthreads|__syncwarp)$/;

/** `s[i]` / `s[w][i]`: the outermost subscript over `name`, its leading index texts and its last index. */
function accessOf(id: SyntaxNode): Access | null {
  const idx: SyntaxNode[] = [];
  let cur = id;
  while (cur.parent?.type === 'subscript_expression' && (cur.parent.childForFieldName('argument') ?? cur.parent.namedChildren[0])?.id === cur.id) {
    cur = cur.parent;
    const ix = cur.childForFieldName('indices') ?? cur.childForFieldName('index') ?? cur.namedChildren[1];
    const e = ix?.type === 'subscript_argument_list' ? ix.namedChildren[0] : ix;
    if (!e) return null;
    idx.push(e);
  }
  if (!idx.length) return null;
  let p = cur.parent;
  while (p?.type === 'parenthesized_expression') p = p.parent;
  const write = (p?.type === 'assignment_expression' && unparen(p.childForFieldName('left'))?.id === cur.id) || p?.type === 'update_expression';
  if (p?.type === 'pointer_expression') return null;
  return { node: cur, outer: idx.slice(0, -1).map((e) => e.text.replace(/\s+/g, '')), last: idx[idx.length - 1]!, write };
}

export default defineCheck({
  id: 'kernel/shared-memory-intra-warp-exchange',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §5.2 Shuffle for Intra-Warp Communication ("Always prefer shuffle for intra-warp operations"); 004 §H3.5 Efficient Intrawarp Communication with Warp Intrinsics ("Only use block-level shared memory and __syncthreads() if the cooperation truly spans multiple warps")',
  summary: 'Shared memory and a barrier used to pass values between lanes of one warp.',
  why: 'A shuffle moves a register between the 32 lanes of a warp in one instruction with no barrier, while a shared-memory exchange costs a store, a barrier and a load per value (003 §5.2: always prefer shuffle for intra-warp operations; 004 §H3.5).',
  messages: {
    exchange: 'Shared memory `{{array}}` plus a barrier (`{{barrier}}`) is used to exchange values between lanes of the same warp (written at `{{write}}`, read at `{{read}}`{{figure}}); use __shfl_*_sync (register-to-register, no barrier).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const smem = ctx.get(smemFacts);
        for (const d of smem.decls) {
          const f = d.fn;
          if (!f?.body || d.dynamic) continue;
          const b = constantBlockOf(ctx.source, ctx.config, f);
          const lb = f.launchBounds ? m.constValue(f.launchBounds.maxThreads) : null;
          // Without a known block, any multiple of 32 (threadIdx.x = lane + 32·warp) is assumed.
          const bx = b && b[1] * b[2] === 1 ? b[0] : lb !== null && lb <= 32 ? lb : 256;
          if (bx % 32 !== 0 && 32 % bx !== 0) continue;
          const ev = laneEvaluator(m, f, { bx, by: b ? b[1] : null });
          const accesses: Access[] = [];
          let escapes = false;
          for (const id of f.body.descendantsOfType('identifier')) {
            if (id.text !== d.name || id.startIndex < d.node.endIndex) continue;
            const a = accessOf(id);
            if (!a) { escapes = true; break; }
            accesses.push(a);
          }
          if (escapes) continue;
          const writes = accesses.filter((a) => a.write);
          const reads = accesses.filter((a) => !a.write);
          if (!writes.length || !reads.length) continue;
          // Leading indices (the warp's row of a `[warps][32]` array) must be the same warp-uniform expression everywhere.
          const outer = accesses[0]!.outer.join('|');
          if (accesses.some((a) => a.outer.join('|') !== outer)) continue;
          if (accesses[0]!.outer.some((t) => /threadIdx\.x(?!\s*\/|>>)/.test(t) && !/\/\s*(32|warpSize)|>>\s*5/.test(t))) continue;
          const vals = new Map<number, LaneValue | null>();
          // A one-warp block has no warp offset: threadIdx.x is the lane itself.
          const oneWarp = (b ? b[0] * b[1] * b[2] : lb) === 32;
          for (const a of accesses) {
            const v = ev.eval(a.last);
            vals.set(a.node.id, v && oneWarp && v.mod % 32 === 0 ? { vals: v.vals, mod: 0 } : v);
          }
          const w0 = vals.get(writes[0]!.node.id);
          // Every lane writes its own slot: distinct values, one mapping for every write.
          if (!w0 || new Set(w0.vals).size !== 32) continue;
          if (writes.some((w) => { const v = vals.get(w.node.id); return !v || v.mod !== w0.mod || v.vals.join() !== w0.vals.join(); })) continue;
          const slots = new Set(w0.vals);
          // Every read stays inside the slots its own warp wrote (a constant lane, lane ± k wrapped, lane ^ k).
          let inWarp = true;
          let exch: Access | null = null;
          for (const r of reads) {
            const v = vals.get(r.node.id);
            if (!v || v.mod !== w0.mod || !v.vals.every((x) => slots.has(x))) { inWarp = false; break; }
            if (!exch && v.vals.join() !== w0.vals.join()) exch = r;
          }
          if (!inWarp || !exch) continue;
          // A barrier between the first write and the exchanging read.
          const first = Math.min(...writes.map((w) => w.node.startIndex));
          const barrier = [...walk(f.body)].find((n) => n.type === 'call_expression' && BARRIERS.test(lastName(calleePath(n.childForFieldName('function'))) ?? '')
            && n.startIndex > first && n.startIndex < exch!.node.startIndex);
          if (!barrier) continue;
          const figure = b ? `; the ${b[0] * b[1] * b[2]}-thread blocks it is launched with never read another warp's slot` : '';
          ctx.report({
            node: exch.node,
            messageId: 'exchange',
            data: {
              array: d.name,
              barrier: quoteCode(barrier.text, 30),
              write: quoteCode(writes[0]!.node.text, 40),
              read: quoteCode(exch.node.text, 40),
              figure,
            },
          });
        }
      },
    };
  },
});

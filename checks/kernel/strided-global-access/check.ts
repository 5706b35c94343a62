import { cudaModel, type CudaFunction } from '../../../src/analysis/cuda.js';
import { quote } from '../../../src/analysis/syntax.js';
import { uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { UNCOALESCED } from '../../../src/config/costs.js';
import { alternation } from '../../../src/core/regex.js';

/** Consecutive threads of a warp differ by 1 in `threadIdx.x`; only x-linear indices decide coalescing. */
const INT_CAST = /\(\s*(?:size_t|long long|unsigned long long|int64_t|uint64_t|int|unsigned|unsigned int|long|index_t|IndexType|size_type)\s*\)|static_cast\s*<[^<>]*>/g;
/**
 * `threadIdx.x`, or `threadIdx.x` plus the block's first thread `blockIdx.x * blockDim.x`, in any order of the
 * sum and of the product and with integer casts (`threadIdx.x + blockDim.x * blockIdx.x`,
 * `(int64_t)blockIdx.x * blockDim.x + threadIdx.x`): the x-linear thread index.
 */
function isXLinear(text: string): boolean {
  const t = text.replace(INT_CAST, '').replace(/[\s()]/g, '');
  if (t === 'threadIdx.x') return true;
  const terms = t.split('+');
  if (terms.length !== 2) return false;
  const i = terms.indexOf('threadIdx.x');
  if (i < 0) return false;
  const prod = terms[1 - i].split('*').sort();
  return prod.length === 2 && prod[0] === 'blockDim.x' && prod[1] === 'blockIdx.x';
}
const ELEM: Record<string, number> = { double: 8, float: 4, int: 4, unsigned: 4, 'unsigned int': 4, long: 8, 'long long': 8, int64_t: 8, int32_t: 4, uint32_t: 4, uint64_t: 8, half: 2, __half: 2, short: 2, char: 1, uint8_t: 1 };

function coordName(name: string, vocab: readonly string[]): boolean {
  return new RegExp(`^(d_)?(${alternation(vocab)})`, 'i').test(name);
}

/** Names of `fn` bound to the x-linear thread index: `gid = blockIdx.x*blockDim.x+threadIdx.x`, and grid-stride loop variables started from one. */
function linearNames(fn: CudaFunction): Set<string> {
  const out = new Set<string>();
  const body = fn.body!;
  for (let pass = 0; pass < 3; pass++) {
    for (const d of body.descendantsOfType('init_declarator')) {
      const name = d.childForFieldName('declarator')?.text;
      const v = d.childForFieldName('value')?.text.trim();
      if (!name || !v || !/^\w+$/.test(name)) continue;
      if (isXLinear(v) || out.has(v)) out.add(name);
    }
  }
  return out;
}

export default defineCheck({
  id: 'kernel/strided-global-access',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §4.1 Coalesced Access and SoA vs AoS (coalescing rules for CC 6.0+); 004 §H1.9 (improve coalescing for memory-bound kernels)',
  summary: 'Adjacent threads access global memory K elements apart.',
  why: 'A warp of consecutive 4- or 8-byte elements coalesces into 128-byte transactions, but a stride of N elements between adjacent threads uses only 1/N of the fetched 32-byte sectors (stride-2 = 50 %, at worst 1/32 = 3.1 %; 003 §4.1); ' + UNCOALESCED + '.',
  messages: {
    read: 'Global memory is read with a stride of {{k}} elements between adjacent threads (`{{code}}`); each warp load uses ~1/{{k}} of the fetched bandwidth{{figure}}.',
    write: 'Global memory is written with a stride of {{k}} elements between adjacent threads (`{{code}}`); each warp store uses ~1/{{k}} of the fetched bandwidth{{figure}}.',
    row: 'Each thread walks its own row of global memory (`{{code}}`), rows {{k}} elements apart: every warp access through that row pointer is strided by {{k}} elements and uses ~1/{{k}} of the fetched bandwidth{{figure}}; map adjacent threads to adjacent elements of a row.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        const vocab = ctx.config.vocab.coord_names;
        for (const f of m.functions) {
          if (!f.isKernel || !f.body) continue;
          // Only pointer parameters are global memory; `__shared__` tiles are memory/shared-bank-conflict's.
          const ptrs = new Map<string, string>();
          for (const p of f.params) {
            const decl = p.childForFieldName('declarator');
            if (decl?.type !== 'pointer_declarator') continue;
            const name = decl.descendantsOfType('identifier').pop()?.text;
            const type = p.childForFieldName('type')?.text.replace(/\bconst\b/g, '').trim() ?? '';
            if (name) ptrs.set(name, type);
          }
          const lin = linearNames(f);
          const hits: Array<{ node: SyntaxNode; arr: string; k: string; kNum: number | null; off: string }> = [];
          for (const s of f.body.descendantsOfType('subscript_expression')) {
            const arr = s.childForFieldName('argument')?.text ?? '';
            if (!ptrs.has(arr) || coordName(arr, vocab)) continue;
            const idxNode = s.childForFieldName('indices') ?? s.childForFieldName('index');
            const idx = idxNode?.text.replace(/^\[|\]$/g, '').trim() ?? '';
            // `T * K (+ c)` or `K * T (+ c)` where T is the x-linear index.
            const mm = /^\(?\s*(\w+(?:\.\w+)?)\s*\*\s*(\w+)\s*\)?\s*(?:\+\s*(.+))?$/.exec(idx) ?? null;
            if (!mm) continue;
            let [, a, b] = mm;
            const off = (mm[3] ?? '0').trim();
            if (!(lin.has(a!) || a === 'threadIdx.x')) [a, b] = [b, a];
            if (!(lin.has(a!) || a === 'threadIdx.x')) continue;
            const kNum = m.constValue(idxNode?.descendantsOfType('identifier').find((i) => i.text === b) ?? null) ?? (/^\d+$/.test(b!) ? Number(b) : null);
            if (kNum !== null && kNum < 2) continue;
            if (kNum === null) {
              // A runtime stride must be the same for every thread (a parameter or a uniform local).
              const id = idxNode!.descendantsOfType('identifier').find((i) => i.text === b);
              if (!id || !u.isWarpUniform(id)) continue;
            }
            // An offset that itself moves with the thread (`gid * n + threadIdx.x`) is a tile, not a stride.
            if (/threadIdx|\blane\b/.test(off) || lin.has(off)) continue;
            hits.push({ node: s, arr: arr!, k: b!, kNum, off });
          }
          for (const h of hits) {
            if (h.kNum !== null) {
              // Each thread consumes all K consecutive elements: L1 reuses the sectors (missing-vectorized-loads' case).
              const offs = new Set(hits.filter((o) => o.arr === h.arr && o.k === h.k).map((o) => o.off));
              if (Array.from({ length: h.kNum }, (_, c) => String(c)).every((c) => offs.has(c))) continue;
            }
            const isWrite = h.node.parent?.type === 'assignment_expression' && h.node.parent.childForFieldName('left')?.id === h.node.id;
            // `&p[gid * K]`: a per-thread row pointer, read or written later element by element.
            const isRow = h.node.parent?.type === 'pointer_expression' && h.node.parent.child(0)?.type === '&';
            const e = ELEM[ptrs.get(h.arr) ?? ''];
            let figure = '';
            if (h.kNum !== null && e) {
              // Sector view (32-byte sectors): once threads are ≥ 32 bytes apart each one costs a whole sector.
              const sectors = h.kNum * e >= 32 ? 32 : h.kNum * e;
              const pct = ((100 * 32 * e) / (sectors * 32)).toFixed(1);
              figure = ` (${e}-byte elements ${h.kNum * e} bytes apart: one warp access fetches ${sectors} 32-byte sectors for ${32 * e} useful bytes, ${pct} % of the sector traffic vs 100 % when contiguous)`;
            }
            ctx.report({
              node: h.node,
              messageId: isRow ? 'row' : isWrite ? 'write' : 'read',
              data: { k: h.kNum ?? h.k, code: quote(h.node), figure },
              fix: { description: 'Transpose the layout to SoA / column-major so adjacent threads touch adjacent elements, or stage the rows through shared memory so the global reads are contiguous.' },
            });
          }
        }
      },
    };
  },
});

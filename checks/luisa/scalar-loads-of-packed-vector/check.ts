import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Scalar element types: a record of K of them at `base * K + k` is a vector spread over K slots. */
const SCALAR = /^(float|int|uint|half|short|ushort|slong|ulong|double|int32_t|uint32_t|int16_t|uint16_t|luisa::half)$/;
const VECTOR_OF: Record<number, string> = { 2: '2', 3: '3', 4: '4' };

/** The vector type that holds a record: `float3` is padded to 16 bytes, so a 3-wide record costs a float4 slot either way. */
function vectorType(elem: string | null, stride: number): string {
  const t = elem && /^(float|int|uint|half|short|ushort|slong|ulong|double)$/.test(elem) ? elem : 'float';
  return stride === 3 ? `${t}3 or ${t}4 (both 16 bytes: one padding lane per record)` : `${t}${stride}`;
}

interface Access {
  call: SyntaxNode;
  kind: 'read' | 'write';
  recv: string;
  elem: string | null;
  base: string;
  stride: number;
  lane: number;
}

export default defineCheck({
  id: 'luisa/scalar-loads-of-packed-vector',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §5.2 Memory/IO-Bound Kernels; 000 §10.4 (batched loads/stores: the table row naming `slp_vectorization` / `fuse_consecutive_buffer_reads`, and "Memory-level parallelism in generated copy loops"); 000 §5.7 (the measured "elementwise float4 stream" case); 000 §4.1 (vector atomics reach their lanes one by one)',
  summary: 'A kernel reads or writes one record of a scalar buffer as K strided scalar accesses (`buf.read(i * 4u + k)`) instead of one vector access.',
  why: 'Each scalar `read`/`write` is its own memory instruction; the K lanes of one record at `i * K + k` are adjacent, so a `Buffer<floatK>` (or a float4 that also packs a companion scalar such as a mass) moves the record in one vector access, which is the batched load/store the guide asks for in memory-bound kernels (000 §5.2, §10.4) and the access its measured float4 streaming case uses (000 §5.7).',
  messages: {
    read: '`{{code}}`: {{count}} scalar reads of one {{stride}}-wide record of `{{buffer}}` (`{{base}} * {{stride}} + k`), one memory instruction each; store the records as {{vec}} (a float4 can also carry a companion scalar such as a mass) and read one with a single vector `read({{base}})`.',
    write: '`{{code}}`: {{count}} scalar writes of one {{stride}}-wide record of `{{buffer}}` (`{{base}} * {{stride}} + k`), one memory instruction each; store the records as {{vec}} (a float4 can also carry a companion scalar such as a mass) and write one with a single vector `write({{base}}, …)`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.bodies.length) return;
        // `base * K + k`, `K * base + k`, `k + base * K`, `base * K` (k = 0), with K in 2..4 and 0 <= k < K.
        const split = (e: SyntaxNode | null | undefined): { base: SyntaxNode; stride: number; lane: number } | null => {
          const n = unparen(e ?? null);
          if (!n || n.type !== 'binary_expression') return null;
          const op = n.childForFieldName('operator')?.type;
          const l = n.childForFieldName('left');
          const r = n.childForFieldName('right');
          if (!l || !r) return null;
          if (op === '*') {
            const kr = m.constValue(r);
            const kl = m.constValue(l);
            if (kr !== null && kl === null && VECTOR_OF[kr]) return { base: l, stride: kr, lane: 0 };
            if (kl !== null && kr === null && VECTOR_OF[kl]) return { base: r, stride: kl, lane: 0 };
            return null;
          }
          if (op === '+') {
            for (const [a, b] of [[l, r], [r, l]] as const) {
              const c = m.constValue(b);
              if (c === null) continue;
              const s = split(a);
              if (s && s.lane === 0 && c >= 0 && c < s.stride) return { base: s.base, stride: s.stride, lane: c };
            }
          }
          return null;
        };
        const isComponent = (v: SyntaxNode | null | undefined): boolean => {
          const n = unparen(v ?? null);
          if (!n) return false;
          if (n.type === 'number_literal') return true;
          if (n.type === 'field_expression') return /^[xyzw]$/.test(n.childForFieldName('field')?.text ?? '');
          if (n.type === 'subscript_expression') return m.constValue(n.childForFieldName('index') ?? n.namedChildren[1]) !== null;
          return false;
        };
        const vectorEvidence = (g: Access[]): boolean => {
          if (g[0].kind === 'write') return g.every((a) => isComponent(a.call.childForFieldName('arguments')?.namedChildren[1]));
          const ctor = g[0].call.parent?.parent;
          if (ctor?.type !== 'call_expression' || !/^(luisa::)?make_\w+[234]$/.test(ctor.childForFieldName('function')?.text ?? '')) return false;
          return g.every((a) => a.call.parent?.parent?.id === ctor.id);
        };
        const groups = new Map<string, Access[]>();
        for (const c of m.callsNamed(/^(read|write)$/)) {
          if (!c.receiver || !m.inDeviceCode(c.node)) continue;
          const kind = c.name as 'read' | 'write';
          if (c.args.length !== (kind === 'read' ? 1 : 2)) continue;
          const res = m.resourceOf(c.receiver);
          // Buffers (or receivers of unknown type); images, volumes and Shared<T> have their own rules.
          if (res.kind !== 'buffer' && res.kind !== 'unknown') continue;
          // A buffer of vectors or structs indexed at `i * K + k` is an array of records already.
          if (res.kind === 'buffer' && res.elem !== null && !SCALAR.test(res.elem)) continue;
          const s = split(c.args[0]);
          if (!s) continue;
          const base = m.indexKey(s.base);
          // One basic stretch of code: the innermost statement block around the access.
          let block: SyntaxNode | null = c.node.parent;
          while (block && block.type !== 'compound_statement') block = block.parent;
          if (!block) continue;
          const recv = c.receiver.text.replace(/\s+/g, '');
          const key = `${block.id}|${recv}|${kind}|${base}|${s.stride}`;
          let g = groups.get(key);
          if (!g) groups.set(key, (g = []));
          g.push({ call: c.node, kind, recv, elem: res.elem, base: s.base.text, stride: s.stride, lane: s.lane });
        }
        for (const g of groups.values()) {
          const stride = g[0].stride;
          const lanes = new Set(g.map((a) => a.lane));
          // Most of the record: both halves of a pair, two of a triple, three of a quad.
          if (lanes.size < Math.max(2, stride - 1)) continue;
          g.sort((a, b) => a.call.startIndex - b.call.startIndex);
          // A receiver of unknown type needs the code itself to say the record is a vector: the reads
          // build one `make_floatK(…)`, or the writes store components (`v.x`, `v[1]`) or literals.
          if (g.some((a) => a.elem === null) && !vectorEvidence(g)) continue;
          const first = g[0].call;
          const last = g[g.length - 1].call;
          // One statement (`make_float3(b.read(i*4), b.read(i*4+1), …)`): report it whole; accesses in
          // consecutive statements: report the first.
          let node: SyntaxNode = first;
          for (let p: SyntaxNode | null = first.parent; p && p.type !== 'compound_statement'; p = p.parent) {
            if (p.startIndex <= first.startIndex && last.endIndex <= p.endIndex) { node = p; break; }
          }
          ctx.report({
            node,
            messageId: g[0].kind,
            data: { code: quote(first), count: lanes.size, stride, vec: vectorType(g[0].elem, stride), buffer: g[0].recv, base: g[0].base },
          });
        }
      },
    };
  },
});

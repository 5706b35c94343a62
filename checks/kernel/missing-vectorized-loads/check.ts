import { cudaModel, type CudaFunction } from '../../../src/analysis/cuda.js';
import { quote } from '../../../src/analysis/syntax.js';
import { uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

const X_LINEAR = /^\(?\s*(?:blockIdx\.x\s*\*\s*blockDim\.x\s*\+\s*threadIdx\.x|threadIdx\.x\s*\+\s*blockIdx\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*blockIdx\.x\s*\+\s*threadIdx\.x)\s*\)?$/;
const VECTOR: Record<string, [string, number]> = { float: ['float4', 4], double: ['double2', 2], int: ['int4', 4], unsigned: ['uint4', 4], 'unsigned int': ['uint4', 4] };
const VECTOR_CAST = /reinterpret_cast\s*<[^>]*\b(float[24]|double[24]|int[24]|uint[24]|longlong2|ulonglong2|short4|char4|uchar4)\b/;
/** Cheap per-element helpers; anything else (sin, exp, pow, a device function) makes the body compute-bound. */
const CHEAP_CALLS = /^(fabs|fabsf|fmin|fminf|fmax|fmaxf|min|max|abs|__ldg|fma|fmaf|__fmul_rn|__fadd_rn|__fmaf_rn|__fma_rn)$/;

function linearNames(body: SyntaxNode): Set<string> {
  const out = new Set<string>();
  for (const d of body.descendantsOfType('init_declarator')) {
    const name = d.childForFieldName('declarator')?.text;
    const v = d.childForFieldName('value')?.text.trim();
    if (name && v && X_LINEAR.test(v)) out.add(name);
  }
  return out;
}

interface Region { node: SyntaxNode; index: string; loop: boolean }

/** The per-element part of the kernel: a grid-stride loop body, or the kernel body itself when it handles one element per thread. */
function regionOf(fn: CudaFunction, u: { isWarpUniform(n: SyntaxNode): boolean }): Region | null {
  const body = fn.body!;
  const lin = linearNames(body);
  const loops = ['for_statement', 'while_statement', 'do_statement'].flatMap((t) => body.descendantsOfType(t));
  if (loops.length === 1 && loops[0]!.type === 'for_statement') {
    const loop = loops[0]!;
    const init = loop.childForFieldName('initializer');
    const upd = loop.childForFieldName('update');
    const decl = init?.descendantsOfType('init_declarator')[0];
    const name = decl?.childForFieldName('declarator')?.text;
    const v = decl?.childForFieldName('value')?.text.trim() ?? '';
    if (!name || !(lin.has(v) || X_LINEAR.test(v)) || !upd) return null;
    // Unit stride per thread: `i += stride` with a uniform stride (blockDim.x * gridDim.x).
    const mm = new RegExp(`^${esc(name)}\\s*\\+=\\s*(.+)$`).exec(upd.text.trim());
    if (!mm) return null;
    const step = upd.childForFieldName('right');
    if (!step || !u.isWarpUniform(step) || /^\d+$/.test(mm[1]!.trim())) return null;
    return { node: loop.childForFieldName('body')!, index: name, loop: true };
  }
  if (loops.length) return null;
  if (lin.size !== 1) return null;
  return { node: body, index: [...lin][0]!, loop: false };
}

export default defineCheck({
  id: 'kernel/missing-vectorized-loads',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §8.9 Missing Vectorized Loads; 003 §9 Pass 3 bullet 8',
  summary: 'Bandwidth-bound elementwise kernel loads one scalar per thread per step instead of 128-bit vectors.',
  why: 'On H100 a copy kernel reaches 60.6 % of bandwidth with float loads, 84.3 % with float2 and 88.8 % with float4, a 1.3–1.5× gain for bandwidth-bound kernels (003 §8.9).',
  messages: {
    scalar:
      'Bandwidth-bound bulk copy/elementwise {{shape}} uses scalar loads (`{{code}}`); 128-bit loads ({{vec}}) give 1.3–1.5× bandwidth (H100 copy: {{scalar_pct}} → {{vec_pct}} of peak, 003 §8.9).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        for (const f of m.functions) {
          if (!f.isKernel || !f.body || VECTOR_CAST.test(f.body.text)) continue;
          const ptrs = new Map<string, string>();
          for (const p of f.params) {
            const decl = p.childForFieldName('declarator');
            if (decl?.type !== 'pointer_declarator') continue;
            const name = decl.descendantsOfType('identifier').pop()?.text;
            if (name) ptrs.set(name, p.childForFieldName('type')?.text.replace(/\bconst\b/g, '').trim() ?? '');
          }
          const r = regionOf(f, u);
          if (!r) continue;
          const subs = r.node.descendantsOfType('subscript_expression');
          if (!subs.length) continue;
          const idxOf = (s: SyntaxNode) => (s.childForFieldName('indices') ?? s.childForFieldName('index'))?.text.replace(/^\[|\]$/g, '').trim();
          // Every access at exactly the element index, on a scalar pointer parameter: non-unit strides are another rule's.
          if (!subs.every((s) => ptrs.has(s.childForFieldName('argument')?.text ?? '') && idxOf(s) === r.index)) continue;
          const writes = subs.filter((s) => s.parent?.type === 'assignment_expression' && s.parent.childForFieldName('left')?.id === s.id);
          const reads = subs.filter((s) => !writes.includes(s));
          if (writes.length !== 1 || reads.length < 1 || reads.length > 3) continue;
          const elem = ptrs.get(writes[0]!.childForFieldName('argument')!.text)!;
          if (!VECTOR[elem] || !subs.every((s) => VECTOR[ptrs.get(s.childForFieldName('argument')!.text)!])) continue;
          // Only the bounds guard may branch; a per-element branch or call makes the body more than a move.
          const ifs = r.node.descendantsOfType('if_statement');
          const guard = (n: SyntaxNode) => new RegExp(`\\b${esc(r.index)}\\b\\s*(<|>=)`).test(n.childForFieldName('condition')?.text ?? '');
          if (ifs.some((i) => !guard(i)) || ifs.length > 1) continue;
          if (r.node.descendantsOfType('conditional_expression').length) continue;
          if (r.node.descendantsOfType('call_expression').some((c) => !CHEAP_CALLS.test(c.childForFieldName('function')?.text ?? ''))) continue;
          // Offsets into a base pointer may break the 16-byte alignment a vector load needs (cudaMalloc only aligns the base).
          if (m.launches.some((l) => l.kernel === f.name && l.args.some((a) => /[^\s]\s*\+\s*[^\s]/.test(a.text) && !/^\w+$/.test(a.text)))) continue;
          if (ctx.source.parent) {
            // CuPy slices with a non-zero start (`d_v[off:]`) are views whose data pointer moves by `off` elements.
            const host = ctx.source.parent.root.text;
            if (/\w\s*\[\s*[1-9a-zA-Z_][\w.]*\s*:/.test(host)) continue;
          }
          const [vec, per] = VECTOR[elem]!;
          ctx.report({
            node: writes[0]!.parent!,
            messageId: 'scalar',
            data: {
              shape: r.loop ? 'grid-stride loop' : 'kernel (one element per thread)',
              code: quote(writes[0]!.parent!),
              vec: `${vec}: ${per} ${elem}s per load over n/${per} elements, then a scalar tail`,
              scalar_pct: '60.6 %',
              vec_pct: '88.8 %',
            },
            fix: { description: `Load through reinterpret_cast<const ${vec}*>(in)[i] over n/${per} elements, then process the n % ${per} remainder with a scalar tail loop; the pointers must be 16-byte aligned (offset views and slices may not be).` },
          });
        }
      },
    };
  },
});

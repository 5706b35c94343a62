import { cudaModel, type CudaFunction, type CudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { calleePath, lastName, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** Integer types of 32 bits (the C arithmetic of two of them stays in 32 bits). */
const I32 = /^(int|unsigned|unsigned int|signed|signed int|int32_t|uint32_t|uint|__int32|unsigned int32_t)$/;
/** Types that make a product 64-bit when one operand has them. */
const I64 = /\b(long|size_t|ssize_t|int64_t|uint64_t|ptrdiff_t|intptr_t|uintptr_t|index_t|int64|uint64|__int64|Py_ssize_t|size_type|difference_type|offset_t|dim_t|idx_t|long_index_t)\b/;
const FLOAT = /\b(float|double|half|__half|bfloat16|__nv_bfloat16|float2|float4)\b/;
const QUALIFIERS = /\b(const|volatile|static|register|__restrict__|__device__|__shared__|__constant__|inline|__forceinline__)\b/g;

type IntClass = 'i32' | 'i64' | 'lit' | null;

const typeClass = (t: string): IntClass => {
  const s = t.replace(QUALIFIERS, ' ').replace(/\s+/g, ' ').trim();
  if (FLOAT.test(s)) return null;
  if (I64.test(s)) return 'i64';
  return I32.test(s) ? 'i32' : null;
};

interface Decl {
  cls: IntClass;
  pointer: boolean;
  array: boolean;
  shared: boolean;
  constant: boolean;
  value: SyntaxNode | null;
  node: SyntaxNode;
}

function declaratorName(d: SyntaxNode | null): { name: string | null; pointer: boolean; array: boolean } {
  let pointer = false;
  let array = false;
  while (d && d.type !== 'identifier' && d.type !== 'field_identifier') {
    if (d.type === 'pointer_declarator') pointer = true;
    if (d.type === 'array_declarator') array = true;
    if (['reference_declarator', 'pointer_declarator', 'array_declarator', 'init_declarator', 'parenthesized_declarator'].includes(d.type)) d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
    else return { name: null, pointer, array };
  }
  return { name: d?.text ?? null, pointer, array };
}

/** Declarations of the function's parameters and locals, by name (the first one wins; shadowing is rare in kernels). */
function declsOf(f: CudaFunction): Map<string, Decl> {
  const out = new Map<string, Decl>();
  const add = (typeText: string, full: string, d: SyntaxNode | null, value: SyntaxNode | null, node: SyntaxNode) => {
    const { name, pointer, array } = declaratorName(d);
    if (!name || out.has(name)) return;
    out.set(name, { cls: pointer || array ? null : typeClass(typeText), pointer, array, shared: /\b__shared__\b/.test(full), constant: /\bconstexpr\b/.test(full), value, node });
  };
  for (const p of f.params) add(p.childForFieldName('type')?.text ?? '', p.text, p.childForFieldName('declarator'), null, p);
  const t = f.node.parent?.type === 'template_declaration' ? f.node.parent.childForFieldName('parameters') : null;
  for (const p of t?.namedChildren ?? []) {
    const n = p.descendantsOfType(['identifier', 'type_identifier']).pop();
    if (n && !out.has(n.text)) out.set(n.text, { cls: 'lit', pointer: false, array: false, shared: false, constant: true, value: null, node: p });
  }
  for (const d of f.body?.descendantsOfType('declaration') ?? []) {
    const ty = d.childForFieldName('type')?.text ?? '';
    const head = d.text.split(/[=;({]/)[0];
    for (const c of d.namedChildren) {
      if (c.type === 'init_declarator') add(ty, head, c.childForFieldName('declarator'), c.childForFieldName('value'), c);
      else if (['identifier', 'pointer_declarator', 'array_declarator'].includes(c.type)) add(ty, head, c, null, c);
    }
  }
  return out;
}

/** Field types of the structs and classes of the source, by field name (null when two structs disagree). */
function fieldTypes(root: SyntaxNode): Map<string, IntClass> {
  const out = new Map<string, IntClass>();
  for (const fd of root.descendantsOfType('field_declaration')) {
    const ty = fd.childForFieldName('type')?.text ?? '';
    for (const d of fd.childrenForFieldName('declarator')) {
      const { name, pointer, array } = declaratorName(d);
      if (!name) continue;
      const cls = pointer || array ? null : typeClass(ty);
      out.set(name, out.has(name) && out.get(name) !== cls ? null : cls);
    }
  }
  return out;
}

export default defineCheck({
  id: 'kernel/int32-index-overflow',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: 'derived from real fixes (no seed section covers it)',
  summary: 'Flat index or element count computed in 32-bit int from a product of runtime extents.',
  why: 'A product of two 32-bit operands is computed in 32 bits: `row * cols + col` wraps (signed overflow, undefined) once the tensor has more than 2^31 elements — 8 GiB of float, routine for weights, activations and KV caches — and the kernel reads or writes out of bounds.',
  messages: {
    product: 'Flat offset `{{expr}}` is computed in 32-bit `int` from the product `{{prod}}` of runtime extents{{into}}; past 2^31 elements it wraps and the access goes out of bounds. Widen before multiplying: `(int64_t){{left}} * {{right}}` (or size_t).',
    field: 'Extent field `{{name}}` of `{{strct}}` is a 32-bit `int` but holds {{what}}; tensors past 2^31 elements overflow it and every offset derived from it. Declare it int64_t.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const root = ctx.source.root;
        const fields = fieldTypes(root);
        const reported = new Set<number>();
        // Flat offsets are 32-bit by default in tuned code; the source shows its tensors can pass 2^31 elements when
        // it widens another product to 64 bits (`(int64_t)row * cols`, `uint64_t off = ...`).
        const widened = m.functions.some((f) => (f.isKernel || f.isDevice) && !!f.body && widenedProduct(f, declsOf(f), fields, m));
        for (const f of m.functions) {
          if (!widened) break;
          if (!(f.isKernel || f.isDevice) || !f.body) continue;
          const decls = declsOf(f);
          const cls = (n: SyntaxNode | null, depth = 0): IntClass => classOf(n, decls, fields, m, depth);
          for (const p of f.body.descendantsOfType('binary_expression')) {
            if (p.childForFieldName('operator')?.type !== '*') continue;
            const l = p.childForFieldName('left');
            const r = p.childForFieldName('right');
            if (!l || !r || cls(l) !== 'i32' || cls(r) !== 'i32') continue;
            if (!extent(l, decls, m) || !extent(r, decls, m)) continue;
            // `blockIdx.x * warps_per_block`: the grid index, bounded by the launch.
            if ([l, r].some((x) => /^blockIdx\.[xyz]$/.test(unparen(x)!.text.replace(/\s+/g, '')))) continue;
            const use = addressUse(p, decls, f, (ptr) => slicePointer(ptr, f, decls, fields, m));
            if (!use) continue;
            if (reported.has(use.at.id)) continue;
            reported.add(use.at.id);
            ctx.report({
              node: use.at,
              messageId: 'product',
              data: { expr: quoteCode(use.at.text, 60), prod: quoteCode(p.text, 40), into: use.into, left: quoteCode(unparen(l)!.text, 20), right: quoteCode(r.text, 20) },
            });
          }
        }
        // Extent fields of a buffer-descriptor struct (it has pointer fields) kept in 32 bits.
        for (const spec of root.descendantsOfType(['struct_specifier', 'class_specifier'])) {
          const body = spec.childForFieldName('body');
          if (!body) continue;
          const own = new Map<string, { cls: IntClass; node: SyntaxNode; array: boolean }>();
          let hasPointer = false;
          for (const fd of body.namedChildren.filter((c) => c.type === 'field_declaration')) {
            const ty = fd.childForFieldName('type')?.text ?? '';
            for (const d of fd.childrenForFieldName('declarator')) {
              const { name, pointer, array } = declaratorName(d);
              if (pointer || /\*/.test(ty)) hasPointer = true;
              if (name) own.set(name, { cls: pointer ? null : typeClass(ty), node: fd, array });
            }
          }
          if (!hasPointer) continue;
          const strct = spec.childForFieldName('name')?.text ?? 'the struct';
          const ints = [...own].filter(([, v]) => v.cls === 'i32').map(([k]) => k);
          for (const [name, v] of own) {
            if (v.cls !== 'i32') continue;
            let what: string | null = null;
            // `int hw, hwc;` next to `int h, w, c;`: the name says it is the product of the others.
            if (!v.array && productName(name, ints.filter((x) => x !== name && x.length <= 3))) what = `the product of the extents ${[...name].join(' × ')}`.replace(/ × /g, '·');
            // `tl.sizes[i] = t.numel();`: a 64-bit element count stored into it.
            if (!what) {
              const re = new RegExp(`[.>]\\s*${esc(name)}\\b(\\s*\\[[^\\]]*\\])?\\s*=\\s*[^;=]*\\.(numel|nbytes)\\s*\\(`);
              if (re.test(root.text)) what = 'a tensor element count (`numel()`, 64-bit)';
            }
            if (!what || reported.has(v.node.id)) continue;
            reported.add(v.node.id);
            ctx.report({ node: v.node, messageId: 'field', data: { name, strct, what } });
          }
        }
      },
    };
  },
});

/** A product in device code with one operand widened to 64 bits (a cast or a 64-bit local/parameter) whose result reaches an address. */
function widenedProduct(f: CudaFunction, decls: Map<string, Decl>, fields: Map<string, IntClass>, m: CudaModel): boolean {
  for (const p of f.body?.descendantsOfType('binary_expression') ?? []) {
    if (p.childForFieldName('operator')?.type !== '*') continue;
    const ops = [p.childForFieldName('left'), p.childForFieldName('right')];
    const cs = ops.map((o) => classOf(o, decls, fields, m, 0));
    if (!cs.includes('i64')) continue;
    // The 64-bit side must be an explicit widening of an index or a 64-bit index variable, not a float scale.
    const wide = ops.find((o, i) => cs[i] === 'i64');
    if (!wide) continue;
    const other = ops.find((o) => o && o.id !== wide.id);
    if (!other || m.constValue(other) !== null) continue;
    if (cs.every((c) => c === 'i64' || c === 'i32')) return true;
  }
  return false;
}

/**
 * A local pointer to a slice that was set with a 64-bit offset (`img = base + (int64_t)i * w * h`): the
 * source widened the outer offset, and 32-bit offsets inside the slice are bounded by it.
 */
function slicePointer(name: string, f: CudaFunction, decls: Map<string, Decl>, fields: Map<string, IntClass>, m: CudaModel): boolean {
  const d = decls.get(name);
  if (!d || !d.pointer || d.node.type === 'parameter_declaration' || d.node.type === 'optional_parameter_declaration') return false;
  const values: SyntaxNode[] = d.value ? [d.value] : [];
  for (const a of f.body?.descendantsOfType('assignment_expression') ?? []) {
    if (unparen(a.childForFieldName('left'))?.text === name && a.childForFieldName('right')) values.push(a.childForFieldName('right')!);
  }
  return values.some((v) => [v, ...v.descendantsOfType('binary_expression')].some((b) => b.type === 'binary_expression' && ['*', '+'].includes(b.childForFieldName('operator')?.type ?? '') && [b.childForFieldName('left'), b.childForFieldName('right')].some((o) => classOf(o, decls, fields, m, 0) === 'i64')));
}

/** `hwc` from fields `h`, `w`, `c` (or `hw`, `c`): at least two parts, each another extent field. */
function productName(name: string, others: string[]): boolean {
  const lower = name.toLowerCase();
  const set = new Set(others.map((o) => o.toLowerCase()));
  if (lower.length < 2 || set.size < 2) return false;
  const parts = (s: string): number => {
    if (!s) return 0;
    let best = -1;
    for (let i = 1; i <= Math.min(3, s.length); i++) {
      if (!set.has(s.slice(0, i))) continue;
      const rest = parts(s.slice(i));
      if (rest >= 0) best = Math.max(best, rest + 1);
    }
    return best;
  };
  return parts(lower) >= 2;
}

function classOf(n: SyntaxNode | null, decls: Map<string, Decl>, fields: Map<string, IntClass>, m: CudaModel, depth: number): IntClass {
  n = unparen(n);
  if (!n || depth > 8) return null;
  switch (n.type) {
    case 'number_literal':
      return /[lL]/.test(n.text) ? 'i64' : /[.eEfF]/.test(n.text.replace(/^0x/i, '')) && !/^0x/i.test(n.text) ? null : 'lit';
    case 'identifier': {
      const d = decls.get(n.text);
      if (d) return d.constant ? 'lit' : d.cls;
      if (m.constValue(n) !== null) return 'lit';
      return null;
    }
    case 'field_expression': {
      const a = n.childForFieldName('argument')?.text;
      if (a === 'threadIdx' || a === 'blockIdx' || a === 'blockDim' || a === 'gridDim') return 'i32';
      return fields.get(n.childForFieldName('field')?.text ?? '') ?? null;
    }
    case 'cast_expression':
      return typeClass(n.childForFieldName('type')?.text ?? '');
    case 'call_expression': {
      const name = lastName(calleePath(n.childForFieldName('function')) ?? '') ?? '';
      if (/^(static_cast|reinterpret_cast)$/.test(name)) {
        // `static_cast<int64_t>(x)`: the target type.
        const targs = n.childForFieldName('function')?.childForFieldName('arguments')?.text ?? n.childForFieldName('function')?.text.replace(/^[^<]*/, '') ?? '';
        return typeClass(targs.replace(/^<|>$/g, ''));
      }
      if (name === 'int') return 'i32';
      if (!/^(min|max|umin|umax|imin|imax)$/.test(name)) return null;
      const args = n.childForFieldName('arguments')?.namedChildren ?? [];
      const cs = args.map((a) => classOf(a, decls, fields, m, depth + 1));
      return cs.includes('i64') ? 'i64' : cs.every((c) => c === 'i32' || c === 'lit') && cs.includes('i32') ? 'i32' : null;
    }
    case 'binary_expression': {
      const op = n.childForFieldName('operator')?.type ?? '';
      if (!['+', '-', '*', '/', '%', '>>', '<<', '&', '|'].includes(op)) return null;
      const a = classOf(n.childForFieldName('left'), decls, fields, m, depth + 1);
      const b = classOf(n.childForFieldName('right'), decls, fields, m, depth + 1);
      if (a === 'i64' || b === 'i64') return 'i64';
      if (a === null || b === null) return null;
      return a === 'lit' && b === 'lit' ? 'lit' : 'i32';
    }
    default:
      return null;
  }
}

/**
 * A runtime extent or index that can be large: not a compile-time constant, not the launch geometry
 * (`blockDim`, `gridDim`, warp width), and not a value bounded by the block (`threadIdx.x`, a lane or warp
 * index, `threadIdx.x % 4`).
 */
function extent(n: SyntaxNode, decls: Map<string, Decl>, m: CudaModel, depth = 0): boolean {
  const u = unparen(n);
  if (!u || depth > 6) return false;
  if (m.constValue(u) !== null) return false;
  if (/\b(blockDim|gridDim|warpSize|WARP_SIZE|kWarpSize)\b/.test(u.text)) return false;
  return !blockBounded(u, decls, m, depth);
}

function blockBounded(n: SyntaxNode, decls: Map<string, Decl>, m: CudaModel, depth: number): boolean {
  const u = unparen(n);
  if (!u || depth > 6) return false;
  if (m.constValue(u) !== null) return true;
  if (u.type === 'field_expression') return u.childForFieldName('argument')?.text === 'threadIdx';
  if (u.type === 'identifier') {
    const d = decls.get(u.text);
    if (!d) return false;
    if (d.constant) return true;
    return !!d.value && blockBounded(d.value, decls, m, depth + 1);
  }
  if (u.type === 'cast_expression') return blockBounded(u.childForFieldName('value')!, decls, m, depth + 1);
  if (u.type === 'binary_expression') {
    const op = u.childForFieldName('operator')?.type ?? '';
    const l = u.childForFieldName('left')!;
    const r = u.childForFieldName('right')!;
    if (op === '%' || op === '&') return m.constValue(r) !== null || blockBounded(l, decls, m, depth + 1);
    if (op === '/' || op === '>>') return blockBounded(l, decls, m, depth + 1);
    return blockBounded(l, decls, m, depth + 1) && blockBounded(r, decls, m, depth + 1);
  }
  return false;
}

/** The product reaches a global-memory address: a subscript or pointer offset, directly or through a 32-bit local. */
function addressUse(p: SyntaxNode, decls: Map<string, Decl>, f: CudaFunction, slice: (name: string) => boolean): { at: SyntaxNode; into: string } | null {
  const isGlobalPtr = (n: SyntaxNode | null): boolean => {
    const u = unparen(n);
    if (!u) return false;
    if (u.type === 'identifier') {
      const d = decls.get(u.text);
      return !!d && d.pointer && !d.shared && !slice(u.text);
    }
    return false;
  };
  let child = p;
  let q = p.parent;
  while (q) {
    if (q.type === 'parenthesized_expression' || (q.type === 'binary_expression' && ['+', '-', '*'].includes(q.childForFieldName('operator')?.type ?? ''))) {
      if (q.type === 'binary_expression' && q.childForFieldName('operator')?.type === '+') {
        const other = q.childForFieldName('left')?.id === child.id ? q.childForFieldName('right') : q.childForFieldName('left');
        if (isGlobalPtr(other)) return { at: q, into: ' as a pointer offset' };
      }
      child = q;
      q = q.parent;
      continue;
    }
    break;
  }
  if (!q) return null;
  if ((q.type === 'subscript_expression' && q.childForFieldName('argument')?.id !== child.id) || (q.type === 'subscript_argument_list' && q.parent?.type === 'subscript_expression')) {
    const sub = q.type === 'subscript_expression' ? q : q.parent!;
    if (isGlobalPtr(sub.childForFieldName('argument'))) return { at: sub, into: ' as the subscript' };
    return null;
  }
  // `int idx = row * cols + col;` then `x[idx]` / `x + idx`.
  let name: string | null = null;
  let at: SyntaxNode | null = null;
  if (q.type === 'init_declarator' && q.childForFieldName('value')?.id === child.id) {
    name = declaratorName(q.childForFieldName('declarator')).name;
    at = q.parent;
  } else if (q.type === 'assignment_expression' && q.childForFieldName('right')?.id === child.id && q.childForFieldName('operator')?.type === '=') {
    const l = unparen(q.childForFieldName('left'));
    if (l?.type === 'identifier') name = l.text;
    at = q;
  }
  if (!name || !at) return null;
  const d = decls.get(name);
  if (d?.cls !== 'i32') return null;
  for (const id of f.body?.descendantsOfType('identifier') ?? []) {
    if (id.text !== name || id.startIndex < at.endIndex) continue;
    let c = id;
    let up = id.parent;
    while (up && (up.type === 'parenthesized_expression' || (up.type === 'binary_expression' && ['+', '-'].includes(up.childForFieldName('operator')?.type ?? '')))) {
      if (up.type === 'binary_expression') {
        const other = up.childForFieldName('left')?.id === c.id ? up.childForFieldName('right') : up.childForFieldName('left');
        if (isGlobalPtr(other)) return { at, into: ` and stored in the 32-bit \`${name}\` that offsets a pointer` };
      }
      c = up;
      up = up.parent;
    }
    const sub = up?.type === 'subscript_argument_list' ? up.parent : up;
    if (sub?.type === 'subscript_expression' && sub.childForFieldName('argument')?.id !== c.id && isGlobalPtr(sub.childForFieldName('argument'))) {
      return { at, into: ` and stored in the 32-bit \`${name}\` that indexes \`${sub.childForFieldName('argument')!.text}\`` };
    }
  }
  return null;
}

import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { mentionNodes, pyCallOf, pyReferenceOf } from '../../../src/analysis/mentions.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { calleePath, lastName, matchesVocab, pyArgs, unparen, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** 003 §1.2: pool ceiling 90 % of VRAM, context reserve 200–500 MB. */
const MAX_FRACTION = 0.9;
const MIN_RESERVE = 200 * 2 ** 20;
const GIB = 2 ** 30;

const pct = (f: number) => `${Math.round(f * 100)} %`;
const mib = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;

/**
 * A size expressed in total device memory: `total * frac - reserve` bytes. `reserve` is null when
 * something non-constant is subtracted (`total - headroom`): the author reserved memory, the amount is unknown.
 */
interface Share {
  frac: number;
  reserve: number | null;
}

const TOTAL: Share = { frac: 1, reserve: 0 };

function combine(op: string, a: Share | null, b: Share | null, an: number | null, bn: number | null): Share | null {
  if (a && bn !== null) {
    if (op === '*') return { frac: a.frac * bn, reserve: a.reserve === null ? null : a.reserve * bn };
    if ((op === '/' || op === '//') && bn) return { frac: a.frac / bn, reserve: a.reserve === null ? null : a.reserve / bn };
    if (op === '-') return { frac: a.frac, reserve: a.reserve === null ? null : a.reserve + bn };
    if (op === '+') return { frac: a.frac, reserve: a.reserve === null ? null : a.reserve - bn };
    return null;
  }
  if (b && an !== null && op === '*') return { frac: b.frac * an, reserve: b.reserve === null ? null : b.reserve * an };
  if (a && b && op === '-') return { frac: a.frac - b.frac, reserve: a.reserve === null || b.reserve === null ? null : a.reserve - b.reserve };
  if (a && op === '-') return { frac: a.frac, reserve: null };
  return null;
}

function arith(op: string, l: number, r: number): number | null {
  switch (op) {
    case '+': return l + r;
    case '-': return l - r;
    case '*': return l * r;
    case '/': return r ? l / r : null;
    case '//': return r ? Math.floor(l / r) : null;
    case '**': return l ** r;
    case '<<': return l * 2 ** r;
    case '>>': return Math.floor(l / 2 ** r);
    default: return null;
  }
}

/** Why a size is (almost) all VRAM, or null when it leaves the context its reserve. */
function shareVerdict(s: Share | null): string | null {
  if (!s || s.frac <= MAX_FRACTION || s.reserve === null || s.reserve >= MIN_RESERVE) return null;
  if (s.reserve <= 0) return `${pct(s.frac)} of total device memory`;
  return s.frac === 1 ? `total device memory minus ${mib(s.reserve)}` : `${pct(s.frac)} of total device memory minus ${mib(s.reserve)}`;
}

/** A byte count above 90 % of a target's VRAM, naming the target it crowds out (the smallest). */
function bytesVerdict(ctx: CheckContext, bytes: number | null): string | null {
  if (bytes === null || bytes <= 0) return null;
  const gpu = [...ctx.config.targets].sort((a, b) => a.vramGb - b.vramGb)[0];
  if (!gpu || bytes <= MAX_FRACTION * gpu.vramGb * GIB) return null;
  return `${(bytes / GIB).toFixed(1)} GiB, ${pct(bytes / (gpu.vramGb * GIB))} of the ${gpu.name}'s ${gpu.vramGb} GB`;
}

// ---------------------------------------------------------------- Python

/** Pool sizes by API: keyword names and positional indexes that hold a pool size in bytes. */
const PY_SIZERS: Record<string, { kw: string[]; pos: number[]; anyReceiver?: boolean }> = {
  set_limit: { kw: ['size'], pos: [0], anyReceiver: true },
  reinitialize: { kw: ['initial_pool_size', 'maximum_pool_size'], pos: [] },
  PoolMemoryResource: { kw: ['initial_pool_size', 'maximum_pool_size'], pos: [1, 2] },
  ArenaMemoryResource: { kw: ['arena_size'], pos: [1] },
  CudaAsyncMemoryResource: { kw: ['initial_pool_size'], pos: [0] },
};

class PyEval {
  constructor(private m: PyModel, private ctx: CheckContext) {}

  /** The value bound to `name` at `at`: the last plain assignment before it in its function, else at module level. */
  private binding(name: string, at: SyntaxNode): { value: SyntaxNode; index: number; arity: number } | null {
    for (const scope of [this.m.scopeOf(at), this.ctx.source.root]) {
      const list = (this.m.assignmentsIn(scope).get(name) ?? []).filter((b) => b.node.endIndex <= at.startIndex);
      const b = list.pop();
      if (!b) continue;
      if (b.node.type === 'augmented_assignment') return null;
      if (b.value.type === 'assignment') {
        const left = b.value.childForFieldName('left');
        const targets = left?.namedChildren ?? [];
        const index = targets.findIndex((t) => t.text === name);
        const right = b.value.childForFieldName('right');
        return right && index >= 0 ? { value: right, index, arity: targets.length } : null;
      }
      return { value: b.value, index: -1, arity: 1 };
    }
    return null;
  }

  private memInfo(n: SyntaxNode | null): number {
    if (!n || !(n.type === 'call' || n.type === 'attribute') || !this.m.pathMatches(n.type === 'call' ? n.childForFieldName('function')! : n, this.ctx.config.vocab.mem_info_calls)) return 0;
    // cuda-python returns (err, free, total); CuPy, torch and `Device.mem_info` return (free, total).
    const name = lastName(calleePath(n)) ?? '';
    return /^cu(da)?[A-Z]/.test(name) ? 3 : 2;
  }

  num(n: SyntaxNode | null | undefined, depth = 0): number | null {
    const u = unparen(n);
    if (!u || depth > 10) return null;
    switch (u.type) {
      case 'integer':
        return Number(u.text.replace(/_/g, '').replace(/[lL]$/, ''));
      case 'float':
        return Number(u.text.replace(/_/g, ''));
      case 'unary_operator': {
        const v = this.num(u.childForFieldName('argument'), depth + 1);
        return v === null ? null : u.text.trim().startsWith('-') ? -v : v;
      }
      case 'binary_operator': {
        const l = this.num(u.childForFieldName('left'), depth + 1);
        const r = this.num(u.childForFieldName('right'), depth + 1);
        return l === null || r === null ? null : arith(u.childForFieldName('operator')?.text ?? '', l, r);
      }
      case 'call': {
        const f = u.childForFieldName('function')?.text;
        const a = pyArgs(u).positional;
        return (f === 'int' || f === 'float' || f === 'round') && a.length === 1 ? this.num(a[0], depth + 1) : null;
      }
      case 'identifier': {
        const b = this.binding(u.text, u);
        return b && b.index < 0 ? this.num(b.value, depth + 1) : null;
      }
      default:
        return null;
    }
  }

  share(n: SyntaxNode | null | undefined, depth = 0): Share | null {
    const u = unparen(n);
    if (!u || depth > 10) return null;
    const vocab = this.ctx.config.vocab;
    switch (u.type) {
      case 'identifier': {
        const b = this.binding(u.text, u);
        if (!b) return null;
        if (b.index >= 0) {
          const arity = this.memInfo(b.value);
          return arity && b.index === b.arity - 1 ? TOTAL : null;
        }
        return this.share(b.value, depth + 1);
      }
      case 'attribute':
        return vocab.total_memory_fields.includes(u.childForFieldName('attribute')?.text ?? '') ? TOTAL : null;
      case 'subscript': {
        const value = unparen(u.childForFieldName('value'));
        const idx = unparen(u.childForFieldName('subscript'));
        if (idx?.type === 'string' && vocab.total_memory_fields.includes(idx.text.replace(/^[a-z]*['"]|['"]$/g, ''))) return TOTAL;
        let source = value;
        if (value?.type === 'identifier') {
          const b = this.binding(value.text, value);
          source = b && b.index < 0 ? unparen(b.value) : null;
        }
        const arity = this.memInfo(source);
        const i = this.num(idx);
        return arity && (i === arity - 1 || i === -1) ? TOTAL : null;
      }
      case 'call': {
        const f = calleePath(u.childForFieldName('function')) ?? '';
        const a = pyArgs(u).positional;
        return /^(int|float|round|math\.floor|math\.ceil|np\.int64|numpy\.int64)$/.test(f) && a.length >= 1 ? this.share(a[0], depth + 1) : null;
      }
      case 'binary_operator': {
        const op = u.childForFieldName('operator')?.text ?? '';
        const l = u.childForFieldName('left');
        const r = u.childForFieldName('right');
        const ls = this.share(l, depth + 1);
        const rs = this.share(r, depth + 1);
        if (!ls && !rs) return null;
        return combine(op, ls, rs, ls ? null : this.num(l, depth + 1), rs ? null : this.num(r, depth + 1));
      }
      default:
        return null;
    }
  }

  /** Why a byte-size expression is (almost) all VRAM. */
  sizeVerdict(n: SyntaxNode | null | undefined): string | null {
    return shareVerdict(this.share(n)) ?? bytesVerdict(this.ctx, this.num(n));
  }
}

/** Text of a plain string literal, or null. */
function stringValue(n: SyntaxNode | null | undefined): string | null {
  const u = unparen(n);
  if (u?.type !== 'string' || u.namedChildren.some((c) => c.type === 'interpolation')) return null;
  return u.namedChildren.filter((c) => c.type === 'string_content').map((c) => c.text).join('');
}

/** An env value ("90%", bytes, `str(total)`, `f"{total}"`): why it is (almost) all VRAM. */
function envVerdict(ev: PyEval, ctx: CheckContext, value: SyntaxNode): string | null {
  const s = stringValue(value);
  if (s !== null) {
    const p = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(s);
    if (p) return Number(p[1]) / 100 > MAX_FRACTION ? `"${s}"` : null;
    return /^\s*\d+\s*$/.test(s) ? bytesVerdict(ctx, Number(s)) : null;
  }
  const u = unparen(value);
  if (u?.type === 'string') {
    const parts = u.namedChildren.filter((c) => c.type !== 'string_start' && c.type !== 'string_end');
    const only = parts.length === 1 && parts[0].type === 'interpolation' ? parts[0].namedChildren[0] : null;
    return only ? ev.sizeVerdict(only) : null;
  }
  if (u?.type === 'call' && u.childForFieldName('function')?.text === 'str') return ev.sizeVerdict(pyArgs(u).positional[0]);
  return ev.sizeVerdict(u);
}

const PY_SIZER_NAMES = Object.keys(PY_SIZERS);

function checkPython(ctx: CheckContext): void {
  const vocab = ctx.config.vocab;
  const sizerNames = mentionNodes(ctx.source, PY_SIZER_NAMES);
  const envNames = mentionNodes(ctx.source, vocab.pool_limit_env_vars).filter((n) => n.type === 'string_content' && vocab.pool_limit_env_vars.includes(n.text));
  if (!sizerNames.length && !envNames.length) return;
  const m = ctx.get(pythonModel);
  const ev = new PyEval(m, ctx);
  for (const n of sizerNames) {
    const ref = pyReferenceOf(n);
    const call = ref && pyCallOf(ref);
    if (!call) continue;
    const name = n.text;
    const { positional, keywords } = pyArgs(call);
    const sizer = PY_SIZERS[name];
    if (!sizer || (!sizer.anyReceiver && !m.callMatches(call, vocab.pool_config_calls))) continue;
    if (name === 'set_limit' && keywords.has('fraction')) {
      const lit = unparen(keywords.get('fraction'));
      const f = ev.num(lit);
      if (f !== null && f > MAX_FRACTION) report(ctx, call, `fraction=${lit!.text} is ${pct(f)} of device memory`, literalFix(ctx, call, lit!));
      continue;
    }
    const sizes = [...sizer.kw.map((k) => keywords.get(k)), ...sizer.pos.map((i) => positional[i])];
    const why = sizes.map((s) => ev.sizeVerdict(s)).find((w) => w);
    if (why) report(ctx, call, why);
  }
  for (const content of envNames) {
    const str = content.parent;
    const holder = str?.parent;
    // `os.environ.get(VAR, "100%")`, `os.getenv(VAR, default)`, `os.environ.setdefault(VAR, value)`.
    if (holder?.type === 'argument_list' && holder.parent?.type === 'call') {
      const call = holder.parent;
      const { positional } = pyArgs(call);
      if (/(^|\.)(environ\.get|getenv|environ\.setdefault)$/.test(m.callPath(call) ?? '') && positional[0]?.id === str!.id && positional[1]) {
        const why = envVerdict(ev, ctx, positional[1]);
        if (why) report(ctx, call, why);
      }
      continue;
    }
    // `os.environ["CUPY_GPU_MEMORY_LIMIT"] = "100%"`.
    const a = holder?.parent;
    if (holder?.type === 'subscript' && /(^|\.)environ$/.test(holder.childForFieldName('value')?.text ?? '') && a?.type === 'assignment' && a.childForFieldName('left')?.id === holder.id) {
      const why = envVerdict(ev, ctx, a.childForFieldName('right')!);
      if (why) report(ctx, a, why);
    }
  }
}

/** `set_limit(fraction=1.0)` → `set_limit(fraction=0.9)`: the catalog's safe-one-line rewrite, for a literal on one line. */
function literalFix(ctx: CheckContext, call: SyntaxNode, lit: SyntaxNode): FixSpec {
  const description = 'Cap the pool at 90 % of device memory: `set_limit(fraction=0.9)` (003 §1.2 targets 0.75 initially and 0.9 at most).';
  if (!(lit.type === 'float' || lit.type === 'integer') || call.startPosition.row !== call.endPosition.row) return { description };
  const line = ctx.linesOf(call);
  const col = lit.startPosition.column;
  return { description, replace: { from: call, text: line.slice(0, col) + '0.9' + line.slice(col + lit.text.length) } };
}

function report(ctx: CheckContext, node: SyntaxNode, detail: string, fix?: FixSpec): void {
  ctx.report({
    node,
    messageId: 'fullVram',
    data: { code: oneLine(node.text), detail },
    fix: fix ?? { description: 'Size the pool from the total minus a context reserve: at most 90 % of device memory (start near 75 %), or `total - 512 MiB`; with CuPy, `set_limit(fraction=0.9)`.' },
  });
}

// ---------------------------------------------------------------- CUDA C++

class CuEval {
  private totals = new Map<number, Array<{ name: string; at: number }>>();

  constructor(private m: CudaModel, private ctx: CheckContext) {}

  /** Variables a function receives total device memory in: `cudaMemGetInfo(&free, &total)`, `cuDeviceTotalMem(&t, dev)`, `auto [f, t] = rmm::available_device_memory()`. */
  private totalsIn(fn: SyntaxNode): Array<{ name: string; at: number }> {
    let out = this.totals.get(fn.id);
    if (out) return out;
    out = [];
    const vocab = this.ctx.config.vocab.mem_info_calls;
    for (const c of this.m.calls) {
      if (!matchesVocab(c.path, vocab) || !(fn.startIndex <= c.node.startIndex && c.node.endIndex <= fn.endIndex)) continue;
      const outs = c.args.filter((a) => a.type === 'pointer_expression' && a.children[0]?.text === '&').map((a) => a.childForFieldName('argument')?.text ?? '');
      const total = /TotalMem/.test(c.name) ? outs[0] : outs.length >= 2 ? outs[outs.length - 1] : undefined;
      if (total) out.push({ name: total, at: c.node.endIndex });
      const binding = c.node.parent?.type === 'init_declarator' ? c.node.parent.childForFieldName('declarator') : null;
      if (binding?.type === 'structured_binding_declarator') {
        const ids = binding.namedChildren.filter((x) => x.type === 'identifier');
        if (ids.length === 2) out.push({ name: ids[1].text, at: c.node.endIndex });
      }
    }
    this.totals.set(fn.id, out);
    return out;
  }

  /** Initializer or last assignment of a local before `at`, within its function. */
  private lastValue(name: string, at: SyntaxNode): SyntaxNode | null {
    const fn = this.m.functionOf(at)?.node;
    if (!fn) return null;
    let best: SyntaxNode | null = null;
    for (const d of fn.descendantsOfType(['init_declarator', 'assignment_expression'])) {
      if (d.endIndex > at.startIndex) continue;
      const left = d.type === 'init_declarator' ? d.childForFieldName('declarator') : d.childForFieldName('left');
      if (left?.text !== name) continue;
      if (d.type === 'assignment_expression' && d.childForFieldName('operator')?.text !== '=') return null;
      const v = d.childForFieldName('value') ?? d.childForFieldName('right');
      if (v && (!best || d.startIndex > best.startIndex)) best = v;
    }
    return best;
  }

  num(n: SyntaxNode | null | undefined, depth = 0): number | null {
    const u = unparen(n);
    if (!u || depth > 10) return null;
    if (u.type === 'number_literal') {
      const t = u.text.replace(/'/g, '');
      if (/^0x/i.test(t)) return parseInt(t.replace(/[uUlL]+$/, ''), 16);
      const v = Number(t.replace(/([uUlL]+|[fF])$/, ''));
      return Number.isFinite(v) ? v : null;
    }
    if (u.type === 'binary_expression') {
      const l = this.num(u.childForFieldName('left'), depth + 1);
      const r = this.num(u.childForFieldName('right'), depth + 1);
      const op = u.childForFieldName('operator')?.text ?? '';
      // C++ `/` on integers truncates; the byte sizes here are large enough that it does not matter.
      return l === null || r === null ? null : arith(op, l, r);
    }
    if (u.type === 'cast_expression') return this.num(u.childForFieldName('value'), depth + 1);
    if (u.type === 'call_expression' && /_cast$/.test(calleePath(u.childForFieldName('function')) ?? '')) return this.num(u.childForFieldName('arguments')?.namedChildren[0], depth + 1);
    if (u.type === 'identifier') {
      const c = this.m.constValue(u);
      if (c !== null) return c;
      const v = this.lastValue(u.text, u);
      return v ? this.num(v, depth + 1) : null;
    }
    return null;
  }

  share(n: SyntaxNode | null | undefined, depth = 0): Share | null {
    const u = unparen(n);
    if (!u || depth > 10) return null;
    const vocab = this.ctx.config.vocab;
    switch (u.type) {
      case 'identifier': {
        const fn = this.m.functionOf(u)?.node;
        if (!fn) return null;
        const v = this.lastValue(u.text, u);
        const t = this.totalsIn(fn).filter((x) => x.name === u.text && x.at <= u.startIndex).pop();
        if (t && (!v || t.at > v.startIndex)) return TOTAL;
        return v ? this.share(v, depth + 1) : null;
      }
      case 'field_expression': {
        const field = u.childForFieldName('field')?.text ?? '';
        if (vocab.total_memory_fields.includes(field)) return TOTAL;
        // `rmm::available_device_memory().second`.
        const obj = unparen(u.childForFieldName('argument'));
        return field === 'second' && obj?.type === 'call_expression' && matchesVocab(calleePath(obj.childForFieldName('function')), vocab.mem_info_calls) ? TOTAL : null;
      }
      case 'cast_expression':
        return this.share(u.childForFieldName('value'), depth + 1);
      case 'call_expression':
        return /_cast$/.test(calleePath(u.childForFieldName('function')) ?? '') ? this.share(u.childForFieldName('arguments')?.namedChildren[0], depth + 1) : null;
      case 'binary_expression': {
        const op = u.childForFieldName('operator')?.text ?? '';
        const l = u.childForFieldName('left');
        const r = u.childForFieldName('right');
        const ls = this.share(l, depth + 1);
        const rs = this.share(r, depth + 1);
        if (!ls && !rs) return null;
        return combine(op, ls, rs, ls ? null : this.num(l, depth + 1), rs ? null : this.num(r, depth + 1));
      }
      default:
        return null;
    }
  }

  sizeVerdict(n: SyntaxNode | null | undefined): string | null {
    const u = unparen(n);
    // `rmm::percent_of_free_device_memory(100)`.
    if (u?.type === 'call_expression' && /(^|::)percent_of_free_device_memory$/.test(calleePath(u.childForFieldName('function')) ?? '')) {
      const p = this.num(u.childForFieldName('arguments')?.namedChildren[0]);
      return p !== null && p / 100 > MAX_FRACTION ? `${p} % of free device memory` : null;
    }
    return shareVerdict(this.share(u)) ?? bytesVerdict(this.ctx, this.num(u));
  }
}

/** rmm resources sized in their constructor: which arguments are pool sizes. */
const CU_SIZERS: Record<string, number[]> = { pool_memory_resource: [1, 2], cuda_async_memory_resource: [0], arena_memory_resource: [1] };

function checkCuda(ctx: CheckContext): void {
  if (!/\b(maxSize|cudaLimitMallocHeapSize|CU_LIMIT_MALLOC_HEAP_SIZE|pool_memory_resource|cuda_async_memory_resource|arena_memory_resource)\b/.test(ctx.source.text)) return;
  const m = ctx.get(cudaModel);
  const ev = new CuEval(m, ctx);
  // `props.maxSize = total;` (cudaMemPoolProps, CUDA 12.2+).
  for (const f of mentionNodes(ctx.source, ['maxSize'])) {
    const left = f.parent;
    const a = left?.parent;
    if (f.type !== 'field_identifier' || left?.type !== 'field_expression' || a?.type !== 'assignment_expression' || a.childForFieldName('left')?.id !== left.id) continue;
    const why = ev.sizeVerdict(a.childForFieldName('right'));
    if (why) report(ctx, a, why);
  }
  for (const c of m.calls) {
    // The device-side malloc heap is reserved up front, like a pool.
    if (/^(cudaDeviceSetLimit|cuCtxSetLimit)$/.test(c.name) && /MallocHeapSize|MALLOC_HEAP_SIZE/.test(c.args[0]?.text ?? '')) {
      const why = ev.sizeVerdict(c.args[1]);
      if (why) report(ctx, c.node, why);
      continue;
    }
    // `std::make_shared<rmm::mr::pool_memory_resource<...>>(upstream, initial, maximum)`.
    if (/(^|::)(make_shared|make_unique|make_owning_wrapper)$/.test(c.path)) {
      const targ = c.node.childForFieldName('function')?.descendantsOfType('template_argument_list')[0]?.namedChildren[0];
      const ty = (targ?.text ?? '').replace(/\s+/g, '').replace(/<.*$/s, '');
      const sizer = CU_SIZERS[lastName(ty) ?? ''];
      if (!sizer || !matchesVocab(ty, ctx.config.vocab.pool_config_calls)) continue;
      const why = sizer.map((i) => ev.sizeVerdict(c.args[i])).find((w) => w);
      if (why) report(ctx, c.node, why);
    }
  }
  // `rmm::mr::pool_memory_resource<Upstream> pool{&upstream, initial, maximum};`.
  const decls = new Map<number, SyntaxNode>();
  for (const n of mentionNodes(ctx.source, Object.keys(CU_SIZERS))) {
    let d: SyntaxNode | null = n;
    while (d && (d.type === 'type_identifier' || d.type === 'qualified_identifier' || d.type === 'template_type')) d = d.parent;
    if (d?.type === 'declaration') decls.set(d.id, d);
  }
  for (const d of decls.values()) {
    const ty = (d.childForFieldName('type')?.text ?? '').replace(/\s+/g, '').replace(/<.*$/s, '');
    const sizer = CU_SIZERS[lastName(ty) ?? ''];
    if (!sizer || !matchesVocab(ty, ctx.config.vocab.pool_config_calls)) continue;
    for (const init of d.namedChildren.filter((c) => c.type === 'init_declarator')) {
      const args = init.childForFieldName('value')?.namedChildren.filter((x) => x.type !== 'comment') ?? [];
      const why = sizer.map((i) => ev.sizeVerdict(args[i])).find((w) => w);
      if (why) report(ctx, d, why);
    }
  }
}

export default defineCheck({
  id: 'memory/pool-limit-full-vram',
  pass: 5,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation: '003 §1.2 Pool Sizing ("Reserve 200–500 MB for the CUDA context. Do not allocate 100% of VRAM. Target 75% initial / 90% max ceiling")',
  summary: 'Memory pool limit or size set to (almost) all device memory, leaving no reserve for the CUDA context.',
  why: 'The CUDA context and libraries (cuBLAS/cuFFT workspaces, module loads) need 200–500 MB outside the pool, so a pool sized to all VRAM ends in out-of-memory errors; target 75 % initial and 90 % at most (003 §1.2).',
  messages: {
    fullVram: 'Pool limit `{{code}}` is set to (almost) all VRAM ({{detail}}); leave 200–500 MB for the CUDA context (target ≤ 90%).',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'python') checkPython(ctx);
        else if (ctx.source.language === 'cuda') checkCuda(ctx);
      },
    };
  },
});

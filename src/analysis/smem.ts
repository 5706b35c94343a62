import type { GpuSpec } from '../config/gpus.js';
import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { cudaModel, type CudaFunction, type CudaModel, type Launch } from './cuda.js';
import { memoized } from './python.js';
import { calleePath, lastName, oneLine } from './syntax.js';
import { alternation } from '../core/regex.js';

/**
 * Shared-memory facts of a CUDA source (a .cu file or a kernel string): every `__shared__`
 * declaration with its size in bytes, the static shared memory each kernel (and each of its
 * template instantiations) allocates, the dynamic shared bytes of each launch, and the
 * `cudaFuncAttributeMaxDynamicSharedMemorySize` opt-ins (catalog §5.1, 003 §4.2).
 */

export interface SharedDecl {
  /** The `declaration` node. */
  node: SyntaxNode;
  /** This variable's declarator (the outermost `array_declarator`, or the identifier). */
  declarator: SyntaxNode;
  name: string;
  /** Element type as written, qualifiers dropped (`float`, `unsigned int`, `T`). */
  type: string;
  /** Extent expressions, outermost first (`tile[R][W]` → [R, W]); empty for a scalar or `extern T s[]`. */
  dims: SyntaxNode[];
  /** `extern __shared__ T s[]`: sized at launch (dynamic shared memory). */
  dynamic: boolean;
  /** The function it is declared in; null at file scope. */
  fn: CudaFunction | null;
}

export interface SizedDecl {
  elemBytes: number | null;
  extents: Array<number | null>;
  bytes: number | null;
}

/** One template instantiation of a kernel: `gemm<float, 128>`; the empty label for a non-template. */
export interface Instantiation {
  label: string;
  /** Values of the integer parameters whose argument is not a literal (`T = 128` for `k<TILE>`), or ''. */
  values: string;
  /** Integer template parameters by value, type parameters by their size in bytes (null: unknown). */
  bindings: Map<string, number | null>;
}

export interface StaticUsage {
  inst: Instantiation;
  /** Sum of the declarations whose size is known. */
  bytes: number;
  parts: Array<{ decl: SharedDecl; bytes: number }>;
  /** Declarations whose size could not be evaluated (the total is then a lower bound). */
  unknown: SharedDecl[];
}

export interface SmemOptIn {
  node: SyntaxNode;
  /** Kernel the attribute is raised for (aliases resolved); null when it cannot be told (a helper's parameter). */
  kernel: string | null;
  /** Template arguments when it names one instantiation (`gemm<128>` → `128`): each instantiation has its own attribute. */
  args: string | null;
  value: number | null;
  fn: CudaFunction | null;
}

export interface SmemFacts {
  decls: SharedDecl[];
  /** The `__shared__` declaration a name refers to at `at`: the function's own, else file scope. */
  declFor(name: string, at: SyntaxNode): SharedDecl | null;
  size(d: SharedDecl, bindings?: ReadonlyMap<string, number | null>): SizedDecl;
  instantiations(fn: CudaFunction): Instantiation[];
  /** Static shared memory of a kernel per instantiation: its own arrays, those of the device functions it calls, file-scope arrays it names. */
  staticUsage(kernel: CudaFunction): StaticUsage[];
  optIns: SmemOptIn[];
  /** Opt-ins that may apply to `kernel` (instantiation `args`, when known), including those whose kernel cannot be told. */
  optInsFor(kernel: string | null, args?: string | null): SmemOptIn[];
  /** Dynamic shared bytes of a launch: 0 when absent, null when not a constant. */
  dynamicBytes(l: Launch): number | null;
  /** Kernel name of a launch or attribute argument, following `auto k = gemm<128>;` aliases. */
  canonicalKernel(name: string | null): string | null;
  /** Template arguments of a kernel reference (`gemm<128>`, or an alias of it), normalized; null for none. */
  kernelArgs(ref: SyntaxNode | null | undefined): string | null;
  /** `[x, y, z]` block shape shared by every constant-shaped launch of `kernel` in this source, or null. */
  blockShape(kernel: string): [number, number, number] | null;
}

export const TYPE_BYTES: Record<string, number> = {
  char: 1, 'signed char': 1, 'unsigned char': 1, int8_t: 1, uint8_t: 1, bool: 1, uchar: 1,
  short: 2, 'unsigned short': 2, int16_t: 2, uint16_t: 2, half: 2, __half: 2, __nv_bfloat16: 2, nv_bfloat16: 2, ushort: 2,
  int: 4, unsigned: 4, 'unsigned int': 4, 'signed int': 4, float: 4, int32_t: 4, uint32_t: 4, uint: 4, half2: 4, __half2: 4,
  __nv_bfloat162: 4, char4: 4, uchar4: 4, short2: 4, ushort2: 4,
  long: 8, 'unsigned long': 8, 'long long': 8, 'unsigned long long': 8, 'long long int': 8, 'unsigned long long int': 8,
  double: 8, int64_t: 8, uint64_t: 8, size_t: 8, float2: 8, int2: 8, uint2: 8, double1: 8, short4: 8, ushort4: 8,
  float3: 12, int3: 12, uint3: 12,
  float4: 16, int4: 16, uint4: 16, double2: 16, longlong2: 16, ulonglong2: 16,
  double4: 32,
};

/** Bytes of a type as written (`const unsigned int`, `std::uint32_t`), or null. */
export function typeBytes(t: string): number | null {
  const norm = t
    .replace(/\b(const|volatile|__restrict__|struct)\b|alignas\s*\([^)]*\)|__align__\s*\([^)]*\)/g, ' ')
    .replace(/^\s*(::)?std::/, '')
    .replace(/\s+/g, ' ')
    .trim();
  return TYPE_BYTES[norm] ?? null;
}

const SHARED = /\b__shared__\b|\[\[shared\]\]/;
const OPT_IN_ATTR = /MaxDynamicSharedMemorySize|MAX_DYNAMIC_SHARED_SIZE_BYTES/;

export const smemFacts: Analysis<SmemFacts> = {
  name: 'smem-facts',
  compute: (source, config) => memoized(smemMemo, source, config, build),
};
const smemMemo = new WeakMap<Source, { config: ResolvedConfig; value: SmemFacts }>();

/** The function or cast a kernel argument is wrapped in, peeled: `(const void*)&k`, `reinterpret_cast<void*>(k<64>)`. */
export function kernelRefName(n: SyntaxNode | null | undefined): string | null {
  let cur = n ?? null;
  for (let i = 0; cur && i < 8; i++) {
    switch (cur.type) {
      case 'parenthesized_expression':
        cur = cur.namedChildren[0] ?? null;
        continue;
      case 'cast_expression':
        cur = cur.childForFieldName('value');
        continue;
      case 'pointer_expression':
        cur = cur.childForFieldName('argument');
        continue;
      case 'call_expression': {
        const f = calleePath(cur.childForFieldName('function')) ?? '';
        if (!/_cast$/.test(f)) return null;
        cur = cur.childForFieldName('arguments')?.namedChildren[0] ?? null;
        continue;
      }
      case 'template_function':
        return lastName(calleePath(cur.childForFieldName('name')));
      case 'identifier':
      case 'qualified_identifier':
      case 'field_expression':
        return lastName(calleePath(cur));
      default:
        return null;
    }
  }
  return null;
}

function build(source: Source, config: ResolvedConfig): SmemFacts {
  const model: CudaModel = cudaModel.compute(source, config);
  const root = source.root;

  const decls: SharedDecl[] = [];
  // Only declarations that spell the qualifier: find them from the text rather than walking every declaration.
  const sharedDecls = new Map<number, SyntaxNode>();
  for (const hit of source.text.matchAll(/\b__shared__\b|\[\[shared\]\]/g)) {
    let n: SyntaxNode | null = root.descendantForIndex(hit.index);
    while (n && n.type !== 'declaration' && n.type !== 'function_definition' && n.type !== 'translation_unit') n = n.parent;
    if (n?.type === 'declaration') sharedDecls.set(n.id, n);
  }
  for (const d of [...sharedDecls.values()].sort((a, b) => a.startIndex - b.startIndex)) {
    const firstDecl = d.childForFieldName('declarator');
    const head = firstDecl ? source.text.slice(d.startIndex, firstDecl.startIndex) : d.text;
    if (!SHARED.test(head)) continue;
    const dynamic = /\bextern\b/.test(head);
    const type = (d.childForFieldName('type')?.text ?? '').trim();
    const fn = model.functionOf(d);
    for (const decl of d.childrenForFieldName('declarator')) {
      const dims: SyntaxNode[] = [];
      let cur: SyntaxNode | null = decl;
      let unsized = false;
      while (cur && cur.type === 'array_declarator') {
        const size = cur.childForFieldName('size');
        if (size) dims.unshift(size);
        else unsized = true;
        cur = cur.childForFieldName('declarator');
      }
      if (!cur || cur.type !== 'identifier') continue;
      decls.push({ node: d, declarator: decl, name: cur.text, type, dims: unsized && dynamic ? [] : dims, dynamic: dynamic && unsized, fn });
    }
  }
  const byFn = new Map<number, SharedDecl[]>();
  const fileScope = new Map<string, SharedDecl>();
  for (const d of decls) {
    if (d.fn) byFn.set(d.fn.node.id, [...(byFn.get(d.fn.node.id) ?? []), d]);
    else fileScope.set(d.name, d);
  }
  const declFor = (name: string, at: SyntaxNode): SharedDecl | null => {
    const fn = model.functionOf(at);
    const own = fn ? (byFn.get(fn.node.id) ?? []).filter((d) => d.name === name && d.node.startIndex < at.startIndex) : [];
    // The latest declaration of that name before the use whose block encloses it.
    const visible = own.filter((d) => {
      const block = d.node.parent;
      return !!block && block.startIndex <= at.startIndex && at.endIndex <= block.endIndex;
    });
    if (visible.length) return visible[visible.length - 1];
    if (own.length) return null;
    return fileScope.get(name) ?? null;
  };

  const evalWith = (n: SyntaxNode | null | undefined, b: ReadonlyMap<string, number | null>): number | null => {
    if (!n) return null;
    if (b.size === 0) return model.constValue(n);
    switch (n.type) {
      case 'identifier':
      case 'type_identifier':
        if (b.has(n.text)) return b.get(n.text) ?? null;
        return model.constValue(n);
      case 'parenthesized_expression':
        return evalWith(n.namedChildren[0], b);
      case 'cast_expression':
        return evalWith(n.childForFieldName('value'), b);
      case 'sizeof_expression': {
        const t = (n.childForFieldName('type')?.text ?? n.namedChildren[0]?.text ?? '').replace(/[()]/g, '').trim();
        if (b.has(t)) return b.get(t) ?? null;
        return typeBytes(t) ?? model.constValue(n);
      }
      case 'binary_expression': {
        const l = evalWith(n.childForFieldName('left'), b);
        const r = evalWith(n.childForFieldName('right'), b);
        const op = n.childForFieldName('operator')?.type;
        if (l === null || r === null) return null;
        return op === '+' ? l + r : op === '-' ? l - r : op === '*' ? l * r : op === '/' && r ? Math.trunc(l / r) : op === '%' && r ? l % r : op === '<<' ? l << r : op === '>>' ? l >> r : null;
      }
      default:
        return model.constValue(n);
    }
  };

  const size = (d: SharedDecl, b: ReadonlyMap<string, number | null> = new Map()): SizedDecl => {
    const elemBytes = b.has(d.type) ? (b.get(d.type) ?? null) : typeBytes(d.type);
    const extents = d.dims.map((x) => evalWith(x, b));
    const bytes = d.dynamic ? 0 : elemBytes !== null && extents.every((e) => e !== null) ? extents.reduce((p: number, e) => p * (e as number), elemBytes) : null;
    return { elemBytes, extents, bytes };
  };

  // Template parameters and every spelled instantiation (`k<64>` in launches, attribute calls, explicit instantiations).
  interface TParam {
    name: string;
    isType: boolean;
    def: SyntaxNode | null;
  }
  const tparams = (fn: CudaFunction): TParam[] | null => {
    const t = fn.node.parent;
    if (t?.type !== 'template_declaration') return [];
    const list = t.childForFieldName('parameters')?.namedChildren ?? [];
    const out: TParam[] = [];
    for (const p of list) {
      if (p.type === 'comment') continue;
      if (p.type === 'type_parameter_declaration' || p.type === 'optional_type_parameter_declaration') {
        const name = p.childForFieldName('name') ?? p.namedChildren.find((c) => c.type === 'type_identifier');
        if (!name) return null;
        out.push({ name: name.text, isType: true, def: p.childForFieldName('default_type') });
      } else if (p.type === 'parameter_declaration' || p.type === 'optional_parameter_declaration') {
        const name = p.childForFieldName('declarator');
        if (name?.type !== 'identifier') return null;
        out.push({ name: name.text, isType: false, def: p.childForFieldName('default_value') });
      } else {
        return null;
      }
    }
    return out;
  };
  let templateRefs: Map<string, SyntaxNode[]> | null = null;
  const refsOf = (name: string): SyntaxNode[] => {
    if (!templateRefs) {
      templateRefs = new Map();
      for (const t of root.descendantsOfType('template_function')) {
        const n = lastName(calleePath(t.childForFieldName('name')));
        if (n) templateRefs.set(n, [...(templateRefs.get(n) ?? []), t]);
      }
    }
    return templateRefs.get(name) ?? [];
  };
  const instMemo = new Map<number, Instantiation[]>();
  const instantiations = (fn: CudaFunction): Instantiation[] => {
    const hit = instMemo.get(fn.node.id);
    if (hit) return hit;
    const ps = tparams(fn);
    let out: Instantiation[];
    if (ps === null) out = [{ label: `${fn.name}<…>`, values: '', bindings: new Map([['\0unknown', null]]) }];
    else if (ps.length === 0) out = [{ label: '', values: '', bindings: new Map() }];
    else {
      const seen = new Map<string, Instantiation>();
      const bind = (args: SyntaxNode[]): Instantiation => {
        const bindings = new Map<string, number | null>();
        const texts: string[] = [];
        const values: string[] = [];
        ps.forEach((p, i) => {
          const a = args[i] ?? p.def;
          texts.push(a?.text.replace(/\s+/g, ' ') ?? '?');
          if (!a) bindings.set(p.name, null);
          else if (p.isType) bindings.set(p.name, typeBytes(a.text));
          else {
            const v = evalWith(a, bindings);
            bindings.set(p.name, v);
            if (v !== null && a.text.trim() !== String(v)) values.push(`${p.name} = ${v}`);
          }
        });
        return { label: `${fn.name}<${texts.join(', ')}>`, values: values.join(', '), bindings };
      };
      for (const ref of refsOf(fn.name)) {
        if (ref.startIndex >= fn.node.startIndex && ref.endIndex <= fn.node.endIndex) continue;
        const args = (ref.childForFieldName('arguments')?.namedChildren ?? []).filter((c) => c.type !== 'comment');
        const inst = bind(args);
        if (!seen.has(inst.label)) seen.set(inst.label, inst);
      }
      if (seen.size === 0) {
        const inst = bind([]);
        seen.set(inst.label, inst);
      }
      out = [...seen.values()];
    }
    instMemo.set(fn.node.id, out);
    return out;
  };

  // Device functions a kernel reaches through calls, by name, within this source.
  const fnsByName = new Map<string, CudaFunction[]>();
  for (const f of model.functions) if (f.isDevice || f.isKernel) fnsByName.set(f.name, [...(fnsByName.get(f.name) ?? []), f]);
  const reached = (k: CudaFunction): CudaFunction[] => {
    const out = new Map<number, CudaFunction>([[k.node.id, k]]);
    const todo = [k];
    while (todo.length) {
      const f = todo.pop()!;
      for (const c of f.body?.descendantsOfType('call_expression') ?? []) {
        const n = lastName(calleePath(c.childForFieldName('function')));
        for (const g of (n && fnsByName.get(n)) || []) {
          if (g.isDevice && !out.has(g.node.id)) {
            out.set(g.node.id, g);
            todo.push(g);
          }
        }
      }
    }
    return [...out.values()];
  };
  const usageMemo = new Map<number, StaticUsage[]>();
  const staticUsage = (k: CudaFunction): StaticUsage[] => {
    const hit = usageMemo.get(k.node.id);
    if (hit) return hit;
    const fns = reached(k);
    const named = new Set<string>();
    if (fileScope.size) {
      for (const f of fns) for (const id of f.body?.descendantsOfType('identifier') ?? []) if (fileScope.has(id.text)) named.add(id.text);
    }
    const out = instantiations(k).map((inst) => {
      const u: StaticUsage = { inst, bytes: 0, parts: [], unknown: [] };
      const add = (d: SharedDecl, b: ReadonlyMap<string, number | null>) => {
        if (d.dynamic) return;
        const s = size(d, b);
        if (s.bytes === null) u.unknown.push(d);
        else {
          u.bytes += s.bytes;
          u.parts.push({ decl: d, bytes: s.bytes });
        }
      };
      for (const f of fns) {
        // A templated device function's own parameters are not bound by the kernel's instantiation.
        const b: ReadonlyMap<string, number | null> = f === k ? inst.bindings : new Map((tparams(f) ?? []).map((p) => [p.name, null]));
        for (const d of byFn.get(f.node.id) ?? []) add(d, b);
      }
      for (const n of named) add(fileScope.get(n)!, new Map());
      return u;
    });
    usageMemo.set(k.node.id, out);
    return out;
  };

  // `auto kfn = gemm<128>;`, `void* f = (void*)gemm;`, `cuModuleGetFunction(&fn, mod, "gemm")` alias a kernel.
  const aliases = new Map<string, { name: string; args: string | null }>();
  const refArgs = (n: SyntaxNode | null | undefined): string | null => {
    const t = n ? [n, ...n.descendantsOfType('template_function')].find((x) => x.type === 'template_function') : undefined;
    return t ? (t.childForFieldName('arguments')?.text ?? '').replace(/\s+/g, '').replace(/^<|>$/g, '') : null;
  };
  let aliasesBuilt = false;
  const buildAliases = () => {
    aliasesBuilt = true;
    const names = [...model.kernels.keys()].filter((k) => /^\w+$/.test(k));
    if (!names.length) return;
    // `x = ... kernel` initializers, located from the text: walking every initializer of a large file is slow.
    const re = new RegExp(`=[^;=]*?\\b(?:${alternation(names)})\\b`, 'g');
    for (const hit of source.text.matchAll(re)) {
      let init: SyntaxNode | null = root.descendantForIndex(hit.index);
      while (init && init.type !== 'init_declarator' && init.type !== 'declaration' && init.type !== 'function_definition') init = init.parent;
      if (init?.type !== 'init_declarator') continue;
      const name = init.childForFieldName('declarator');
      const value = init.childForFieldName('value');
      const target = kernelRefName(value);
      if (name?.type === 'identifier' && target && model.kernels.has(target)) aliases.set(name.text, { name: target, args: refArgs(value) });
    }
  };
  const alias = (name: string) => {
    if (!aliasesBuilt) buildAliases();
    return aliases.get(name);
  };
  const canonicalKernel = (name: string | null): string | null => (name ? (alias(name)?.name ?? name) : null);
  const kernelArgs = (ref: SyntaxNode | null | undefined): string | null => {
    const own = refArgs(ref);
    if (own !== null) return own;
    const n = kernelRefName(ref);
    return n ? (alias(n)?.args ?? null) : null;
  };

  const optIns: SmemOptIn[] = [];
  const paramIndex = (fn: CudaFunction | null, name: string | null | undefined): number =>
    !fn || !name ? -1 : fn.params.findIndex((p) => p.descendantsOfType('identifier').some((i) => i.text === name));
  for (const c of model.calls) {
    if (!/^(cudaFuncSetAttribute|cuFuncSetAttribute)$/.test(c.name) || !OPT_IN_ATTR.test(c.args[1]?.text ?? '')) continue;
    const fn = model.functionOf(c.node);
    const kernel = canonicalKernel(kernelRefName(c.args[0]));
    const kIdx = paramIndex(fn, kernel);
    if (kIdx < 0 || !fn) {
      optIns.push({ node: c.node, kernel, args: kernelArgs(c.args[0]), value: model.constValue(c.args[2]), fn });
      continue;
    }
    // A helper that raises the attribute for the kernel it is given: each call of it in this file is
    // an opt-in for that call's kernel; a helper never called here may serve any kernel.
    const vIdx = paramIndex(fn, c.args[2]?.text.trim());
    const uses = model.calls.filter((u) => u.name === fn.name && u.node.id !== c.node.id);
    if (!uses.length) optIns.push({ node: c.node, kernel: null, args: null, value: null, fn });
    for (const u of uses) {
      optIns.push({ node: u.node, kernel: canonicalKernel(kernelRefName(u.args[kIdx])), args: kernelArgs(u.args[kIdx]), value: vIdx >= 0 ? model.constValue(u.args[vIdx]) : model.constValue(c.args[2]), fn: model.functionOf(u.node) });
    }
  }
  const optInsFor = (kernel: string | null, args: string | null = null) =>
    optIns.filter((o) => o.kernel === null || (kernel !== null && o.kernel === canonicalKernel(kernel) && (o.args === null || args === null || o.args === args)));

  const dynamicBytes = (l: Launch): number | null => {
    if (l.kind !== 'cudaLaunchKernelEx') return l.smem ? model.constValue(l.smem) : 0;
    // `cudaLaunchConfig_t cfg = {grid, block, smem, stream}` or `cfg.dynamicSmemBytes = n;` in the launching function.
    const cfgArg = l.node.childForFieldName('arguments')?.namedChildren[0];
    const cfg = cfgArg?.type === 'pointer_expression' ? cfgArg.childForFieldName('argument')?.text : cfgArg?.text;
    const fn = model.functionOf(l.node);
    if (!cfg || !fn?.body) return null;
    let value: SyntaxNode | null = null;
    for (const a of fn.body.descendantsOfType(['assignment_expression', 'init_declarator'])) {
      if (a.startIndex > l.node.startIndex) break;
      if (a.type === 'assignment_expression') {
        const left = a.childForFieldName('left');
        if (left?.type === 'field_expression' && left.childForFieldName('argument')?.text === cfg && left.childForFieldName('field')?.text === 'dynamicSmemBytes') value = a.childForFieldName('right');
      } else if (a.childForFieldName('declarator')?.text === cfg) {
        const v = a.childForFieldName('value');
        if (v?.type === 'initializer_list') {
          const items = v.namedChildren.filter((x) => x.type !== 'comment');
          const designated = items.find((x) => x.type === 'initializer_pair' && /dynamicSmemBytes/.test(x.childForFieldName('designator')?.text ?? x.text));
          value = designated ? designated.childForFieldName('value') : items.every((x) => x.type !== 'initializer_pair') ? (items[2] ?? null) : null;
        }
      }
    }
    return value ? model.constValue(value) : 0;
  };

  const shapeMemo = new Map<string, [number, number, number] | null>();
  const blockShape = (kernel: string): [number, number, number] | null => {
    if (shapeMemo.has(kernel)) return shapeMemo.get(kernel)!;
    let shape: [number, number, number] | null = null;
    let conflict = false;
    for (const l of model.launches) {
      if (canonicalKernel(l.kernel) !== kernel || !l.block) continue;
      const d = model.dim3(l.block);
      if (!d) continue;
      if (shape && shape.join() !== d.join()) conflict = true;
      shape = d;
    }
    const out = conflict ? null : shape;
    shapeMemo.set(kernel, out);
    return out;
  };

  return { decls, declFor, size, instantiations, staticUsage, optIns, optInsFor, dynamicBytes, canonicalKernel, kernelArgs, blockShape };
}

/** `66,048` */
export const fmtBytes = (n: number): string => n.toLocaleString('en-US');
/** `64.5` (KB, 1024 bytes, at most one decimal). */
export const fmtKb = (n: number): string => {
  const kb = n / 1024;
  return Number.isInteger(kb) ? String(kb) : kb.toFixed(1).replace(/\.0$/, '');
};

/**
 * N-way bank conflict of one warp-wide shared-memory access: 32 banks of 4 bytes (003 §4.2).
 * `addrs` are byte offsets per lane (null: lane inactive). 8-byte accesses are served per half-warp
 * and 16-byte accesses per quarter-warp, so conflicts only count inside those groups; lanes reading
 * the same word share it (broadcast).
 */
export function bankConflictDegree(addrs: Array<number | null>, elemBytes: number): number {
  const group = elemBytes >= 16 ? 8 : elemBytes === 8 ? 16 : 32;
  let worst = 1;
  for (let g = 0; g < addrs.length; g += group) {
    const banks = new Map<number, Set<number>>();
    for (let l = g; l < Math.min(addrs.length, g + group); l++) {
      const a = addrs[l];
      if (a === null || a === undefined) continue;
      for (let w = Math.floor(a / 4); w <= Math.floor((a + Math.max(1, elemBytes) - 1) / 4); w++) {
        const bank = ((w % 32) + 32) % 32;
        const set = banks.get(bank) ?? new Set<number>();
        set.add(w);
        banks.set(bank, set);
      }
    }
    for (const s of banks.values()) worst = Math.max(worst, s.size);
  }
  return worst;
}

/** Static shared bytes of one kernel (lower bound: known declarations only), for the instantiation a launch names, else the largest. */
export function kernelStaticBytes(facts: SmemFacts, kernel: CudaFunction | undefined, launchCallee?: SyntaxNode | null): { bytes: number; label: string } | null {
  if (!kernel) return null;
  const usages = facts.staticUsage(kernel);
  if (launchCallee?.type === 'template_function') {
    // The launch may leave defaulted arguments out: `gemm<double>` is `gemm<double, 64>`.
    const norm = (t: string) => t.replace(/\s+/g, '');
    const given = (launchCallee.childForFieldName('arguments')?.namedChildren ?? []).filter((c) => c.type !== 'comment').map((c) => norm(c.text));
    const hit = usages.find((u) => {
      const all = norm(u.inst.label.slice(u.inst.label.indexOf('<') + 1, -1)).split(',');
      return given.every((g, i) => all[i] === g);
    });
    if (hit) return { bytes: hit.bytes, label: hit.inst.label };
  }
  let best: StaticUsage | null = null;
  for (const u of usages) if (!best || u.bytes > best.bytes) best = u;
  return best ? { bytes: best.bytes, label: best.inst.label } : null;
}

/** Static shared bytes of the `__global__` function `name` defined in one of `sources` (kernel strings). */
export function staticBytesIn(sources: readonly Source[], name: string, config: ResolvedConfig): { bytes: number; label: string } | null {
  for (const s of sources) {
    const k = cudaModel.compute(s, config).kernels.get(name);
    if (k) return kernelStaticBytes(smemFacts.compute(s, config), k);
  }
  return null;
}

/** The 48 KB a block gets without opt-in (dynamic) and at most (static), over the configured targets (catalog §5.1). */
export function defaultLimitBytes(targets: readonly GpuSpec[]): number {
  return Math.min(...targets.map((t) => t.smemDefaultKb)) * 1024;
}

/** Targets whose per-block opt-in maximum `bytes` exceeds, most restrictive first. */
export function optInCrossings(bytes: number, targets: readonly GpuSpec[]): GpuSpec[] {
  return targets.filter((t) => bytes > t.smemPerBlockOptinKb * 1024).sort((a, b) => a.smemPerBlockOptinKb - b.smemPerBlockOptinKb);
}

/** `RTX 3090/RTX 4090` for the targets sharing the first (tightest) limit; the rest as `A100 (163 KB)`. */
export function describeCrossings(crossed: readonly GpuSpec[]): { gpu: string; limitKb: number; others: string } {
  const limitKb = crossed[0].smemPerBlockOptinKb;
  const first = crossed.filter((t) => t.smemPerBlockOptinKb === limitKb);
  const rest = crossed.filter((t) => t.smemPerBlockOptinKb !== limitKb);
  return { gpu: first.map((t) => t.name).join('/'), limitKb, others: rest.map((t) => `${t.name} (${t.smemPerBlockOptinKb} KB)`).join(', ') };
}

/** Code quoted in a message: one line, at most `max` characters, kernel-string placeholders shown as written (`{tile}`). */
export function quoteCode(t: string, max = 70): string {
  return oneLine(t.replace(/__FMT_(\w+?)__/g, '{$1}').replace(/__FSTR_\d+__/g, '{…}'), max);
}

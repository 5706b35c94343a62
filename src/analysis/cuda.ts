import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../engine/types.js';
import type { Source } from '../sources/types.js';
import { memoized, TEST_OR_BENCH_PATH } from './python.js';
import { calleePath, lastName, matchesVocab } from './syntax.js';

/**
 * The shared model of a CUDA C++ source (a .cu file or a kernel held in a Python string): which
 * functions are kernels or device functions, every launch with its configuration, every runtime
 * API call, loops and hot paths on the host, and a small constant evaluator so checks can put real
 * figures (grid and block sizes) in their messages (catalog §1.4, §5).
 */

export interface CudaFunction {
  node: SyntaxNode;
  name: string;
  isKernel: boolean;
  isDevice: boolean;
  isHost: boolean;
  body: SyntaxNode | null;
  params: SyntaxNode[];
  /** `__launch_bounds__(maxThreads, minBlocks)` arguments, when present. */
  launchBounds?: { node: SyntaxNode; maxThreads: SyntaxNode | null; minBlocks: SyntaxNode | null };
}

export interface Launch {
  node: SyntaxNode;
  kind: 'chevron' | 'cudaLaunchKernel' | 'cudaLaunchCooperativeKernel' | 'cuLaunchKernel' | 'cudaLaunchKernelEx';
  kernel: string | null;
  grid: SyntaxNode | null;
  block: SyntaxNode | null;
  smem: SyntaxNode | null;
  stream: SyntaxNode | null;
  args: SyntaxNode[];
}

export interface ApiCall {
  node: SyntaxNode;
  path: string;
  name: string;
  args: SyntaxNode[];
}

export interface CudaModel {
  source: Source;
  functions: CudaFunction[];
  kernels: Map<string, CudaFunction>;
  launches: Launch[];
  calls: ApiCall[];
  /** Calls whose callee matches a vocabulary (dotted paths, tails, `*.x`). */
  callsMatching(vocab: readonly string[]): ApiCall[];
  functionOf(n: SyntaxNode): CudaFunction | null;
  inKernel(n: SyntaxNode): boolean;
  inDeviceCode(n: SyntaxNode): boolean;
  /** Nearest loop around `n` within its function (for, while, do, range-for). */
  loopOf(n: SyntaxNode): SyntaxNode | null;
  loopsOf(n: SyntaxNode): SyntaxNode[];
  hotPath(n: SyntaxNode): boolean;
  debugGated(n: SyntaxNode): boolean;
  testOrBench: boolean;
  /** Object-like `#define`s of the source. */
  macros: Map<string, string>;
  /** Integer value of a constant expression, or null. */
  constValue(n: SyntaxNode | null | undefined): number | null;
  /** The same for expression text (`WARP_SIZE`, `2 * kTile`): literals, `#define`s and constants of the source. */
  constValueOfText(t: string): number | null;
  /** Threads of a block / blocks of a grid: a scalar or `dim3(x, y, z)`, as [x, y, z] when constant. */
  dim3(n: SyntaxNode | null | undefined): [number, number, number] | null;
  /** For a `dim3` variable: its declaration's extents as written (`dim3 threads(ROWS_X, ROWS_Y)` → `(ROWS_X, ROWS_Y)`), or null. */
  dim3Init(n: SyntaxNode): SyntaxNode | null;
  isGpuOp(n: SyntaxNode): boolean;
}

const LOOPS = ['for_statement', 'while_statement', 'do_statement', 'for_range_loop'];
const LAUNCH_APIS: Record<string, Launch['kind']> = {
  cudaLaunchKernel: 'cudaLaunchKernel',
  cudaLaunchCooperativeKernel: 'cudaLaunchCooperativeKernel',
  cuLaunchKernel: 'cuLaunchKernel',
  cudaLaunchKernelEx: 'cudaLaunchKernelEx',
  cuLaunchCooperativeKernel: 'cudaLaunchCooperativeKernel',
};
const ASYNC_GPU_OPS = /^(cudaMemcpy\w*Async|cudaMemset\w*Async|cudaMemPrefetchAsync|cuMemcpy\w*Async|cuMemsetD\w*Async)$/;
const TYPE_SIZES: Record<string, number> = { char: 1, 'unsigned char': 1, int8_t: 1, uint8_t: 1, bool: 1, short: 2, 'unsigned short': 2, int16_t: 2, uint16_t: 2, __nv_bfloat16: 2, int: 4, 'unsigned int': 4, float: 4, unsigned: 4, long: 8, 'long long': 8, 'unsigned long long': 8, double: 8, half: 2, __half: 2, int2: 8, float2: 8, int4: 16, float4: 16, double2: 16, double4: 32, int64_t: 8, uint64_t: 8, int32_t: 4, uint32_t: 4, size_t: 8 };
const DEBUG_COND = /\bDEBUG\b|\bdebug\b|\bVERBOSE\b|\bverbose\b|_DEBUG\b|\bdebug_|\bNDEBUG\b/;

/**
 * The text of a lambda between its start and its body marks it as device code: `__device__` (or a
 * `*_DEVICE` macro such as `XGBOOST_DEVICE`), or the blank that source masking leaves where
 * `__host__ __device__` stood after the capture list (the parsed text keeps its length).
 */
export function deviceLambdaHead(head: string): boolean {
  return /__device__|\b\w*DEVICE\w*\b/.test(head) || /\][ \t]{10,}[({]/.test(head) || /\][ \t]{10,}(mutable\s*)?$/.test(head) || /\]\s*\([^)]*\)/.test(head) && /\][ \t]{10,}\(/.test(head);
}

export const cudaModel: Analysis<CudaModel> = {
  name: 'cuda-model',
  compute: (source, config) => memoized(cudaMemo, source, config, buildCudaModel),
};
const cudaMemo = new WeakMap<Source, { config: ResolvedConfig; value: CudaModel }>();

function qualifierTokens(fn: SyntaxNode): Set<string> {
  const out = new Set<string>();
  for (const c of fn.children) {
    if (c.type === 'compound_statement' || c.type === 'function_declarator') break;
    out.add(c.type === 'type_identifier' || c.type === 'identifier' ? c.text : c.type);
    if (c.type === 'ERROR' || c.type === 'attribute_declaration' || c.type === 'attributed_statement') {
      for (const t of c.text.split(/[^\w]+/)) out.add(t);
    }
  }
  return out;
}

function declaratorName(fn: SyntaxNode): string {
  let d = fn.childForFieldName('declarator');
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
  const name = d?.childForFieldName('declarator');
  if (!name) return '';
  return name.type === 'qualified_identifier' ? (name.childForFieldName('name')?.text ?? name.text) : name.text;
}

function buildCudaModel(source: Source, config: ResolvedConfig): CudaModel {
  const root = source.root;
  const vocab = config.vocab;

  const macros = new Map<string, string>();
  for (const d of root.descendantsOfType('preproc_def')) {
    const name = d.childForFieldName('name')?.text;
    const value = d.childForFieldName('value')?.text.trim();
    if (name && value !== undefined) macros.set(name, value);
  }
  // RAFT_KERNEL-style macros: configured names, plus any object-like #define that expands to __global__.
  const kernelMacros = new Set(vocab.kernel_macros);
  for (const [k, v] of macros) if (/\b__global__\b/.test(v)) kernelMacros.add(k);

  const functions: CudaFunction[] = [];
  const fnById = new Map<number, CudaFunction>();
  for (const fn of root.descendantsOfType('function_definition')) {
    const q = qualifierTokens(fn);
    const typeText = fn.childForFieldName('type')?.text ?? '';
    const viaMacro = [...q].some((t) => kernelMacros.has(t)) || kernelMacros.has(typeText);
    // In the C++ fallback grammar, masking turns `__global__` into `[[global]]`.
    const isKernel = q.has('__global__') || viaMacro || /\[\[global\]\]/.test(fn.text.slice(0, 200).split('(')[0]);
    const isDevice = q.has('__device__') || /\[\[device\]\]/.test(fn.text.slice(0, 200).split('(')[0]);
    const isHost = !isKernel && (!isDevice || q.has('__host__'));
    const lbNode = fn.children.find((c) => c.type === 'launch_bounds') ?? null;
    let launchBounds: CudaFunction['launchBounds'];
    if (lbNode) {
      const args = lbNode.namedChildren;
      launchBounds = { node: lbNode, maxThreads: args[0] ?? null, minBlocks: args[1] ?? null };
    }
    let d = fn.childForFieldName('declarator');
    while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
    const params = d?.childForFieldName('parameters')?.namedChildren.filter((p) => p.type === 'parameter_declaration' || p.type === 'optional_parameter_declaration') ?? [];
    const f: CudaFunction = { node: fn, name: declaratorName(fn), isKernel, isDevice, isHost, body: fn.childForFieldName('body'), params, launchBounds };
    functions.push(f);
    fnById.set(fn.id, f);
  }
  const kernels = new Map(functions.filter((f) => f.isKernel).map((f) => [f.name, f]));

  // Walking parents crosses into native code per step; checks ask about the same nodes repeatedly.
  const fnMemo = new Map<number, CudaFunction | null>();
  const functionOf = (n: SyntaxNode): CudaFunction | null => {
    const id = n.id;
    let hit = fnMemo.get(id);
    if (hit === undefined) fnMemo.set(id, (hit = functionOfUncached(n)));
    return hit;
  };
  const functionOfUncached = (n: SyntaxNode): CudaFunction | null => {
    let p: SyntaxNode | null = n.parent;
    while (p) {
      if (p.type === 'function_definition') return fnById.get(p.id) ?? null;
      if (p.type === 'lambda_expression') {
        // Device lambdas run on the device; other lambdas belong to their enclosing function.
        if (/\b__device__\b/.test(p.text.slice(0, p.childForFieldName('body')?.startIndex ? p.childForFieldName('body')!.startIndex - p.startIndex : 0))) return null;
      }
      p = p.parent;
    }
    return null;
  };

  const calls: ApiCall[] = [];
  const launches: Launch[] = [];
  const gpuOpIds = new Set<number>();
  for (const c of root.descendantsOfType('call_expression')) {
    const fnNode = c.childForFieldName('function');
    const chevron = c.namedChildren.find((x) => x.type === 'kernel_call_syntax');
    const args = c.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
    if (chevron) {
      const cfg = chevron.namedChildren.filter((x) => x.type !== 'comment');
      const kname = lastName(calleePath(fnNode)) ?? null;
      launches.push({ node: c, kind: 'chevron', kernel: kname, grid: cfg[0] ?? null, block: cfg[1] ?? null, smem: cfg[2] ?? null, stream: cfg[3] ?? null, args });
      gpuOpIds.add(c.id);
      continue;
    }
    const path = calleePath(fnNode);
    if (!path) continue;
    const name = lastName(path) ?? path;
    calls.push({ node: c, path, name, args });
    const lk = LAUNCH_APIS[name];
    if (lk) {
      // cudaLaunchKernelEx(&config, kernel, args...): the kernel is the second argument.
      const k = lk === 'cudaLaunchKernelEx' ? args[1] : args[0];
      const kname = k ? (lastName(calleePath(k.type === 'cast_expression' ? k.childForFieldName('value') : k)) ?? k.text.replace(/^\(.*?\)|[&()]/g, '').trim()) : null;
      // cuLaunchCooperativeKernel shares cuLaunchKernel's (f, gx, gy, gz, bx, by, bz, smem, stream, ...) layout.
      const isDriver = lk === 'cuLaunchKernel' || name === 'cuLaunchCooperativeKernel';
      launches.push({
        node: c,
        kind: lk,
        kernel: kname,
        grid: isDriver ? null : args[1] ?? null,
        block: isDriver ? null : args[2] ?? null,
        smem: isDriver ? args[7] ?? null : lk === 'cudaLaunchKernelEx' ? null : args[4] ?? null,
        stream: isDriver ? args[8] ?? null : lk === 'cudaLaunchKernelEx' ? null : args[5] ?? null,
        args: [],
      });
      gpuOpIds.add(c.id);
    } else if (ASYNC_GPU_OPS.test(name) || ((path.startsWith('cub::') || path.startsWith('thrust::')) && args.length >= 2)) {
      gpuOpIds.add(c.id);
    }
  }

  const loopsOf = (n: SyntaxNode): SyntaxNode[] => {
    const out: SyntaxNode[] = [];
    let child = n;
    let p = n.parent;
    while (p && p.type !== 'function_definition' && p.type !== 'lambda_expression') {
      if (LOOPS.includes(p.type)) {
        // A range-for's range and a for's initializer run once.
        const once = (p.type === 'for_range_loop' && p.childForFieldName('right')?.id === child.id) || (p.type === 'for_statement' && p.childForFieldName('initializer')?.id === child.id);
        if (!once) out.push(p);
      }
      child = p;
      p = p.parent;
    }
    return out;
  };
  const loopOf = (n: SyntaxNode) => loopsOf(n)[0] ?? null;

  const debugGated = (n: SyntaxNode): boolean => {
    // Catalog §1.4 DEBUG_GATED: the file name counts too, and `test_` functions.
    if (/debug|dump|^test_/i.test(source.path.split('/').pop() ?? '')) return true;
    let child = n;
    let p = n.parent;
    while (p) {
      if (p.type === 'preproc_ifdef' || p.type === 'preproc_if') {
        const cond = (p.childForFieldName('name') ?? p.childForFieldName('condition'))?.text ?? '';
        const negated = p.type === 'preproc_ifdef' && p.text.startsWith('#ifndef');
        const inElse = p.childForFieldName('alternative')?.id === child.id;
        if (DEBUG_COND.test(cond) && !/NDEBUG/.test(cond) !== (negated !== inElse)) return true;
        if (/NDEBUG/.test(cond) && (negated !== inElse)) return true;
      }
      if (p.type === 'if_statement') {
        const cond = p.childForFieldName('condition');
        const inCond = cond && cond.startIndex <= n.startIndex && n.endIndex <= cond.endIndex;
        if (cond && !inCond && p.childForFieldName('consequence')?.id === child.id && DEBUG_COND.test(cond.text)) return true;
      }
      if (p.type === 'function_definition' && /debug|dump|^test_/i.test(fnById.get(p.id)?.name ?? '')) return true;
      child = p;
      p = p.parent;
    }
    return false;
  };

  const opStarts = new Map<number, number[]>();
  /** The innermost lambda around `n` inside its function, else the function: GPU operations in a sibling lambda are another scope. */
  const opScope = (n: SyntaxNode, fn: SyntaxNode): number => {
    for (let p = n.parent; p && p.id !== fn.id; p = p.parent) if (p.type === 'lambda_expression') return p.id;
    return fn.id;
  };
  const hotPath = (n: SyntaxNode): boolean => {
    const f = functionOf(n);
    if (!f || !f.isHost) return false;
    // One-time setup/teardown, including constructors and destructors (no return type), is never hot.
    if (config.setupFunctions.test(f.name) || !f.node.childForFieldName('type')) return false;
    if (loopOf(n)) return true;
    if (config.hotPathFunctions.test(f.name)) return true;
    if (!opStarts.size) {
      // GPU-op positions grouped by function once (per-function rescans are quadratic in large files).
      opStarts.set(-1, []);
      for (const x of launches.map((l) => l.node).concat(calls.filter((c) => gpuOpIds.has(c.node.id)).map((c) => c.node))) {
        const fn = functionOf(x)?.node;
        if (!fn) continue;
        const id = opScope(x, fn);
        const list = opStarts.get(id) ?? [];
        list.push(x.startIndex);
        opStarts.set(id, list);
      }
    }
    const starts = opStarts.get(opScope(n, f.node)) ?? [];
    return starts.some((s) => s < n.startIndex) && starts.some((s) => s > n.endIndex);
  };

  // Constant evaluation: literals, #define, constexpr/const integer locals and globals, sizeof, arithmetic.
  // A name resolves by scope: the nearest declaration before the use in the same function (a non-const
  // local or a parameter of that name is not a constant), else a namespace/class-scope constant. A
  // `const int threads = 512` of one function never answers for a `threads` parameter of another.
  interface ConstDecl { fn: SyntaxNode | null; at: number; value: SyntaxNode | null }
  const enclosingFn = (n: SyntaxNode): SyntaxNode | null => {
    for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition') return p;
    return null;
  };
  const scoped = new Map<string, ConstDecl[]>();
  const addScoped = (name: string, d: ConstDecl) => {
    const l = scoped.get(name) ?? [];
    l.push(d);
    scoped.set(name, l);
  };
  for (const d of root.descendantsOfType('declaration')) {
    const quals = d.children.filter((c) => c.type === 'type_qualifier' || c.type === 'storage_class_specifier').map((c) => c.text);
    const isConst = quals.some((q) => q === 'const' || q === 'constexpr' || q === 'static');
    const fn = enclosingFn(d);
    for (const c of d.namedChildren) {
      const name = c.type === 'init_declarator' ? c.childForFieldName('declarator') : c.type === 'identifier' ? c : null;
      if (name?.type !== 'identifier') continue;
      const value = c.type === 'init_declarator' ? c.childForFieldName('value') : null;
      // Namespace-scope non-const names are not tracked (the old behaviour); function-local ones shadow.
      if (!isConst && !fn) continue;
      addScoped(name.text, { fn, at: d.startIndex, value: isConst ? value : null });
    }
  }
  const paramNames = new Map<number, Set<string>>();
  const paramsOf = (fn: SyntaxNode): Set<string> => {
    let s = paramNames.get(fn.id);
    if (!s) {
      s = new Set();
      let d = fn.childForFieldName('declarator');
      while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
      for (const p of d?.childForFieldName('parameters')?.namedChildren ?? []) {
        const id = p.descendantsOfType('identifier').pop();
        if (id) s.add(id.text);
      }
      paramNames.set(fn.id, s);
    }
    return s;
  };
  /** The declaration value a name means at `use` (a node, or null for text from a macro body). */
  const constDeclOf = (name: string, use: SyntaxNode | null): SyntaxNode | null | undefined => {
    const list = scoped.get(name);
    if (!list) return undefined;
    const globals = list.filter((d) => d.fn === null);
    const fn = use ? enclosingFn(use) : null;
    if (fn) {
      let near: ConstDecl | null = null;
      for (const d of list) if (d.fn?.id === fn.id && d.at < use!.startIndex) near = d;
      if (near) return near.value;
      if (paramsOf(fn).has(name)) return null;
    }
    if (globals.length) return globals[globals.length - 1].value;
    // A use outside any function (a global initialiser, a macro body) may name a function's local only when
    // every declaration of it agrees.
    if (!fn) {
      const texts = new Set(list.map((d) => d.value?.text ?? '\u0000'));
      if (texts.size === 1 && list[0].value) return list[0].value;
    }
    return null;
  };
  const constDecls = { has: (name: string) => scoped.has(name), get: (name: string) => constDeclOf(name, null) ?? undefined };
  for (const e of root.descendantsOfType('enumerator')) {
    const name = e.childForFieldName('name')?.text;
    const value = e.childForFieldName('value');
    if (name && value) addScoped(name, { fn: null, at: e.startIndex, value });
  }
  const evalText = (t: string, depth: number): number | null => {
    const m = /^\(?\s*(\d+)[uUlL]*\s*\)?$/.exec(t.trim());
    if (m) return Number(m[1]);
    if (/^0x[0-9a-f]+[uUlL]*$/i.test(t.trim())) return parseInt(t.trim(), 16);
    if (depth > 8) return null;
    // A macro body that is itself an expression: evaluate with a tiny arithmetic parser.
    return arith(t, depth + 1);
  };
  const arith = (t: string, depth: number): number | null => {
    const tokens = t.match(/\d+[uUlL]*|0x[0-9a-fA-F]+|[A-Za-z_]\w*|<<|>>|[-+*/%()]/g);
    if (!tokens || tokens.join('').replace(/\s/g, '') !== t.replace(/\s/g, '')) return null;
    let i = 0;
    const prim = (): number | null => {
      const tok = tokens[i++];
      if (tok === undefined) return null;
      if (tok === '(') {
        const v = shift();
        if (tokens[i++] !== ')') return null;
        return v;
      }
      if (tok === '-') {
        const v = prim();
        return v === null ? null : -v;
      }
      if (/^\d/.test(tok)) return tok.startsWith('0x') ? parseInt(tok, 16) : parseInt(tok, 10);
      const mv = macros.get(tok);
      if (mv !== undefined) return evalText(mv, depth + 1);
      const cd = constDecls.get(tok);
      if (cd) return constValue(cd, depth + 1);
      return null;
    };
    const mul = (): number | null => {
      let v = prim();
      while (v !== null && ['*', '/', '%'].includes(tokens[i] ?? '')) {
        const op = tokens[i++];
        const r = prim();
        if (r === null) return null;
        v = op === '*' ? v * r : op === '/' ? (r === 0 ? null : Math.trunc(v / r)) : r === 0 ? null : v % r;
      }
      return v;
    };
    const add = (): number | null => {
      let v = mul();
      while (v !== null && ['+', '-'].includes(tokens[i] ?? '')) {
        const op = tokens[i++];
        const r = mul();
        if (r === null) return null;
        v = op === '+' ? v + r : v - r;
      }
      return v;
    };
    const shift = (): number | null => {
      let v = add();
      while (v !== null && ['<<', '>>'].includes(tokens[i] ?? '')) {
        const op = tokens[i++];
        const r = add();
        if (r === null) return null;
        v = op === '<<' ? v << r : v >> r;
      }
      return v;
    };
    const v = shift();
    return i === tokens.length ? v : null;
  };
  const constMemo = new Map<number, number | null>();
  function constValue(n: SyntaxNode | null | undefined, depth = 0): number | null {
    if (!n || depth > 12) return null;
    const hit = constMemo.get(n.id);
    if (hit !== undefined) return hit;
    let v: number | null = null;
    switch (n.type) {
      case 'number_literal':
        v = evalText(n.text, depth);
        break;
      case 'type_descriptor':
        // A template argument that names a constant (`k<TILE>`) parses as a type.
        v = n.namedChildren.length === 1 ? constValue(n.namedChildren[0], depth + 1) : null;
        break;
      case 'type_identifier':
      case 'identifier': {
        const mv = macros.get(n.text);
        if (mv !== undefined) v = evalText(mv, depth + 1);
        else if (constDecls.has(n.text)) {
          const d = constDeclOf(n.text, n);
          v = d ? constValue(d, depth + 1) : null;
        }
        else if (source.placeholders?.has(n.text)) {
          const pv = source.placeholders.get(n.text);
          v = pv && /^\d+$/.test(pv.trim()) ? Number(pv.trim()) : null;
        }
        break;
      }
      case 'parenthesized_expression':
        v = constValue(n.namedChildren[0], depth + 1);
        break;
      case 'binary_expression': {
        const l = constValue(n.childForFieldName('left'), depth + 1);
        const r = constValue(n.childForFieldName('right'), depth + 1);
        const op = n.childForFieldName('operator')?.type;
        if (l !== null && r !== null) {
          v = op === '+' ? l + r : op === '-' ? l - r : op === '*' ? l * r : op === '/' && r ? Math.trunc(l / r) : op === '%' && r ? l % r : op === '<<' ? l << r : op === '>>' ? l >> r : null;
        }
        break;
      }
      case 'sizeof_expression': {
        const ty = n.childForFieldName('type')?.text ?? n.namedChildren[0]?.text.replace(/[()]/g, '') ?? '';
        v = TYPE_SIZES[ty.trim().replace(/\s+/g, ' ')] ?? null;
        break;
      }
      case 'cast_expression':
        v = constValue(n.childForFieldName('value'), depth + 1);
        break;
      case 'call_expression': {
        // dim3(256) as a scalar: only the x extent. Any other call (`v.size()`) has no constant value,
        // and must not reach dim3's scalar fallback, which asks constValue again.
        if (calleePath(n.childForFieldName('function')) !== 'dim3') break;
        const d3 = dim3(n);
        v = d3 && d3[1] === 1 && d3[2] === 1 ? d3[0] : null;
        break;
      }
      default:
        v = null;
    }
    constMemo.set(n.id, v);
    return v;
  }
  function dim3(n: SyntaxNode | null | undefined): [number, number, number] | null {
    if (!n) return null;
    if (n.type === 'call_expression' && calleePath(n.childForFieldName('function')) === 'dim3') {
      const a = n.childForFieldName('arguments')?.namedChildren ?? [];
      const vals = a.map((x) => constValue(x));
      if (vals.some((x) => x === null) || vals.length === 0) return null;
      return [vals[0]!, vals[1] ?? 1, vals[2] ?? 1];
    }
    if (n.type === 'initializer_list') {
      const vals = n.namedChildren.map((x) => constValue(x));
      if (vals.some((x) => x === null) || vals.length === 0) return null;
      return [vals[0]!, vals[1] ?? 1, vals[2] ?? 1];
    }
    if (n.type === 'identifier') {
      const d = dim3DeclOf(n);
      if (d) return d.value;
    }
    const v = constValue(n);
    return v === null ? null : [v, 1, 1];
  }
  /**
   * The `dim3 block(256, 1);` declaration a name refers to: the nearest one before the use in the same
   * function, else the file's only namespace-scope declaration of that name.
   */
  function dim3DeclOf(n: SyntaxNode): Dim3Decl | null {
    const decls = dim3Decls().get(n.text);
    if (!decls) return null;
    const fn = functionOf(n)?.node ?? null;
    let near: Dim3Decl | null = null;
    for (const d of decls) if (d.fn !== null && d.fn === fn && d.at < n.startIndex) near = d;
    if (near) return near;
    // Another function's local never answers for this one (a `threads` parameter is not their `dim3 threads`).
    const globals = decls.filter((d) => d.fn === null);
    return fn ? (globals.length === 1 ? globals[0] : null) : decls.length === 1 ? decls[0] : null;
  }
  interface Dim3Decl {
    fn: SyntaxNode | null;
    at: number;
    /** The extents as written: the constructor arguments, the braced list, the assigned value. */
    init: SyntaxNode;
    /** Null when an extent is not a constant. */
    value: [number, number, number] | null;
  }
  let dim3Cache: Map<string, Dim3Decl[]> | null = null;
  function dim3Decls(): Map<string, Dim3Decl[]> {
    if (dim3Cache) return dim3Cache;
    const cache = (dim3Cache = new Map());
    const add = (name: string, d: SyntaxNode, init: SyntaxNode, vals: Array<number | null>) => {
      const list = cache.get(name) ?? [];
      list.push({ fn: functionOf(d)?.node ?? null, at: d.startIndex, init, value: vals.length && vals.every((x) => x !== null) ? [vals[0]!, vals[1] ?? 1, vals[2] ?? 1] : null });
      cache.set(name, list);
    };
    for (const d of root.descendantsOfType('declaration')) {
      if (d.childForFieldName('type')?.text !== 'dim3') continue;
      for (const c of d.namedChildren) {
        if (c.type === 'init_declarator') {
          const name = c.childForFieldName('declarator')?.text;
          const value = c.childForFieldName('value');
          if (!name || !value) continue;
          add(name, d, value, value.type === 'argument_list' || value.type === 'initializer_list' ? value.namedChildren.map((x) => constValue(x)) : [constValue(value)]);
        } else if (c.type === 'function_declarator' && d.parent?.type !== 'translation_unit') {
          // C++'s most vexing parse: `dim3 blk(kThreads);` in a function body reads as a declaration of a
          // function taking a `kThreads`; it is a dim3 built from named constants.
          const name = c.childForFieldName('declarator')?.text;
          const ps = c.childForFieldName('parameters')?.namedChildren ?? [];
          if (!name || !ps.length || ps.some((p) => p.type !== 'parameter_declaration' || p.namedChildren.length !== 1)) continue;
          add(name, d, c.childForFieldName('parameters')!, ps.map((p) => constValue(p.childForFieldName('type'))));
        }
      }
    }
    return cache;
  }

  return {
    source,
    functions,
    kernels,
    launches,
    calls,
    callsMatching: (v) => calls.filter((c) => matchesVocab(c.path, v)),
    functionOf,
    inKernel: (n) => functionOf(n)?.isKernel ?? false,
    inDeviceCode: (n) => {
      const f = functionOf(n);
      return f ? f.isKernel || (f.isDevice && !f.isHost) : false;
    },
    loopOf,
    loopsOf,
    hotPath,
    debugGated,
    testOrBench: TEST_OR_BENCH_PATH.test(source.path),
    macros,
    constValue: (n) => constValue(n),
    dim3,
    constValueOfText: (t: string) => evalText(t, 0),
    dim3Init: (n: SyntaxNode) => (n.type === 'identifier' ? dim3DeclOf(n)?.init ?? null : null),
    isGpuOp: (n) => gpuOpIds.has(n.id),
  };
}

import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { calleePath, lastName, matchesVocab, memoized, TEST_OR_BENCH_PATH } from './syntax.js';
import { includedConstant } from '../index/lookup.js';

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
  /**
   * HOT_PATH: in a host loop, in a `hot_path_functions` function, between two GPU operations, or
   * (unless `opts.contract` is false) before stream-ordered work of a function that takes a stream.
   */
  hotPath(n: SyntaxNode, opts?: { contract?: boolean }): boolean;
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
  /**
   * How a host function is bound to stream-ordered work by its contract: `param` when it takes a
   * stream (`cudaStream_t`, `CUstream`, `at::cuda::CUDAStream`, `rmm::cuda_stream_view`,
   * `cuda::stream_ref`, ...), `local` when it fetches the current stream into a local
   * (`auto s = at::cuda::getCurrentCUDAStream();`), `member` when it is a member function of a class
   * that keeps a stream member; null otherwise.
   */
  streamContract(fn: CudaFunction): 'param' | 'local' | 'member' | null;
  /** Names of `fn`'s stream-typed parameters and locals. */
  streamNames(fn: CudaFunction): Set<string>;
  /** Does expression `n` (an argument) denote a CUDA stream? (a stream-typed name, `model->main_stream`, `ctx->Stream()`, `getCurrentCUDAStream()`). */
  isStreamExpr(n: SyntaxNode | null | undefined): boolean;
  /**
   * Calls of host helpers that queue GPU work: a call that is handed a stream (`layernorm_forward(..., stream)`,
   * `ncclAllReduce(..., comm, stream)`), or a kernel by name (`launch_device(ctx, my_kernel, n, ...)`),
   * with the stream text when one is passed (null when the kernel goes to an unnamed current stream).
   */
  helperOps: Array<{ node: SyntaxNode; stream: string | null; viaKernel: boolean; omitted?: boolean }>;
}

/**
 * `[=] __device__ (size_t i) { ... }`: an extended lambda is a kernel body handed to a launcher. The
 * source mask blanks `__device__` after a capture list (length kept, src/sources/cuda-mask.ts), so the
 * qualifier shows as a run of at least 10 blanks between the capture list and the parameters or body.
 */
const isDeviceLambda = (a: SyntaxNode): boolean => {
  if (a.type !== 'lambda_expression') return false;
  const cap = a.namedChildren.find((x) => x.type === 'lambda_capture_specifier');
  const next = cap?.nextSibling;
  if (!cap || !next) return false;
  const gap = a.text.slice(cap.endIndex - a.startIndex, next.startIndex - a.startIndex);
  return /__device__/.test(gap) || /^[ \t]{10,}$/.test(gap);
};
/** An argument that can carry the caller's stream (a context, handle, resources, executor or policy object). */
/**
 * A call run for its effect, `LaunchN(n, f);` or `check(LaunchN(n, f));`: a launcher. A call whose value is
 * kept (`auto it = MakeTransformIterator(first, [=] __device__ ...)`) builds a functor object instead.
 */
const valueDiscarded = (c: SyntaxNode): boolean => {
  const p = c.parent;
  if (p?.type === 'expression_statement') return true;
  const outer = p?.type === 'argument_list' && p.namedChildren.length === 1 ? p.parent : null;
  return outer?.type === 'call_expression' && outer.parent?.type === 'expression_statement';
};
const STREAM_CARRIER = /(^|[^A-Za-z])(ctx|context|handle|res|resources|exec|executor|policy|queue|stream)s?([^A-Za-z]|$)/i;

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
/** Types that hold a CUDA stream (the handle, its C++ wrappers, and stream views of CCCL / RMM / PyTorch). */
export const STREAM_TYPE = /(^|[\s:<(])(cudaStream_t|CUstream|hipStream_t|CUDAStream|cuda_stream_view|stream_ref|cuda_stream|CUstream_st\s*\*)(?=$|[\s&*>,)])/;
/** Getters of the current or a pooled stream: `at::cuda::getCurrentCUDAStream()`, `c10::cuda::getStreamFromPool()`, `get_current_stream()`. */
const STREAM_GETTER = /(^|::|\.|>|_)(get_?)?(current_?|default_?|stream_?from_?pool|cuda_?)*(cuda_?)?stream(_?get_?current)?$|Stream$/i;
/** Names that conventionally hold a stream: `stream`, `main_stream`, `copy_stream_`, `m_stream`, `computeStream`, `streams[i]`. */
const STREAM_NAME = /^(\w*_)?(stream|strm)(_\w*)?$|^[a-z]\w*Stream_?$|^m?_?[Ss]tream_?$/;
/** Stream management and event calls: they take a stream but queue no GPU work. */
const STREAM_MGMT = /Synchronize|Query|Event|StreamCreate|StreamDestroy|StreamGet|Set\w*Stream|SetStream|GetStream|BeginCapture|EndCapture|IsCapturing|GetCaptureInfo|AttachMemAsync|^(cuda|cu)Graph|StreamWait|StreamAdd/;
/** NCCL collectives and point-to-point calls: the stream is the last argument. */
const NCCL_OP = /^nccl(AllReduce|ReduceScatter|AllGather|Broadcast|Bcast|Reduce|Send|Recv|AllToAll\w*|GroupEnd)$/;
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

/** `cub::DeviceX::Y(nullptr, bytes, ...)` only computes the temporary storage size: no GPU work. */
export const CUB_SIZE_QUERY = /^(nullptr|NULL|0|\(void\s*\*\)\s*(nullptr|NULL|0))$/;
const CPP_STREAM_CAST = /^(static_cast|reinterpret_cast|const_cast)$/;

/** The name a declarator declares: `s`, `&s`, `*s`, `s = 0` → `s`. */
function declName(d: SyntaxNode | null | undefined): string | null {
  let u = d ?? null;
  while (u && u.type !== 'identifier') u = u.childForFieldName('declarator') ?? u.namedChildren.find((c) => c.type !== 'type_qualifier') ?? null;
  return u?.text ?? null;
}

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
  // Kernel names, declared or defined: a host call handed one by name launches it.
  const kernelNames = new Set(kernels.keys());
  for (const d of root.descendantsOfType('declaration')) {
    if (!/^(template\s*<[^>]*>\s*)?(static\s+|extern\s+|inline\s+)*__global__\b/.test(d.text) && !(d.parent?.type === 'template_declaration' && /\b__global__\b/.test(d.text.split('(')[0]))) continue;
    const fd = d.descendantsOfType('function_declarator')[0];
    const name = fd?.childForFieldName('declarator')?.text;
    if (name) kernelNames.add(name);
  }

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

  // Streams a host function holds by contract: stream-typed parameters and locals (`auto s = getCurrentCUDAStream()`).
  const streamNameMemo = new Map<number, Set<string>>();
  const localStreamInit = new Map<number, boolean>();
  const streamNames = (f: CudaFunction): Set<string> => {
    let hit = streamNameMemo.get(f.node.id);
    if (hit) return hit;
    hit = new Set();
    for (const p of f.params) {
      const ty = (p.childForFieldName('type')?.text ?? '') + ' ' + (p.childForFieldName('declarator')?.text.replace(/\w+$/, '') ?? '');
      const name = declName(p.childForFieldName('declarator'));
      if (name && STREAM_TYPE.test(' ' + ty)) hit.add(name);
    }
    let fetched = false;
    for (const d of f.body?.descendantsOfType('declaration') ?? []) {
      const ty = d.childForFieldName('type')?.text ?? '';
      for (const c of d.namedChildren) {
        if (c.type !== 'init_declarator' && c.type !== 'identifier') continue;
        const name = declName(c.type === 'init_declarator' ? c.childForFieldName('declarator') : c);
        const value = c.type === 'init_declarator' ? c.childForFieldName('value') : null;
        const fromGetter = !!value && value.type === 'call_expression' && STREAM_GETTER.test(calleePath(value.childForFieldName('function')) ?? '');
        const cast = !!value && /^(static_cast|reinterpret_cast)\b/.test(value.text) && STREAM_TYPE.test(' ' + value.text);
        if (!name || !(STREAM_TYPE.test(' ' + ty) || (ty === 'auto' && fromGetter))) continue;
        hit.add(name);
        if (fromGetter || cast || (value && value.type === 'call_expression')) fetched = true;
      }
    }
    localStreamInit.set(f.node.id, fetched);
    streamNameMemo.set(f.node.id, hit);
    return hit;
  };
  const isStreamExpr = (n: SyntaxNode | null | undefined, f?: CudaFunction | null): boolean => {
    let u = n ?? null;
    while (u && (u.type === 'parenthesized_expression' || u.type === 'cast_expression' || u.type === 'pointer_expression')) u = u.type === 'cast_expression' ? u.childForFieldName('value') : u.type === 'pointer_expression' ? u.childForFieldName('argument') : u.namedChildren[0] ?? null;
    if (!u) return false;
    const t = u.text.trim();
    if (/^(0|0x0|nullptr|NULL|cudaStreamLegacy|CU_STREAM_LEGACY)$/.test(t)) return false;
    if (/^(cudaStreamPerThread|CU_STREAM_PER_THREAD)$/.test(t)) return true;
    if (u.type === 'call_expression') {
      const fnNode = u.childForFieldName('function');
      const path = calleePath(fnNode) ?? '';
      if (CPP_STREAM_CAST.test(path)) return isStreamExpr(u.childForFieldName('arguments')?.namedChildren[0], f);
      // `s.view()`, `stream.value()`, `copy_stream_.View()`: a stream wrapper's handle.
      if (fnNode?.type === 'field_expression' && /^(view|value|View|get|stream|handle)$/.test(fnNode.childForFieldName('field')?.text ?? '')) {
        if (isStreamExpr(fnNode.childForFieldName('argument'), f)) return true;
      }
      return !/^(cuda|cu)[A-Z]/.test(path) && STREAM_GETTER.test(path);
    }
    if (u.type === 'identifier') {
      const fn = f ?? functionOf(u);
      if (fn && streamNames(fn).has(u.text)) return true;
      return STREAM_NAME.test(u.text) && !/^(n|num|max|min)_?streams?$/i.test(u.text);
    }
    if (u.type === 'field_expression' || u.type === 'qualified_identifier') {
      const last = (u.childForFieldName('field') ?? u.childForFieldName('name'))?.text ?? '';
      return STREAM_NAME.test(last) && !/^(n|num|max|min)_?streams?$/i.test(last);
    }
    if (u.type === 'subscript_expression') {
      const base = u.childForFieldName('argument');
      const last = base?.type === 'field_expression' ? base.childForFieldName('field')?.text ?? '' : base?.text ?? '';
      return /^(\w*_)?streams_?$|Streams_?$/.test(last);
    }
    return false;
  };
  const classMemo = new Map<number, boolean>();
  /** The class (or struct) around a member function, or the one its qualified name names, keeps a stream member. */
  const classKeepsStream = (f: CudaFunction): boolean => {
    let cls: SyntaxNode | null = null;
    for (let p = f.node.parent; p; p = p.parent) if (p.type === 'class_specifier' || p.type === 'struct_specifier') { cls = p; break; }
    let bodies: SyntaxNode[] = [];
    if (cls) bodies = [cls];
    else {
      let d = f.node.childForFieldName('declarator');
      while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
      const q = d?.childForFieldName('declarator');
      const scope = q?.type === 'qualified_identifier' ? q.childForFieldName('scope')?.text : null;
      if (!scope) return false;
      bodies = root.descendantsOfType(['class_specifier', 'struct_specifier']).filter((c) => c.childForFieldName('name')?.text === scope.replace(/<.*$/, ''));
    }
    return bodies.some((c) => {
      const hit = classMemo.get(c.id);
      if (hit !== undefined) return hit;
      const v = (c.childForFieldName('body')?.namedChildren ?? []).some((m) => m.type === 'field_declaration' && STREAM_TYPE.test(' ' + (m.childForFieldName('type')?.text ?? '')));
      classMemo.set(c.id, v);
      return v;
    });
  };
  const contractMemo = new Map<number, 'param' | 'local' | 'member' | null>();
  const streamContract = (f: CudaFunction): 'param' | 'local' | 'member' | null => {
    let hit = contractMemo.get(f.node.id);
    if (hit === undefined) contractMemo.set(f.node.id, (hit = streamContractUncached(f)));
    return hit;
  };
  const streamContractUncached = (f: CudaFunction): 'param' | 'local' | 'member' | null => {
    if (!f.isHost) return null;
    const names = streamNames(f);
    if (f.params.some((p) => names.has(declName(p.childForFieldName('declarator')) ?? ''))) return 'param';
    if (localStreamInit.get(f.node.id)) return 'local';
    return classKeepsStream(f) ? 'member' : null;
  };

  const calls: ApiCall[] = [];
  const launches: Launch[] = [];
  const gpuOpIds = new Set<number>();
  const helperOps: CudaModel['helperOps'] = [];
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
    if (!path) {
      // A launch-configuration object called with the kernel, `Launcher{grid, block, smem, stream}(kernel, args...)`:
      // the stream is the fourth element; fewer elements leave it at its default, the legacy stream.
      const init = fnNode?.type === 'compound_literal_expression' ? fnNode.namedChildren.find((x) => x.type === 'initializer_list') : undefined;
      const cfg = init?.namedChildren.filter((x) => x.type !== 'comment') ?? [];
      const k = args[0];
      const host = init ? functionOf(c) : undefined;
      if (host?.isHost && cfg.length >= 2 && cfg.length <= 4 && k && ((k.type === 'identifier' || k.type === 'template_function') && kernelNames.has(lastName(calleePath(k)) ?? k.text) || isDeviceLambda(k))) {
        helperOps.push({ node: c, stream: cfg[3]?.text ?? null, viaKernel: true, omitted: cfg.length < 4 });
        gpuOpIds.add(c.id);
      }
      continue;
    }
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
    } else if (ASYNC_GPU_OPS.test(name) || (path.startsWith('thrust::') && args.length >= 2) || (path.startsWith('cub::') && args.length >= 2 && !CUB_SIZE_QUERY.test(args[0].text.trim()))) {
      gpuOpIds.add(c.id);
    } else if (NCCL_OP.test(name)) {
      gpuOpIds.add(c.id);
    } else if (!/^(cuda|cu)[A-Z]/.test(name) && !STREAM_MGMT.test(name) && !CPP_STREAM_CAST.test(path) && !/^(std::)?(move|forward|swap)$/.test(path)) {
      // A host helper handed a stream or a kernel queues GPU work (a launcher, a library call, a collective).
      const host = functionOf(c);
      if (!host || !host.isHost) continue;
      const s = args.find((a) => isStreamExpr(a, host));
      const viaKernel = args.some((a) => ((a.type === 'identifier' || a.type === 'template_function') && kernelNames.has(lastName(calleePath(a)) ?? a.text)) || (isDeviceLambda(a) && valueDiscarded(c)));
      if (s || viaKernel) {
        // A launcher handed a kernel (or a `__device__` lambda) and nothing that can carry a stream
        // queues it on its default, the legacy stream (`LaunchN(n, [=] __device__ (size_t i) {...})`).
        const omitted = !s && args.some(isDeviceLambda) && !args.some((a) => !isDeviceLambda(a) && STREAM_CARRIER.test(a.text));
        helperOps.push({ node: c, stream: s ? s.text : null, viaKernel, omitted });
        gpuOpIds.add(c.id);
      }
    }
  }

  // A helper this file calls with a stream elsewhere (`Upload(dst, src, n, stream)`), called here with
  // fewer arguments and none of them a stream, runs on its default stream argument: the legacy stream.
  {
    const streamedArity = new Map<string, number>();
    for (const h of helperOps) {
      if (h.stream === null) continue;
      const p = calleePath(h.node.childForFieldName('function'));
      const n = h.node.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment').length ?? 0;
      if (p) streamedArity.set(p, Math.max(streamedArity.get(p) ?? 0, n));
    }
    const known = new Map(helperOps.map((h) => [h.node.id, h]));
    for (const c of streamedArity.size ? calls : []) {
      const arity = streamedArity.get(c.path);
      // CUB's device algorithms are read in streams.ts; a temp-storage size query queues no work.
      if (arity === undefined || c.args.length >= arity || c.path.replace(/^::/, '').startsWith('cub::') || CUB_SIZE_QUERY.test(c.args[0]?.text.trim() ?? '')) continue;
      const host = functionOf(c.node);
      if (!host || !host.isHost || c.args.some((a) => isStreamExpr(a, host) || STREAM_CARRIER.test(a.text))) continue;
      const h = known.get(c.node.id);
      if (h) h.omitted = true;
      else {
        helperOps.push({ node: c.node, stream: null, viaKernel: false, omitted: true });
        gpuOpIds.add(c.node.id);
      }
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
  const hotPath = (n: SyntaxNode, opts?: { contract?: boolean }): boolean => {
    const f = functionOf(n);
    if (!f || !f.isHost) return false;
    // One-time setup/teardown, including constructors and destructors (no return type), is never hot.
    if (config.setupFunctions.test(f.name) || !f.node.childForFieldName('type')) return false;
    if (loopOf(n)) return true;
    // An executable's `main` runs its straight-line code once: allocations and uploads there are setup.
    if (f.name === 'main') return false;
    // A function that takes a stream (or fetches the current one) is stream-ordered work by contract,
    // called from its callers' hot paths whatever its name.
    const contract = streamContract(f);
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
        const nodes = opNodes.get(id) ?? [];
        nodes.push(x);
        opNodes.set(id, nodes);
      }
    }
    const starts = opStarts.get(opScope(n, f.node)) ?? [];
    const between = starts.some((s) => s < n.startIndex) && starts.some((s) => s > n.endIndex);
    if (between) return true;
    if ((contract !== 'param' && contract !== 'local') || opts?.contract === false) return false;
    // Before stream-ordered work, unless the function drives its own loop of that work and `n` is
    // the once-per-call setup hoisted out of it.
    const after = starts.filter((s) => s > n.endIndex);
    if (!after.length) return false;
    const ops = opNodes.get(opScope(n, f.node)) ?? [];
    return !ops.some((o) => o.startIndex > n.endIndex && loopOf(o));
  };
  const opNodes = new Map<number, SyntaxNode[]>();

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
  // Project index (src/index/): a `#define` or namespace-scope constant of an included project header,
  // for a name this source does not declare. Its value was evaluated by this same model in its own file.
  const projectConst = (name: string): number | null => (config.projectIndex ? (includedConstant(config, source.path, name)?.num ?? null) : null);
  /** A parameter of the enclosing function shadows any header constant of that name. */
  const paramOrLocal = (n: SyntaxNode): boolean => {
    const fn = enclosingFn(n);
    return !!fn && paramsOf(fn).has(n.text);
  };
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
      return projectConst(tok);
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
        } else if (!paramOrLocal(n)) v = projectConst(n.text);
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
    streamContract,
    streamNames,
    isStreamExpr: (n) => isStreamExpr(n),
    helperOps,
  };
}

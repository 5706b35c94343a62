import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { calleePath, lastName, matchesVocab, memoized, pyArgs, TEST_OR_BENCH_PATH, unparen, usesVocabulary } from './syntax.js';

// Shared with the CUDA model; they live in syntax.ts now and stay importable from here.
export { memoized, TEST_OR_BENCH_PATH };
import { pyFunctionFacts } from '../index/lookup.js';

/**
 * The host-side model of a Python module that the host-device, sync and memory rules share
 * (catalog §1.4): which values live on the device (DEVICE taint), which expressions copy device
 * data to the host (D2H), which calls do GPU work (GPU_OP), and the context predicates
 * (IN_LOOP, HOT_PATH, DEBUG_GATED, TEST_OR_BENCH, CPU fallback).
 */

export type D2HKind = 'get' | 'asnumpy' | 'item' | 'tolist' | 'convert' | 'print' | 'str' | 'condition' | 'builtin' | 'copy-to-host';

export interface D2H {
  /** The node that performs the transfer (a call, or the condition expression). */
  node: SyntaxNode;
  kind: D2HKind;
  /** The device expression that is read. */
  target: SyntaxNode;
  /** One element (`int(d[-1])`, `d[i].get()`, `x.item()`) rather than a whole array. */
  scalar: boolean;
}

export interface GpuOp {
  node: SyntaxNode;
  kind: 'launch' | 'kernel-call' | 'cccl' | 'cupy' | 'operator' | 'method' | 'async-copy' | 'helper';
}

const LOOP_TYPES = ['for_statement', 'while_statement', 'list_comprehension', 'set_comprehension', 'dictionary_comprehension', 'generator_expression'];
const FUNCTION_TYPES = ['function_definition', 'lambda'];
const HOST_METHODS = new Set(['get', 'item', 'tolist', 'tobytes', '__int__', '__float__', '__bool__', 'numpy', 'cpu']);
// CuPy returns views for these (no kernel, no copy): calling them is not GPU work.
const VIEW_METHODS = new Set(['view', 'reshape', 'transpose', 'swapaxes', 'squeeze']);
const NON_DEVICE_CP = new Set([
  'asnumpy', 'dtype', 'get_array_module', 'iinfo', 'finfo', 'result_type', 'can_cast', 'isscalar', 'ndim', 'shape', 'size',
  'float16', 'float32', 'float64', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'bool_',
  'complex64', 'complex128', 'RawKernel', 'RawModule', 'ElementwiseKernel', 'ReductionKernel', 'fuse', 'get_default_memory_pool',
  'get_default_pinned_memory_pool', 'show_config', 'is_available',
  // Type and structure predicates answer on the host from the Python object, with no kernel and no copy.
  'issparse', 'isspmatrix', 'isspmatrix_csr', 'isspmatrix_csc', 'isspmatrix_coo', 'isspmatrix_dia', 'iscomplexobj', 'isrealobj',
  'isfortran', 'promote_types', 'min_scalar_type', 'common_type',
]);
const ALLOC_CREATORS = new Set(['empty', 'zeros', 'ones', 'full', 'empty_like', 'zeros_like', 'ones_like', 'full_like', 'arange', 'asarray', 'array', 'ascontiguousarray', 'copy']);
const CONVERTERS = new Set(['int', 'float', 'bool', 'complex']);
const ITERATING_BUILTINS = new Set(['list', 'set', 'tuple', 'sorted', 'sum', 'min', 'max', 'any', 'all', 'range', 'map', 'enumerate', 'zip', 'len_']);

export interface PyModel {
  source: Source;
  isDevice(expr: SyntaxNode | null | undefined): boolean;
  d2h: D2H[];
  d2hAt(node: SyntaxNode): D2H | undefined;
  gpuOps: GpuOp[];
  allocs: SyntaxNode[];
  isGpuOpNode(n: SyntaxNode): boolean;
  /** The function_definition (or module) a node belongs to. */
  scopeOf(n: SyntaxNode): SyntaxNode;
  /** Nearest enclosing loop in the same function whose body re-runs `n` each iteration. */
  loopOf(n: SyntaxNode): SyntaxNode | null;
  inLoop(n: SyntaxNode): boolean;
  debugGated(n: SyntaxNode): boolean;
  inCpuFallback(n: SyntaxNode): boolean;
  hotPath(n: SyntaxNode): boolean;
  testOrBench: boolean;
  importsCupy: boolean;
  /** The file uses the vibeSpatial helpers (catalog §2.4). */
  projectVocabulary: boolean;
  /** GPU ops and allocations of a scope, in document order. */
  gpuWorkIn(scope: SyntaxNode): SyntaxNode[];
  /** Assignments `name = value` by name, in document order, within the scope. */
  assignmentsIn(scope: SyntaxNode): Map<string, Array<{ node: SyntaxNode; value: SyntaxNode }>>;
  /** Identifier uses of `name` inside `scope`, in document order (assignment targets excluded). */
  usesOf(name: string, scope: SyntaxNode): SyntaxNode[];
  /**
   * D2H reads whose host result flows into `expr`: the D2Hs inside it and, through host names assigned
   * earlier in the same function (host arithmetic, `h = d.get(); n = int(h[-1])`), theirs, transitively.
   * Metadata of a fetched array (`h.shape`, `len(h)`) does not carry the flow; nor does a DEVICE value.
   */
  d2hSourcesOf(expr: SyntaxNode): D2H[];
  /**
   * The host expression a read is reported on: the right-hand side of the host assignment that holds it
   * (`n_out = int(d_off[-1]) + int(d_cnt[-1])`), else the read itself. Rules starting from the same read
   * point at the same node, so catalog §2.4 merges their findings.
   */
  hostValueOf(d: D2H): SyntaxNode;
  /**
   * The same-file function a call runs, for callers that use its summary: `helper(...)` (module level),
   * `self.method(...)` (same class), `obj._private(...)` (the one class of this file that defines it).
   */
  calleeDef(call: SyntaxNode): SyntaxNode | null;
  /** Names bound to kernels (objects whose call is a launch). */
  kernelNames: Set<string>;
  /** calleePath of a call node. */
  callPath(call: SyntaxNode): string | null;
  isCall(n: SyntaxNode, vocab: readonly string[]): boolean;
  /**
   * `isCall`, also trying the callee with its import alias expanded: `from cupy.cuda import runtime as rt;
   * rt.malloc(n)` matches `cupy.cuda.runtime.malloc`, `from cupyx import empty_pinned` matches `cupyx.empty_pinned`.
   */
  callMatches(n: SyntaxNode, vocab: readonly string[]): boolean;
  /**
   * The same test for a name or attribute that is referenced rather than called: `set_allocator(malloc_managed)`
   * after `from cupy.cuda import malloc_managed` matches `cupy.cuda.malloc_managed`.
   */
  pathMatches(n: SyntaxNode, vocab: readonly string[]): boolean;
  /**
   * Normal (non-exceptional) control flow can reach `b` after executing `a` (same function, `b` later in
   * the text): no `return`/`raise` in between on the way, `b` is not in a sibling branch of an `if`/`match`
   * that holds `a`, and not in an `except` clause of a `try` that holds `a`.
   */
  flowsTo(a: SyntaxNode, b: SyntaxNode): boolean;
  /** Every name the file's import statements bind, with its module path (`ndi` → `pkg._vendored.ndimage`, `f` → `.mod.f`). */
  importMap: ReadonlyMap<string, string>;
  /** Module an import statement of this file binds to `alias` (`np` → `numpy`), if any. */
  moduleOf(alias: string): string | undefined;
  /** A name this file imports `module` under (`cupy` → `cp`), or null. */
  aliasFor(module: string): string | null;
  /** The call path names the host array module (`np.sort`, `numpy.add.at`), by the file's imports or the `host_array_modules` convention. */
  isNumpyPath(path: string | null): boolean;
  /** DEVICE arguments of a call, looking one level into list/tuple arguments (`np.concatenate([d_a, d_b])`). */
  deviceArgsOf(call: SyntaxNode): SyntaxNode[];
  /** A host-to-device upload of its argument: `h2d_calls`, `<device>.set(host)`, or a `memcpy_calls` copy naming HostToDevice. */
  isUpload(call: SyntaxNode): boolean;
}

/**
 * The device-array naming conventions a reviewer reads as "this lives on the GPU": `d_x`, `dev_x`,
 * `x_gpu`, `gpu_x`, `x_device` / `x_dev` (but not a device handle such as `target_device`).
 */
const DEVICE_NAME = /^(d|dev|gpu)_|_(gpu|dev|device)$/;
const DEVICE_HANDLE_NAME = /(^|_)(each|per|all|any|every|same|which|target|default|torch|cuda|current|compute|main|src|dst|source|dest|to|from|on|my|the|orig|original|prev|next|other|local|host|input|output|is|use|has|get|set|num|n)_(device|dev)$/;
export const deviceByName = (name: string): boolean => DEVICE_NAME.test(name) && !DEVICE_HANDLE_NAME.test(name);

/**
 * Annotations of device arrays: CuPy / Numba device arrays, and warp arrays (warp allocates on its
 * default CUDA device, as `device_default_factories` reads `wp.zeros`).
 */
const DEVICE_ANNOTATION = /\b(cp|cupy)\.ndarray\b|\bDeviceArray\b|\bDeviceBuffer\b/;
// Warp arrays only as the whole annotation (optionally `| None`): `wp.array | Sequence[int]` accepts host data too.
const WARP_ANNOTATION = /^(?:Optional\[\s*)?(?:wp|warp)\.(?:array|array[1-4]d|indexedarray|fabricarray)\b(?:\([^()]*\))?\s*\]?(?:\s*\|\s*None)?$/;
/** `Sequence[wp.array]`, `list[cp.ndarray]`, `tuple[cp.ndarray, ...]`, optionally `| None`: a host container of device arrays. */
const DEVICE_CONTAINER_ANNOTATION =
  /^(?:Optional\[\s*)?(?:typing\.)?(?:list|List|tuple|Tuple|Sequence|Iterable|Iterator)\[\s*(?:(?:wp|warp)\.(?:array|array[1-4]d|indexedarray|fabricarray)\b(?:\([^()]*\))?|(?:cp|cupy)\.ndarray)\s*(?:,\s*\.\.\.\s*)?\]\s*\]?(?:\s*\|\s*None)?$/;
const HOST_ANNOTATION =
  /^(?:Optional\[\s*)?(?:int|float|bool|str|bytes|complex|(?:np|numpy)\.ndarray|(?:npt\.)?NDArray(?:\[.*\])?|(?:typing\.)?(?:list|List|tuple|Tuple|dict|Dict|Sequence|Iterable|Iterator|Mapping|set|Set|frozenset)\[.*\])\s*\]?(?:\s*\|\s*None)?$/;
const DEBUG_COND = /\bDEBUG\b|\bdebug\b|__debug__|isEnabledFor\(|\bVERBOSE\b|\bverbose\b|_debug\b|\bdebug_|_verbose\b|\bverbosity\b/;
const DEBUG_NAME = /debug|dump|^test_/i;
const GPU_COND = /\b(use_gpu|gpu|cuda|cupy|HAS_CUPY|HAS_GPU|has_gpu|gpu_available|on_device|device)\b|\bcp\.ndarray\b|\bxp\s+is\s+cp\b/i;
// `isinstance(x, np.ndarray)` / `xp is np` select the host implementation in dual-backend code.
const CPU_COND = /\b(cpu|fallback|use_numpy|numpy_fallback|on_host|host_only)\b|isinstance\([^)]*\b(np|numpy)\.ndarray\b|\bxp\s+is\s+(np|numpy)\b/i;

export const pythonModel: Analysis<PyModel> = {
  name: 'python-model',
  compute: (source, config) => memoized(pyMemo, source, config, buildModel),
};

// Analyses that build on this model (stream facts) call `compute` directly; one model per source and config.
const pyMemo = new WeakMap<Source, { config: ResolvedConfig; value: PyModel }>();

function buildModel(source: Source, config: ResolvedConfig): PyModel {
  const root = source.root;
  const vocab = config.vocab;
  const text = source.text;
  const memo = new Map<number, boolean>();
  const scopeMemo = new Map<number, SyntaxNode>();

  const scopeOf = (n: SyntaxNode): SyntaxNode => {
    const hit = scopeMemo.get(n.id);
    if (hit) return hit;
    let p = n.parent;
    while (p && p.type !== 'function_definition') p = p.parent;
    const s = p ?? root;
    scopeMemo.set(n.id, s);
    return s;
  };

  // Assignments per scope, by name, in document order.
  const assignsByScope = new Map<number, Map<string, Array<{ node: SyntaxNode; value: SyntaxNode }>>>();
  const kernelNames = new Set<string>();
  const kernelDicts = new Set<string>();
  const allAssignments = root.descendantsOfType(['assignment', 'augmented_assignment']);
  for (const a of allAssignments) {
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (!left || !right) continue;
    const scope = scopeOf(a);
    let m = assignsByScope.get(scope.id);
    if (!m) assignsByScope.set(scope.id, (m = new Map()));
    const targets = left.type === 'pattern_list' || left.type === 'tuple_pattern' ? left.namedChildren : [left];
    for (const t of targets) {
      const key = t.type === 'identifier' || t.type === 'attribute' ? t.text : null;
      if (!key) continue;
      const list = m.get(key) ?? [];
      list.push({ node: a, value: targets.length > 1 ? a : right });
      m.set(key, list);
    }
    const rv = unparen(right);
    if (rv?.type === 'call' && left.type !== 'pattern_list') {
      const p = calleePath(rv.childForFieldName('function'));
      if (matchesVocab(p, vocab.kernel_factories)) kernelNames.add(left.text);
      if (p && /(^|\.)(compile_kernels|get_kernels|load_kernels)$/.test(p)) kernelDicts.add(left.text);
    }
  }

  const params = new Map<number, Set<string>>();
  const hostParams = new Map<number, Set<string>>();
  // rulesA (#13): `cell_ijks: Sequence[wp.array]`, `bufs: list[cp.ndarray]`: a host container whose
  // elements are device arrays (its loop elements and subscripts are DEVICE; see loopElementIsDevice).
  const containerParams = new Map<number, Set<string>>();
  for (const fn of root.descendantsOfType('function_definition')) {
    const set = new Set<string>();
    const hostSet = new Set<string>();
    const containerSet = new Set<string>();
    containerParams.set(fn.id, containerSet);
    // A warp kernel or device function (`@wp.kernel`, `@wp.func`) runs on the device: its `wp.array`
    // parameters are not host-side device handles.
    const deco = fn.parent?.type === 'decorated_definition' ? fn.parent.namedChildren.filter((c) => c.type === 'decorator').map((c) => c.text) : [];
    // Project wrappers spell it `@cache.dynamic_kernel(...)`, `@dynamic_func`; a body that asks `wp.tid()` is a kernel too.
    const deviceCode =
      deco.some((d) => /^@\s*(?:[\w.]+\.)?(?:\w+_)?(?:kernel|func|func_\w+|jit)\b/.test(d)) ||
      fn.descendantsOfType('call').some((c) => /^(wp|warp)\.tid$/.test(c.childForFieldName('function')?.text ?? ''));
    for (const p of fn.childForFieldName('parameters')?.namedChildren ?? []) {
      if (p.type === 'typed_parameter' || p.type === 'typed_default_parameter') {
        const ty = p.childForFieldName('type')?.text ?? '';
        const name = p.namedChildren.find((c) => c.type === 'identifier')?.text ?? p.childForFieldName('name')?.text;
        // `np.ndarray | cp.ndarray` (or ArrayLike) accepts host arrays too: not known to be on the device.
        const hostToo = /\b(np|numpy)\.ndarray\b|ArrayLike\b/.test(ty);
        // `list[cp.ndarray]` is a host container of device arrays, and an `int`/`np.ndarray`
        // annotation overrides the `d_` naming convention.
        if (name && HOST_ANNOTATION.test(ty.trim())) {
          hostSet.add(name);
          if (!deviceCode && DEVICE_CONTAINER_ANNOTATION.test(ty.trim()) && !/device\s*=\s*["']cpu/.test(ty)) containerSet.add(name);
        } else if (name && !hostToo && DEVICE_ANNOTATION.test(ty)) set.add(name);
        else if (name && !deviceCode && WARP_ANNOTATION.test(ty.trim()) && !/device\s*=\s*["']cpu/.test(ty)) set.add(name);
      }
    }
    params.set(fn.id, set);
    hostParams.set(fn.id, hostSet);
  }

  const callPath = (call: SyntaxNode) => calleePath(call.childForFieldName('function'));

  // Names bound by import statements anywhere in the file (alias → module).
  const imports = new Map<string, string>();
  for (const imp of root.descendantsOfType(['import_statement', 'import_from_statement'])) {
    const from = imp.type === 'import_from_statement' ? imp.childForFieldName('module_name')?.text : undefined;
    for (const nm of imp.childrenForFieldName('name')) {
      if (nm.type === 'aliased_import') {
        const alias = nm.childForFieldName('alias')?.text;
        const mod = nm.childForFieldName('name')?.text;
        if (alias && mod) imports.set(alias, from ? `${from}.${mod}` : mod);
      } else if (nm.type === 'dotted_name') {
        if (from) imports.set(nm.text, `${from}.${nm.text}`);
        else imports.set(nm.text.split('.')[0], nm.text.split('.')[0]);
      }
    }
  }
  // Module-level aliases of imported names, bound once: `_xp = cupy`, `to_dev = cp.asarray`, `ptr = runtime.pointer`.
  // They name the same module or function as the import they copy (a conditional `xp = cp if gpu else np` does not).
  {
    const once = new Map<string, SyntaxNode[]>();
    for (const a of root.namedChildren) {
      const asg = a.type === 'expression_statement' ? a.namedChildren[0] : null;
      if (asg?.type !== 'assignment') continue;
      const left = asg.childForFieldName('left');
      const right = asg.childForFieldName('right');
      if (left?.type !== 'identifier' || !right) continue;
      once.set(left.text, [...(once.get(left.text) ?? []), right]);
    }
    for (const [name, rights] of once) {
      const r = rights.length === 1 ? rights[0] : null;
      if (!r || imports.has(name) || (r.type !== 'identifier' && r.type !== 'attribute')) continue;
      if (r.type === 'attribute' && r.descendantsOfType('call').length) continue;
      // Rebound elsewhere (in a function through `global`, or a loop at module level): not a fixed alias.
      if (allAssignments.some((x) => x.childForFieldName('left')?.text === name && x.childForFieldName('right')?.id !== r.id)) continue;
      const head = r.text.split('.')[0];
      const mod = imports.get(head);
      if (mod !== undefined) imports.set(name, mod + r.text.slice(head.length));
    }
  }
  const isNumpyPath = (p: string | null): boolean => {
    if (!p || !p.includes('.')) return false;
    const head = p.split('.')[0];
    const mod = imports.get(head);
    if (mod !== undefined) return mod === 'numpy' || mod.startsWith('numpy.');
    return vocab.host_array_modules.includes(head);
  };
  const aliasFor = (module: string): string | null => {
    for (const [alias, mod] of imports) if (mod === module) return alias;
    return null;
  };
  const deviceArgsOf = (call: SyntaxNode): SyntaxNode[] => {
    const { positional, keywords } = pyArgs(call);
    const out: SyntaxNode[] = [];
    for (const a of [...positional, ...keywords.values()]) {
      const u = unparen(a.type === 'list_splat' ? a.namedChildren[0] : a);
      if (!u) continue;
      if (u.type === 'list' || u.type === 'tuple') out.push(...u.namedChildren.filter((e) => isDevice(e)));
      else if (isDevice(u)) out.push(u);
    }
    return out;
  };

  /** A call path with its import alias expanded: `_cp.zeros` → `cupy.zeros`, `to_device` → `cupy.asarray`. */
  const resolvedPath = (p: string | null): string | null => {
    if (!p) return p;
    const dot = p.indexOf('.');
    const head = dot < 0 ? p : p.slice(0, dot);
    const mod = imports.get(head);
    return mod && mod !== head ? mod + (dot < 0 ? '' : p.slice(dot)) : p;
  };
  const onDeviceModule = (p: string) => vocab.device_modules.some((m) => p.startsWith(m + '.')) && !/\.cuda\./.test(p + '.') && !p.includes('.cuda.');
  // `cp.zeros` by the vocabulary's spelling, or any alias the file's imports give CuPy (`import cupy as _cp`,
  // `import cupyx.scipy.ndimage as ndi`, `from cupy import asarray as to_device`).
  const importsWarp = [...imports.values()].some((m) => m === 'warp' || m.startsWith('warp.'));
  const isCupyModulePath = (p: string | null) => {
    if (!p) return false;
    if (onDeviceModule(p)) return true;
    const r = resolvedPath(p);
    return !!r && r !== p && onDeviceModule(r);
  };
  /** Config calls of CuPy that launch nothing (`cp.random.seed`, `cp.fft.config.get_plan_cache`, `@cp.memoize`). */
  const CUPY_NON_OP = /^(seed|memoize|clear_memo|get_\w+|set_\w+|show_\w+|is_\w+|errstate|seterr|rawkernel|fuse|jit|RandomState|default_rng|Stream|Event|Device)$/;

  // `for v in X` / `[f(v) for v in X]` bind `v` to an element of X. Iterating a CuPy array yields
  // device views (`X[i]`, no copy), so the element of a DEVICE iterable is DEVICE until it is used.
  type LoopBind = { loop: SyntaxNode; target: SyntaxNode; value: SyntaxNode | null };
  const loopBinds = new Map<number, Map<string, LoopBind[]>>();
  for (const loop of root.descendantsOfType(['for_statement', 'for_in_clause'])) {
    const left = loop.childForFieldName('left');
    const right = unparen(loop.childForFieldName('right'));
    if (!left || !right) continue;
    const targets = left.type === 'pattern_list' || left.type === 'tuple_pattern' ? left.namedChildren : [left];
    let values: Array<SyntaxNode | null> = targets.length === 1 ? [right] : targets.map(() => null);
    if (targets.length > 1 && right.type === 'call') {
      const fname = right.childForFieldName('function')?.text;
      const args = pyArgs(right).positional;
      if (fname === 'enumerate' && targets.length === 2 && args[0]) values = [null, args[0]];
      else if (fname === 'zip' && args.length === targets.length) values = args;
    }
    const scope = scopeOf(loop);
    let byName = loopBinds.get(scope.id);
    if (!byName) loopBinds.set(scope.id, (byName = new Map()));
    for (let i = 0; i < targets.length; i++) {
      const t = targets[i];
      if (t.type !== 'identifier') continue;
      const list = byName.get(t.text) ?? [];
      list.push({ loop, target: t, value: values[i] });
      byName.set(t.text, list);
    }
  }
  /** The loop binding of `name` visible at `at`; `start` orders it against plain assignments. */
  function loopBindingAt(scope: SyntaxNode, name: string, at: SyntaxNode): (LoopBind & { start: number }) | undefined {
    let best: (LoopBind & { start: number }) | undefined;
    for (const b of loopBinds.get(scope.id)?.get(name) ?? []) {
      const right = b.loop.childForFieldName('right');
      if (right && right.startIndex <= at.startIndex && at.endIndex <= right.endIndex) continue;
      if (b.loop.type === 'for_in_clause') {
        // Comprehension variables are local to the comprehension and bind before its body in evaluation order.
        const comp = b.loop.parent;
        if (comp && comp.startIndex <= at.startIndex && at.endIndex <= comp.endIndex) return { ...b, start: Number.MAX_SAFE_INTEGER };
        continue;
      }
      if (b.target.startIndex < at.startIndex && (!best || b.target.startIndex > best.start)) best = { ...b, start: b.target.startIndex };
    }
    return best;
  }
  /** `name` at `at` is a parameter annotated as a container of device arrays, not rebound in its function. */
  function deviceContainerParam(n: SyntaxNode): boolean {
    if (n.type !== 'identifier') return false;
    for (let f: SyntaxNode | null = n.parent; f; f = f.parent) {
      if (f.type !== 'function_definition') continue;
      if (!containerParams.get(f.id)?.has(n.text)) continue;
      return !assignsByScope.get(f.id)?.has(n.text);
    }
    return false;
  }
  function loopElementIsDevice(v: SyntaxNode | null): boolean | undefined {
    const u = unparen(v);
    if (!u) return undefined;
    if (deviceContainerParam(u)) return true;
    if (u.type === 'list' || u.type === 'tuple') return u.namedChildren.length > 0 && u.namedChildren.every((e) => isDevice(e)) ? true : undefined;
    // Unknown iterables (host lists of arrays, helpers) keep the `d_` naming convention.
    return isDevice(u) ? true : undefined;
  }

  /** `a` and `b` sit in different clauses of one `if` statement (or `match`), so one never runs after the other. */
  const exclusiveBranches = (a: SyntaxNode, b: SyntaxNode): boolean => {
    const clauseOf = (n: SyntaxNode, stmt: SyntaxNode): SyntaxNode | null => {
      for (const c of stmt.namedChildren) if (c.startIndex <= n.startIndex && n.endIndex <= c.endIndex) return c;
      return null;
    };
    for (let p = a.parent; p && !FUNCTION_TYPES.includes(p.type); p = p.parent) {
      if (!(p.startIndex <= b.startIndex && b.endIndex <= p.endIndex)) continue;
      if (p.type !== 'if_statement' && p.type !== 'match_statement') return false;
      const ca = clauseOf(a, p);
      const cb = clauseOf(b, p);
      const cond = p.childForFieldName('condition');
      return !!ca && !!cb && ca.id !== cb.id && ca.id !== cond?.id && cb.id !== cond?.id;
    }
    return false;
  };

  function lookupName(name: string, at: SyntaxNode): boolean | undefined {
    let scope: SyntaxNode | null = scopeOf(at);
    for (;;) {
      const list = assignsByScope.get(scope.id)?.get(name);
      const bound = loopBindingAt(scope, name, at);
      if (bound && !list?.some((a) => a.node.startIndex > bound.start && a.node.startIndex < at.startIndex && !(a.node.startIndex <= at.startIndex && at.endIndex <= a.node.endIndex))) {
        return loopElementIsDevice(bound.value);
      }
      if (list) {
        let last: { node: SyntaxNode; value: SyntaxNode } | undefined;
        let inPlaceDevice = false;
        for (const a of list) {
          if (!(a.node.startIndex < at.startIndex && !(a.node.startIndex <= at.startIndex && at.endIndex <= a.node.endIndex))) continue;
          // `if c: x = d_helper() else: x = tuple(... for v in x)`: a binding in another branch of the same `if` never reaches `at`.
          if (exclusiveBranches(a.node, at)) continue;
          // `x op= v` keeps what `x` was; it only makes a host `x` a device value when `v` is one (`total += cp.sum(d)`).
          if (a.node.type === 'augmented_assignment') inPlaceDevice ||= isDevice(a.value);
          else {
            last = a;
            inPlaceDevice = false;
          }
        }
        if (inPlaceDevice) return true;
        if (!last && list.some((a) => a.node.type === 'augmented_assignment' && a.node.startIndex < at.startIndex)) {
          // Only updated in place so far in this scope: the binding comes from an enclosing scope, a parameter or the convention.
        } else if (last) {
          if (last.value.type === 'assignment') return tupleElementDevice(last, name) ?? (deviceByName(name.split('.').pop() ?? name) || undefined); // tuple unpacking: by convention only
          if (isDevice(last.value)) return true;
          // A value from a call we cannot see into (a project helper) keeps the `d_` naming convention.
          return definitelyHost(last.value) ? false : deviceByName(name.split('.').pop() ?? name);
        }
        // Assigned later in a loop body (loop-carried) or before the use in document order elsewhere.
        const rebinds = list.filter((a) => a.node.type !== 'augmented_assignment');
        if (scope.type === 'function_definition' && rebinds.length && list.every((a) => a.node.startIndex > at.startIndex)) {
          const v = rebinds[0].value;
          if (v.type !== 'assignment') return isDevice(v);
        }
      }
      if (scope.type === 'function_definition' && params.get(scope.id)?.has(name)) return true;
      if (scope.type === 'function_definition' && !list && usedAsCupyArray(scope, name)) return true;
      if (scope.type === 'function_definition' && hostParams.get(scope.id)?.has(name)) return false;
      if (scope === root) return undefined;
      const outer: SyntaxNode | null = scope.parent;
      scope = outer ? scopeOf(outer.type === 'function_definition' ? outer : scope) : root;
      if (scope.id === scopeOf(at).id) scope = root;
    }
  }

  /**
   * A parameter of `fn` (never rebound there) that the function itself treats as a CuPy array: `name.data.ptr`
   * (the device pointer a raw launch or a library handle takes), `name.toDlpack()`, `name.__cuda_array_interface__`.
   * Only device arrays answer these, so every use of the parameter in the function is a device value. (`name.get()`
   * is no evidence: `queue.get()` and `ContextVar.get()` take no argument either.)
   */
  const cupyUseMemo = new Map<string, boolean>();
  function usedAsCupyArray(fn: SyntaxNode, name: string): boolean {
    const key = `${fn.id}:${name}`;
    const hit = cupyUseMemo.get(key);
    if (hit !== undefined) return hit;
    const isParam = (fn.childForFieldName('parameters')?.namedChildren ?? []).some((p) => (p.type === 'identifier' ? p.text : p.childForFieldName('name')?.text ?? p.namedChildren.find((c) => c.type === 'identifier')?.text) === name);
    let r = false;
    if (isParam && !hostParams.get(fn.id)?.has(name)) {
      for (const a of fn.descendantsOfType('attribute')) {
        const obj = a.childForFieldName('object');
        if (obj?.type !== 'identifier' || obj.text !== name || scopeOf(a).id !== fn.id) continue;
        const attr = a.childForFieldName('attribute')?.text ?? '';
        const call = a.parent?.type === 'call' && a.parent.childForFieldName('function')?.id === a.id ? a.parent : null;
        if (attr === 'toDlpack' && call) r = true;
        else if (attr === '__cuda_array_interface__') r = true;
        else if (attr === 'data' && a.parent?.type === 'attribute' && a.parent.childForFieldName('attribute')?.text === 'ptr') r = true;
        if (r) break;
      }
    }
    cupyUseMemo.set(key, r);
    return r;
  }

  // Same-file functions by name: module-level ones, and methods per class (for `self.f(...)`).
  const moduleFns = new Map<string, SyntaxNode>();
  const classMethods = new Map<number, Map<string, SyntaxNode>>();
  const enclosingClass = (n: SyntaxNode): SyntaxNode | null => {
    for (let p = n.parent; p; p = p.parent) if (p.type === 'class_definition') return p;
    return null;
  };
  for (const fn of root.descendantsOfType('function_definition')) {
    const name = fn.childForFieldName('name')?.text;
    if (!name) continue;
    let holder = fn.parent;
    if (holder?.type === 'decorated_definition') holder = holder.parent;
    if (holder?.type === 'module') moduleFns.set(name, fn);
    else if (holder?.type === 'block' && holder.parent?.type === 'class_definition') {
      const cls = holder.parent;
      let m = classMethods.get(cls.id);
      if (!m) classMethods.set(cls.id, (m = new Map()));
      m.set(name, fn);
    }
  }
  /** The same-file function a call runs: `helper(...)` (module level) or `self.method(...)` (same class). */
  const calleeDef = (call: SyntaxNode): SyntaxNode | null => {
    const fn = call.childForFieldName('function');
    if (fn?.type === 'identifier') {
      if (imports.has(fn.text)) return null;
      return moduleFns.get(fn.text) ?? null;
    }
    if (fn?.type === 'attribute' && /^(self|cls)$/.test(fn.childForFieldName('object')?.text ?? '')) {
      const cls = enclosingClass(call);
      return (cls && classMethods.get(cls.id)?.get(fn.childForFieldName('attribute')?.text ?? '')) ?? null;
    }
    // `work._allocate_stage_2(n)` on an instance of a class of this file: a private (`_name`, not dunder)
    // method is the module's own, so when exactly one class here defines it, that is the method that runs.
    const meth = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text ?? '' : '';
    if (/^_[^_]/.test(meth) && fn?.childForFieldName('object')?.type !== 'call') {
      const defs = [...classMethods.values()].map((m) => m.get(meth)).filter((d): d is SyntaxNode => !!d);
      return defs.length === 1 ? defs[0] : null;
    }
    return null;
  };
  /** Return values of a function (not of functions nested in it). */
  const returnsMemo = new Map<number, SyntaxNode[]>();
  const returnValues = (fn: SyntaxNode): SyntaxNode[] => {
    let r = returnsMemo.get(fn.id);
    if (r) return r;
    r = fn
      .descendantsOfType('return_statement')
      .filter((ret) => scopeOf(ret).id === fn.id)
      .map((ret) => unparen(ret.namedChildren[0] ?? null))
      .filter((v): v is SyntaxNode => !!v && v.type !== 'none');
    returnsMemo.set(fn.id, r);
    return r;
  };
  /**
   * Project index (src/index/): the facts of the imported function a call runs, when the review indexed
   * the module it comes from. A same-file definition or a shadowing local binding wins.
   */
  const importedFacts = (call: SyntaxNode) => {
    if (!config.projectIndex) return null;
    const p = callPath(call);
    const head = p?.split('.')[0];
    if (!p || !head || !imports.has(head) || moduleFns.has(head)) return null;
    return pyFunctionFacts(config, source.path, p);
  };
  /** Summary of a same-file helper: it returns device data (some `return` gives a DEVICE value). */
  const helperReturnsDevice = (call: SyntaxNode): boolean => {
    const def = calleeDef(call);
    if (!def) return importedFacts(call)?.returnsDevice === true;
    return returnValues(def).some((v) => (v.type === 'tuple' || v.type === 'expression_list' ? false : isDevice(v)));
  };
  /** Element `i` of what a same-file helper returns as a tuple (`return d_a, d_b`). */
  const helperTupleElement = (call: SyntaxNode, i: number): boolean | undefined => {
    const def = calleeDef(call);
    if (!def) return importedFacts(call)?.returnsDeviceTuple?.[i];
    const tuples = returnValues(def).filter((v) => v.type === 'tuple' || v.type === 'expression_list');
    if (!tuples.length) return undefined;
    return tuples.some((t) => isDevice(t.namedChildren[i]));
  };
  /** `a, b = <rhs>`: the device-ness of the element bound to `name`, when the right-hand side says. */
  function tupleElementDevice(bind: { node: SyntaxNode }, name: string): boolean | undefined {
    const left = bind.node.childForFieldName('left');
    const right = unparen(bind.node.childForFieldName('right'));
    if (!left || !right) return undefined;
    const i = left.namedChildren.findIndex((t) => t.text === name);
    if (i < 0) return undefined;
    if (right.type === 'tuple' || right.type === 'expression_list' || right.type === 'list') {
      const e = right.namedChildren[i];
      return e ? isDevice(e) : undefined;
    }
    if (right.type === 'call') {
      const el = helperTupleElement(right, i);
      if (el !== undefined) return el;
      // `uniq, inverse = cp.unique(x, return_inverse=True)`, `vals, idx = torch.sort(t_gpu)`: CuPy functions
      // return arrays or tuples of arrays; torch functions of device tensors return device tensors.
      const p = callPath(right);
      const rp = resolvedPath(p);
      if (p && isCupyModulePath(p) && strictPath(right.childForFieldName('function')) && !NON_DEVICE_CP.has(lastName(rp) ?? '') && !CUPY_NON_OP.test(lastName(rp) ?? '')) return true;
      if (rp && vocab.tensor_modules.some((m) => rp.startsWith(m + '.')) && deviceArgsOf(right).length > 0) return true;
    }
    return undefined;
  }
  /**
   * `self.buf` of a device-state object: every assignment to it in the class (any method) stores device data
   * (`self.buf = cp.empty(n)` in `__init__`, read in `forward`). `None` placeholders do not count.
   */
  const memberMemo = new Map<string, boolean | undefined>();
  function memberIsDevice(n: SyntaxNode): boolean | undefined {
    const obj = n.childForFieldName('object');
    if (obj?.type !== 'identifier' || !/^(self|cls)$/.test(obj.text)) return undefined;
    const cls = enclosingClass(n);
    if (!cls) return undefined;
    const key = `${cls.id}:${n.text}`;
    if (memberMemo.has(key)) return memberMemo.get(key);
    memberMemo.set(key, undefined); // cycle guard
    const values: SyntaxNode[] = [];
    for (const [, m] of assignsByScope) {
      for (const a of m.get(n.text) ?? []) {
        if (enclosingClass(a.node)?.id !== cls.id || a.node.type === 'augmented_assignment') continue;
        const v = unparen(a.value.type === 'assignment' ? null : a.value);
        if (a.value.type === 'assignment') {
          const t = tupleElementDevice(a, n.text);
          if (t === undefined) return memberMemo.get(key);
          if (t) values.push(a.node);
          else return memberMemo.set(key, false), false;
          continue;
        }
        if (!v || v.type === 'none') continue;
        values.push(v);
      }
    }
    const r = values.length > 0 && values.every((v) => v.type === 'assignment' || isDevice(v)) ? true : values.some((v) => v.type !== 'assignment' && definitelyHost(v)) ? false : undefined;
    memberMemo.set(key, r);
    return r;
  }

  const deviceKw = (call: SyntaxNode): SyntaxNode | undefined => pyArgs(call).keywords.get('device');
  const CUDA_SPEC = /^[rbuf]?["'](cuda|gpu)/i;
  const CPU_SPEC = /^[rbuf]?["']cpu/i;
  /** `x.to("cuda:0")`, `x.to(device="cuda")`, `x.to(d_y.device)`: a copy onto the GPU. */
  const toDevice = (call: SyntaxNode): boolean => {
    const a = unparen(pyArgs(call).positional[0] ?? deviceKw(call) ?? null);
    if (!a) return false;
    if (CUDA_SPEC.test(a.text) || /^torch\.device\(\s*["']cuda/.test(a.text)) return true;
    return a.type === 'attribute' && a.childForFieldName('attribute')?.text === 'device' && isDevice(a.childForFieldName('object'));
  };
  /** `x.to("cpu")` of a device tensor: a copy to the host. */
  const toHost = (call: SyntaxNode): boolean => {
    const a = unparen(pyArgs(call).positional[0] ?? deviceKw(call) ?? null);
    return !!a && (CPU_SPEC.test(a.text) || /^torch\.device\(\s*["']cpu/.test(a.text));
  };
  /**
   * Array factories of device libraries (`wp.zeros(n, dtype=float, device=device)`, `torch.empty(n, device="cuda")`):
   * warp allocates on its default (CUDA) device unless told `device="cpu"`; torch on the CPU unless told a CUDA device.
   */
  const deviceFactory = (call: SyntaxNode, rp: string): boolean => {
    const dev = unparen(deviceKw(call) ?? null);
    if (matchesVocab(rp, vocab.device_default_factories)) return !(dev && CPU_SPEC.test(dev.text));
    if (matchesVocab(rp, vocab.tensor_factories)) {
      if (!dev) return false;
      if (CUDA_SPEC.test(dev.text) || /^torch\.device\(\s*["']cuda/.test(dev.text)) return true;
      return dev.type === 'attribute' && dev.childForFieldName('attribute')?.text === 'device' && isDevice(dev.childForFieldName('object'));
    }
    return false;
  };

  /** `name` is bound (last, before `at`, in its function) to a NumPy array creator: a host ndarray. */
  const numpyArrayBinding = (n: SyntaxNode): boolean => {
    const list = assignsByScope.get(scopeOf(n).id)?.get(n.text) ?? [];
    const prior = list.filter((a) => a.node.startIndex < n.startIndex && a.node.type === 'assignment' && a.value.type !== 'assignment');
    const last = unparen(prior[prior.length - 1]?.value ?? null);
    if (last?.type !== 'call') return false;
    const p = callPath(last);
    const nm = lastName(p) ?? '';
    return isNumpyPath(p) && (vocab.numpy_array_creators.includes(nm) || vocab.numpy_conversions.includes(nm));
  };

  const HOST_BUILTINS = new Set(['int', 'float', 'bool', 'len', 'str', 'list', 'tuple', 'dict', 'set', 'range', 'sum', 'min', 'max', 'abs', 'round', 'sorted', 'repr']);
  /** Values that can only live on the host: literals, numpy results, builtins, D2H results, metadata. */
  function definitelyHost(v: SyntaxNode): boolean {
    const u = unparen(v);
    if (!u) return true;
    if (['integer', 'float', 'string', 'true', 'false', 'none', 'list', 'tuple', 'dictionary', 'set', 'list_comprehension', 'dictionary_comprehension', 'set_comprehension', 'comparison_operator', 'not_operator'].includes(u.type)) return true;
    if (u.type === 'attribute') return vocab.metadata_attributes.includes(u.childForFieldName('attribute')?.text ?? '');
    // `d_sq = dx * dx + dy * dy`: arithmetic on untainted names that do not follow the `d_` convention stays on the host.
    const hostOperand = (c: SyntaxNode) => definitelyHost(c) || (c.type === 'identifier' && !deviceByName(c.text) && !isDevice(c));
    if (u.type === 'binary_operator') return u.namedChildren.every(hostOperand);
    if (u.type !== 'call') return false;
    const fn = u.childForFieldName('function');
    const p = calleePath(fn);
    if (fn?.type === 'identifier' && HOST_BUILTINS.has(fn.text)) return true;
    if (p && /^(np|numpy)\./.test(p)) return true;
    if (matchesVocab(p, vocab.count_scatter_calls) || matchesVocab(p, vocab.pointer_calls) || matchesVocab(p, vocab.d2h_calls)) return true;
    if (fn?.type === 'attribute' && HOST_METHODS.has(fn.childForFieldName('attribute')?.text ?? '')) return true;
    return false;
  }

  function isDevice(n: SyntaxNode | null | undefined): boolean {
    if (!n) return false;
    const hit = memo.get(n.id);
    if (hit !== undefined) return hit;
    memo.set(n.id, false); // cycle guard
    const r = computeDevice(n);
    memo.set(n.id, r);
    return r;
  }

  function computeDevice(n: SyntaxNode): boolean {
    switch (n.type) {
      case 'identifier': {
        const v = lookupName(n.text, n);
        if (v !== undefined) return v;
        return deviceByName(n.text);
      }
      case 'parenthesized_expression':
        return isDevice(n.namedChildren[0]);
      case 'attribute': {
        const attr = n.childForFieldName('attribute')?.text ?? '';
        const obj = n.childForFieldName('object');
        if (vocab.metadata_attributes.includes(attr)) return false;
        if (obj && isDevice(obj)) return ['T', 'real', 'imag', 'flat'].includes(attr);
        // `self.d_x` style members follow the naming convention; other attributes may be device arrays
        // assigned in this module (`self.buf = cp.empty(...)`).
        const own = lookupName(n.text, n);
        if (own !== undefined) return own;
        const member = memberIsDevice(n);
        if (member !== undefined) return member;
        return deviceByName(attr);
      }
      case 'subscript': {
        // `bufs[i]` of a `list[cp.ndarray]` parameter is one device array (a slice stays a host list).
        const base = n.childForFieldName('value');
        if (base && deviceContainerParam(base)) return !n.childrenForFieldName('subscript').some((x) => x.type === 'slice');
        return isDevice(base);
      }
      case 'comparison_operator':
        // `d_x is None` compares Python object identity on the host: no kernel, no transfer.
        if (n.children.some((c) => c.type === 'is' || c.type === 'is not')) return false;
        return n.namedChildren.some((c) => isDevice(c));
      case 'binary_operator':
        // `"%d hits" % d_n` is str formatting on the host (it reads the value back), not array arithmetic.
        if (unparen(n.childForFieldName('left'))?.type === 'string') return false;
        return n.namedChildren.some((c) => isDevice(c));
      case 'boolean_operator':
        return n.namedChildren.some((c) => isDevice(c));
      case 'unary_operator':
      case 'not_operator':
        return isDevice(n.childForFieldName('argument') ?? n.namedChildren[0]);
      case 'conditional_expression':
        return isDevice(n.namedChildren[0]) || isDevice(n.namedChildren[2]);
      case 'call': {
        const fn = n.childForFieldName('function');
        if (fn?.type === 'attribute') {
          const obj = fn.childForFieldName('object');
          const m = fn.childForFieldName('attribute')?.text ?? '';
          if (obj && isDevice(obj)) return !HOST_METHODS.has(m);
          // torch: `t.cuda()`, `t.to("cuda:0")`, `t.to(device=d_x.device)` move a tensor to the GPU.
          if (m === 'cuda' || (m === 'to' && toDevice(n))) return true;
        }
        const p = calleePath(fn);
        const rp = resolvedPath(p);
        const name = lastName(rp);
        if (p && isCupyModulePath(p) && strictPath(fn)) return !NON_DEVICE_CP.has(name ?? '');
        if (matchesVocab(p, vocab.device_helpers)) return true;
        if (rp && strictPath(fn) && deviceFactory(n, rp)) return true;
        // torch / warp functions of device tensors return device tensors (`torch.linalg.norm(d_x)`).
        if (rp && strictPath(fn) && vocab.tensor_modules.some((m) => rp.startsWith(m + '.')) && deviceArgsOf(n).length > 0) return !vocab.tensor_host_calls.includes(name ?? '');
        if (helperReturnsDevice(n)) return true;
        if (matchesVocab(p, vocab.count_scatter_calls) || matchesVocab(p, vocab.pointer_calls)) return false;
        // NumPy's __array_function__/__array_ufunc__ protocols hand `np.<fn>(cupy_array)` to CuPy, so the
        // result is a device array; conversions (`np.asarray`) and dtype/metadata helpers are not.
        if (isNumpyPath(p)) {
          if (vocab.numpy_conversions.includes(name ?? '') || vocab.numpy_metadata_calls.includes(name ?? '')) return false;
          return deviceArgsOf(n).length > 0;
        }
        const args = pyArgs(n);
        if (name && vocab.cccl_calls.includes(name) && (args.positional.some((a) => isDevice(a)) || cccl(p))) return true;
        return false;
      }
      default:
        return false;
    }
  }

  /** `cp.zeros`, not `cp.asarray(x).get`: a module function, no call inside the chain. */
  const strictPath = (fn: SyntaxNode | null): boolean => !!fn && !fn.descendantsOfType('call').length && fn.type !== 'call';
  const cccl = (p: string | null) => !!p && vocab.cccl_modules.some((m) => p.startsWith(m + '.'));

  // D2H occurrences.
  const d2h: D2H[] = [];
  const d2hByNode = new Map<number, D2H>();
  const isScalarTarget = (t: SyntaxNode): boolean => {
    const u = unparen(t);
    if (!u) return false;
    if (u.type === 'subscript') {
      const idx = u.childForFieldName('subscript') ?? u.namedChildren[1];
      return !!idx && idx.type !== 'slice' && !u.text.includes(':');
    }
    if (u.type === 'call') {
      const nm = lastName(calleePath(u.childForFieldName('function')));
      return !!nm && ['sum', 'count_nonzero', 'max', 'min', 'any', 'all', 'mean', 'argmax', 'argmin', 'prod', 'dot', 'item'].includes(nm);
    }
    if (u.type === 'binary_operator') return u.namedChildren.every((c) => !isDevice(c) || isScalarTarget(c));
    return false;
  };
  const addD2H = (node: SyntaxNode, kind: D2HKind, target: SyntaxNode, scalar?: boolean) => {
    if (d2hByNode.has(node.id)) return;
    const d: D2H = { node, kind, target, scalar: scalar ?? isScalarTarget(target) };
    d2h.push(d);
    d2hByNode.set(node.id, d);
  };

  const gpuOps: GpuOp[] = [];
  const allocs: SyntaxNode[] = [];
  const gpuOpIds = new Set<number>();
  const addOp = (node: SyntaxNode, kind: GpuOp['kind']) => {
    if (gpuOpIds.has(node.id)) return;
    gpuOpIds.add(node.id);
    gpuOps.push({ node, kind });
  };

  const nodes = root.descendantsOfType(['call', 'if_statement', 'while_statement', 'elif_clause', 'binary_operator', 'comparison_operator', 'interpolation', 'augmented_assignment', 'assignment']);
  for (const n of nodes) {
    if (n.type === 'if_statement' || n.type === 'while_statement' || n.type === 'elif_clause') {
      const cond = unparen(n.childForFieldName('condition'));
      if (cond && isDevice(cond)) addD2H(cond, 'condition', cond, true);
      continue;
    }
    if (n.type === 'interpolation') {
      const e = n.childForFieldName('expression') ?? n.namedChildren[0];
      if (e && isDevice(e)) addD2H(n, 'str', e);
      continue;
    }
    if (n.type === 'augmented_assignment' || n.type === 'assignment') {
      // `d_x *= 2` and `d_out[mask] = v` run an in-place elementwise / scatter kernel on the device array.
      const left = n.childForFieldName('left');
      const store = n.type === 'augmented_assignment' ? left : left?.type === 'subscript' ? left.childForFieldName('value') : null;
      if (store && isDevice(store)) addOp(n, 'operator');
      // `h_metric[k] = d_val` with `h_metric = np.zeros(n)`: NumPy's __setitem__ converts the device value (a D2H read).
      const right = n.childForFieldName('right');
      const host = n.type === 'assignment' && left?.type === 'subscript' ? unparen(left.childForFieldName('value')) : null;
      if (host && right && (host.type === 'identifier' || host.type === 'attribute') && numpyArrayBinding(host) && isDevice(right)) addD2H(n, 'convert', right, true);
      continue;
    }
    if (n.type === 'binary_operator') {
      if (n.parent?.type !== 'binary_operator' && isDevice(n)) addOp(n, 'operator');
      continue;
    }
    if (n.type === 'comparison_operator') {
      // `d_x > t` is an elementwise kernel; `d_x is None` / `in` are Python identity and membership tests.
      const identity = n.children.some((c) => !c.isNamed && /^(is|in|not)/.test(c.type));
      if (!identity && n.parent?.type !== 'binary_operator' && n.namedChildren.some((c) => isDevice(c))) addOp(n, 'operator');
      continue;
    }
    const fn = n.childForFieldName('function');
    const p = calleePath(fn);
    const name = lastName(p);
    const args = pyArgs(n);
    const first = args.positional[0];
    if (fn?.type === 'attribute') {
      const obj = fn.childForFieldName('object');
      const m = fn.childForFieldName('attribute')?.text ?? '';
      if (obj && isDevice(obj)) {
        if (m === 'get' && args.positional.length === 0) addD2H(n, 'get', obj);
        else if (m === 'numpy' || m === 'cpu' || (m === 'to' && toHost(n))) addD2H(n, 'get', obj);
        else if (m === 'item') addD2H(n, 'item', obj, true);
        else if (m === 'tolist' || m === 'tobytes') addD2H(n, 'tolist', obj);
        else if (!HOST_METHODS.has(m) && !VIEW_METHODS.has(m) && m !== 'synchronize') addOp(n, 'method');
        continue;
      }
    }
    // `arr.numpy()` in a warp module: warp arrays live on the CUDA device by default, so `.numpy()` copies
    // the whole array to the host (and syncs) unless it is known to be a host value already.
    if (fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'numpy' && args.positional.length === 0 && importsWarp) {
      const obj = unparen(fn.childForFieldName('object'));
      if (obj && !definitelyHost(obj) && !(obj.type === 'call' && d2hByNode.has(obj.id)) && !(obj.type === 'call' && /\.(cpu|numpy|get)$/.test(callPath(obj) ?? ''))) {
        addD2H(n, 'get', obj);
        continue;
      }
    }
    if (matchesVocab(p, vocab.d2h_calls)) {
      if (first && isDevice(first)) addD2H(n, name === 'asnumpy' ? 'asnumpy' : 'copy-to-host', first);
      continue;
    }
    if (fn?.type === 'identifier' && CONVERTERS.has(fn.text)) {
      if (first && isDevice(first)) addD2H(n, 'convert', first, true);
      continue;
    }
    if (fn?.type === 'identifier' && fn.text === 'print') {
      const dev = args.positional.find((a) => isDevice(a));
      if (dev) addD2H(n, 'print', dev);
      continue;
    }
    if (fn?.type === 'identifier' && (fn.text === 'str' || fn.text === 'repr')) {
      if (first && isDevice(first)) addD2H(n, 'str', first);
      continue;
    }
    if (fn?.type === 'identifier' && ITERATING_BUILTINS.has(fn.text) && !lookupBuiltinShadow(fn.text)) {
      const dev = args.positional.find((a) => isDevice(a));
      if (dev) addD2H(n, 'builtin', dev, ['min', 'max', 'sum', 'any', 'all', 'range'].includes(fn.text) && isScalarTarget(dev));
      continue;
    }
    // GPU ops.
    if (matchesVocab(p, vocab.launch_calls)) {
      addOp(n, /copy/.test(p ?? '') ? 'async-copy' : 'launch');
      continue;
    }
    if (fn && (kernelNames.has(fn.text) || (fn.type === 'call' && kernelNames.has(fn.childForFieldName('function')?.text ?? '')))) {
      addOp(n, 'kernel-call');
      continue;
    }
    if (fn?.type === 'subscript' && kernelDicts.has(fn.childForFieldName('value')?.text ?? '')) {
      addOp(n, 'kernel-call');
      continue;
    }
    // `kernel((grid,), (block,), args)` on a RawKernel obtained inline.
    if (fn?.type === 'call' && matchesVocab(calleePath(fn.childForFieldName('function')), vocab.kernel_factories)) {
      addOp(n, 'kernel-call');
      continue;
    }
    if (name && vocab.cccl_calls.includes(name) && !isNumpyPath(p) && (cccl(p) || args.positional.some((a) => isDevice(a)))) {
      addOp(n, 'cccl');
      continue;
    }
    if (p && isCupyModulePath(p) && strictPath(fn)) {
      const cpName = lastName(resolvedPath(p)) ?? '';
      if (ALLOC_CREATORS.has(cpName)) allocs.push(n);
      const devArg = args.positional.some((a) => isDevice(a)) || [...args.keywords.values()].some((a) => isDevice(a));
      // Every CuPy array function but the creators, config calls and metadata helpers launches a kernel,
      // whatever its arguments are known to be (CuPy refuses host arrays).
      const launches = !ALLOC_CREATORS.has(cpName) && !NON_DEVICE_CP.has(cpName) && !CUPY_NON_OP.test(cpName) && n.parent?.type !== 'decorator';
      if (devArg || launches) addOp(n, 'cupy');
      continue;
    }
    const rp = resolvedPath(p);
    if (rp && strictPath(fn) && deviceFactory(n, rp)) {
      allocs.push(n);
      continue;
    }
    if (rp && strictPath(fn) && vocab.tensor_modules.some((m) => rp.startsWith(m + '.')) && deviceArgsOf(n).length > 0) {
      addOp(n, 'cupy');
      continue;
    }
    if (matchesVocab(rp, vocab.tensor_launch_calls)) {
      addOp(n, 'launch');
      continue;
    }
    if (matchesVocab(p, vocab.device_helpers) || matchesVocab(p, vocab.alloc_calls) || matchesVocab(p, vocab.pool_alloc_calls)) {
      allocs.push(n);
    }
  }

  // Summaries of same-file functions: a call to a helper that launches, runs CuPy work or allocates on the
  // device is GPU work at the call site (`metric = _calculate_metric(...)` inside the caller's loop).
  const hasWork = (def: SyntaxNode) => gpuOps.some((o) => scopeOf(o.node).id === def.id) || allocs.some((a) => scopeOf(a).id === def.id);
  const helperCalls = root.descendantsOfType('call').map((c) => ({ c, def: calleeDef(c) })).filter((x): x is { c: SyntaxNode; def: SyntaxNode } => !!x.def);
  // An imported helper whose indexed facts say it launches or allocates is GPU work (project index);
  // one that only synchronizes is not.
  if (config.projectIndex) {
    for (const c of root.descendantsOfType('call')) {
      if (gpuOpIds.has(c.id) || d2hByNode.has(c.id)) continue;
      const f = importedFacts(c);
      if (f && (f.launches || f.allocates)) addOp(c, 'helper');
    }
  }
  for (let round = 0, added = true; added && round < 4; round++) {
    added = false;
    for (const { c, def } of helperCalls) {
      if (gpuOpIds.has(c.id) || d2hByNode.has(c.id) || def.id === scopeOf(c).id || !hasWork(def)) continue;
      addOp(c, 'helper');
      added = true;
    }
  }

  function lookupBuiltinShadow(name: string): boolean {
    return assignsByScope.get(root.id)?.has(name) ?? false;
  }

  const loopOf = (n: SyntaxNode): SyntaxNode | null => {
    let child = n;
    let p = n.parent;
    while (p && !FUNCTION_TYPES.includes(p.type)) {
      if (LOOP_TYPES.includes(p.type)) {
        // The iterable of a `for` (and the first iterable of a comprehension) is evaluated once.
        const once =
          (p.type === 'for_statement' && p.childForFieldName('right')?.id === child.id) ||
          (child.type === 'for_in_clause' && p.namedChildren.find((c) => c.type === 'for_in_clause')?.id === child.id && isInRight(child, n));
        if (!once) return p;
      }
      child = p;
      p = p.parent;
    }
    return null;
  };
  const isInRight = (clause: SyntaxNode, n: SyntaxNode) => {
    const right = clause.childForFieldName('right');
    return !!right && right.startIndex <= n.startIndex && n.endIndex <= right.endIndex;
  };

  const fnName = (scope: SyntaxNode) => (scope.type === 'function_definition' ? scope.childForFieldName('name')?.text ?? '' : '');
  /**
   * `result(n)` = some ancestor edge (parent, child) on the path to the root satisfies `edge`.
   * Memoized by node id, so asking for every node of a 500-deep nest stays linear.
   */
  const climbMemo = (edge: (p: SyntaxNode, child: SyntaxNode) => boolean) => {
    const memo = new Map<number, boolean>();
    return (n: SyntaxNode): boolean => {
      const chain: SyntaxNode[] = [];
      let cur: SyntaxNode | null = n;
      let result = false;
      while (cur) {
        const hit = memo.get(cur.id);
        if (hit !== undefined) {
          result = hit;
          break;
        }
        const p: SyntaxNode | null = cur.parent;
        if (!p) break;
        chain.push(cur);
        if (edge(p, cur)) {
          result = true;
          break;
        }
        cur = p;
      }
      // Nodes below a hit inherit it; nodes below a miss inherit the ancestor's answer.
      for (const c of chain) memo.set(c.id, result);
      return result;
    };
  };

  const debugFile = DEBUG_NAME.test(source.path.split('/').pop() ?? '');
  const debugEdge = climbMemo((p, child) => {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const cond = p.childForFieldName('condition');
      const inCond = cond?.id === child.id;
      const inAlt = p.type === 'if_statement' && (child.type === 'else_clause' || child.type === 'elif_clause');
      if (cond && !inCond && !inAlt && DEBUG_COND.test(cond.text)) return true;
    }
    // pytest collects `test_*` functions only from test modules: in library code (`def test_error(...)` scoring a
    // quantizer) the name is an ordinary verb, so only `debug`/`dump` functions are gated outside test paths.
    return p.type === 'function_definition' && DEBUG_NAME.test(fnName(p)) && (!/^test_/i.test(fnName(p)) || /debug|dump/i.test(fnName(p)) || TEST_OR_BENCH_PATH.test(source.path));
  });
  const debugGated = (n: SyntaxNode): boolean => debugFile || debugEdge(n);

  const inCpuFallback = climbMemo((p, child) => {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const cond = p.childForFieldName('condition');
      const condText = cond?.text ?? '';
      const inAlt = p.type === 'if_statement' && child.type === 'else_clause';
      const inCons = p.childForFieldName('consequence')?.id === child.id;
      const negated = /^\s*not\b/.test(condText);
      if (inCons && (CPU_COND.test(condText) || (negated && GPU_COND.test(condText)))) return true;
      if (inAlt && GPU_COND.test(condText) && !negated && !CPU_COND.test(condText)) return true;
    }
    if (p.type === 'except_clause' && /ImportError|ModuleNotFoundError|CUDARuntimeError|cuda/i.test(p.text.split('\n')[0])) return true;
    // `copy_to_host` / `ring_lengths_to_host` are the GPU path's final read, not a host implementation.
    return p.type === 'function_definition' && /(^|_)(cpu|fallback|numpy|host)(_|$)/i.test(fnName(p)) && !/(^|_)(to|from)_host(_|$)/i.test(fnName(p));
  });

  const cachedFn = (scope: SyntaxNode) =>
    // `@functools.cache`, `@lru_cache(...)`, `@cupy.memoize(for_each_device=True)`: the body runs once per key.
    scope.parent?.type === 'decorated_definition' && /@([\w.]+\.)?(lru_cache|cache|cached|memoize)\b/.test(scope.parent.text.slice(0, scope.startIndex - scope.parent.startIndex));

  const opStarts = new Map<number, number[]>();
  const gpuWorkIn = (scope: SyntaxNode): SyntaxNode[] =>
    [...gpuOps.map((o) => o.node), ...allocs].filter((x) => scopeOf(x).id === scope.id).sort((a, b) => a.startIndex - b.startIndex);

  const hotPath = (n: SyntaxNode): boolean => {
    const scope = scopeOf(n);
    if (scope === root || cachedFn(scope)) return false;
    if (config.setupFunctions.test(fnName(scope))) return false;
    if (loopOf(n)) return true;
    if (config.hotPathFunctions.test(fnName(scope))) return true;
    let starts = opStarts.get(scope.id);
    if (!starts) opStarts.set(scope.id, (starts = gpuOps.filter((o) => scopeOf(o.node).id === scope.id).map((o) => o.node.startIndex)));
    return starts.some((s) => s < n.startIndex) && starts.some((s) => s > n.endIndex);
  };

  const STMT_PARENTS = ['block', 'module'];
  const flowsTo = (a: SyntaxNode, b: SyntaxNode): boolean => {
    if (b.startIndex < a.endIndex || scopeOf(a).id !== scopeOf(b).id) return false;
    let cur: SyntaxNode = a;
    while (cur.parent && !STMT_PARENTS.includes(cur.parent.type)) cur = cur.parent;
    // `if d_flag.get(): launch(...)`: the rest of the statement that holds `a` runs after it.
    if (cur.startIndex <= b.startIndex && b.endIndex <= cur.endIndex) return true;
    for (;;) {
      const block = cur.parent;
      if (!block) return false;
      let jumped: SyntaxNode | null = null;
      for (let s = cur.nextNamedSibling; s; s = s.nextNamedSibling) {
        if (s.startIndex <= b.startIndex && b.endIndex <= s.endIndex) return true;
        if (s.type === 'return_statement' || s.type === 'raise_statement') return false;
        if (s.type === 'break_statement' || s.type === 'continue_statement') {
          let l: SyntaxNode | null = block.parent;
          while (l && l.type !== 'for_statement' && l.type !== 'while_statement' && !FUNCTION_TYPES.includes(l.type)) l = l.parent;
          jumped = l && !FUNCTION_TYPES.includes(l.type) ? l : null;
          if (!jumped) return false;
          break;
        }
      }
      let up: SyntaxNode | null = jumped ?? block.parent;
      if (!up || block.type === 'module' || FUNCTION_TYPES.includes(up.type) || up.type === 'decorated_definition' || up.type === 'class_definition') return false;
      if (['elif_clause', 'else_clause', 'except_clause', 'finally_clause', 'case_clause'].includes(up.type)) up = up.parent;
      if (!up) return false;
      // `b` inside the compound statement but not after `a`'s block: another branch of the same `if`/`match`
      // (exclusive), a loop `else` (reachable), or a clause of a `try` (normal flow enters `except` only on
      // an exception, `else` only from the `try` body, `finally` always).
      if (!jumped && up.startIndex <= b.startIndex && b.endIndex <= up.endIndex) {
        if (up.type === 'try_statement') {
          const clause = up.namedChildren.find((c) => c.startIndex <= b.startIndex && b.endIndex <= c.endIndex);
          return clause?.type === 'finally_clause' || (clause?.type === 'else_clause' && block.parent?.type === 'try_statement');
        }
        return !['if_statement', 'match_statement', 'block'].includes(up.type);
      }
      cur = up;
      while (cur.parent && !STMT_PARENTS.includes(cur.parent.type)) cur = cur.parent;
    }
  };

  // `print` returns None and an f-string is text: neither carries a device value into later code.
  const VALUE_D2H = new Set<D2HKind>(['get', 'asnumpy', 'item', 'tolist', 'convert', 'condition', 'builtin', 'copy-to-host']);
  const flowMemo = new Map<number, D2H[]>();
  // `enumerate(d_x)`, `list(d_x)`: containers of device views, no value has reached the host yet.
  const lazyBuiltin = (d: D2H) => d.kind === 'builtin' && /^(enumerate|zip|map|filter|list|tuple|set|iter|reversed)$/.test(d.node.childForFieldName('function')?.text ?? '');
  const d2hSourcesOf = (expr: SyntaxNode): D2H[] => {
    const hit = flowMemo.get(expr.id);
    if (hit) return hit;
    flowMemo.set(expr.id, []); // cycle guard
    const out = new Set<D2H>();
    const within = (n: SyntaxNode) => expr.startIndex <= n.startIndex && n.endIndex <= expr.endIndex;
    for (const d of d2h) if (VALUE_D2H.has(d.kind) && !lazyBuiltin(d) && within(d.node)) out.add(d);
    const names = assignsByScope.get(scopeOf(expr).id);
    const refs = expr.type === 'identifier' || expr.type === 'attribute' ? [expr] : expr.descendantsOfType(['identifier', 'attribute']);
    for (const r of names ? refs : []) {
      const par = r.parent;
      if (par?.type === 'attribute' && par.childForFieldName('attribute')?.id === r.id) continue;
      if (par?.type === 'keyword_argument' && par.childForFieldName('name')?.id === r.id) continue;
      if (par?.type === 'attribute' && vocab.metadata_attributes.includes(par.childForFieldName('attribute')?.text ?? '')) continue;
      if (par?.type === 'argument_list' && par.parent?.childForFieldName('function')?.text === 'len') continue;
      const list = names!.get(r.text);
      if (!list) continue;
      // The binding visible at `r`, plus the bindings an augmented assignment (`n += ...`) builds on.
      for (let i = list.length - 1; i >= 0; i--) {
        const a = list[i];
        if (a.node.startIndex >= r.startIndex || (a.node.startIndex <= r.startIndex && r.endIndex <= a.node.endIndex)) continue;
        const value = a.value.type === 'assignment' ? a.value.childForFieldName('right') : a.value;
        if (value && !isDevice(value)) for (const d of d2hSourcesOf(value)) out.add(d);
        if (a.node.type !== 'augmented_assignment') break;
      }
    }
    const res = [...out].sort((a, b) => a.node.startIndex - b.node.startIndex);
    flowMemo.set(expr.id, res);
    return res;
  };

  const hostValueOf = (d: D2H): SyntaxNode => {
    for (let p = d.node.parent; p; p = p.parent) {
      if (p.type === 'assignment' || p.type === 'augmented_assignment') {
        const right = p.childForFieldName('right');
        return right && right.startIndex <= d.node.startIndex && d.node.endIndex <= right.endIndex && !isDevice(right) ? right : d.node;
      }
      if (p.type.endsWith('_statement') || ['block', 'module', 'lambda', 'function_definition'].includes(p.type)) break;
    }
    return d.node;
  };

  const usesMemo = new Map<string, SyntaxNode[]>();
  const identifiers = (): SyntaxNode[] => {
    let all = usesMemo.get('\0all');
    if (!all) usesMemo.set('\0all', (all = root.descendantsOfType('identifier')));
    return all;
  };
  const usesOf = (name: string, scope: SyntaxNode): SyntaxNode[] => {
    const key = `${scope.id}:${name}`;
    let r = usesMemo.get(key);
    if (r) return r;
    r = identifiers().filter((id) => {
      if (id.text !== name) return false;
      if (!(scope.startIndex <= id.startIndex && id.endIndex <= scope.endIndex)) return false;
      const par = id.parent;
      if (par?.type === 'attribute' && par.childForFieldName("attribute")?.id === id.id) return false;
      if (par?.type === 'keyword_argument' && par.childForFieldName("name")?.id === id.id) return false;
      if ((par?.type === 'assignment' || par?.type === 'augmented_assignment') && par.childForFieldName("left")?.id === id.id) return par.type === 'augmented_assignment';
      if (par?.type === 'pattern_list' && par.parent?.type === 'assignment' && par.parent.childForFieldName('left')?.id === par.id) return false;
      return true;
    });
    usesMemo.set(key, r);
    return r;
  };

  return {
    source,
    isDevice,
    d2h: d2h.sort((a, b) => a.node.startIndex - b.node.startIndex),
    d2hAt: (node) => d2hByNode.get(node.id),
    gpuOps: gpuOps.sort((a, b) => a.node.startIndex - b.node.startIndex),
    allocs,
    isGpuOpNode: (node) => gpuOpIds.has(node.id),
    scopeOf,
    loopOf,
    inLoop: (node) => loopOf(node) !== null,
    debugGated,
    inCpuFallback,
    hotPath,
    testOrBench: TEST_OR_BENCH_PATH.test(source.path),
    importsCupy: /^\s*(import\s+cupy|from\s+cupy|import\s+cupy\s+as)/m.test(text),
    projectVocabulary: usesVocabulary(text, vocab.vibespatial_helpers),
    gpuWorkIn,
    assignmentsIn: (scope) => assignsByScope.get(scope.id) ?? new Map(),
    usesOf,
    d2hSourcesOf,
    hostValueOf,
    kernelNames,
    calleeDef,
    importMap: imports,
    callPath,
    isCall: (n, v) => n.type === 'call' && matchesVocab(callPath(n), v),
    callMatches: (n, v) => {
      if (n.type !== 'call') return false;
      const p = callPath(n);
      if (matchesVocab(p, v)) return true;
      const head = p?.split('.')[0] ?? '';
      const mod = imports.get(head);
      return !!p && !!mod && mod !== head && matchesVocab(mod + p.slice(head.length), v);
    },
    pathMatches: (n, v) => {
      const p = calleePath(n);
      if (matchesVocab(p, v)) return true;
      const head = p?.split('.')[0] ?? '';
      const mod = imports.get(head);
      return !!p && !!mod && mod !== head && matchesVocab(mod + p.slice(head.length), v);
    },
    flowsTo,
    moduleOf: (alias) => imports.get(alias),
    aliasFor,
    isNumpyPath,
    deviceArgsOf,
    isUpload: (call) => {
      if (call.type !== 'call') return false;
      const p = callPath(call);
      if (matchesVocab(p, vocab.h2d_calls)) return true;
      const fn = call.childForFieldName('function');
      // `cupy.ndarray.set(host_array)` copies a host array into existing device memory.
      if (fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'set' && isDevice(fn.childForFieldName('object'))) return true;
      return matchesVocab(p, vocab.memcpy_calls) && /HostToDevice|HtoD/.test(call.text);
    },
  };
}

/** Runs at import: not inside a function, and not under `if __name__ == "__main__":` (warmups must). */
export function runsAtImport(n: SyntaxNode): boolean {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'lambda') return false;
    if (p.type === 'if_statement' && /__name__\s*==\s*["']__main__["']/.test(p.childForFieldName('condition')?.text ?? '')) return false;
  }
  return true;
}

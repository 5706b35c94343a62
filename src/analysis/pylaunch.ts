import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { memoized, pythonModel } from './python.js';
import { calleePath, lastName, pyArgs, unparen } from './syntax.js';

/**
 * Kernel launch sites of Python host code with their configuration (grid, block, dynamic shared
 * memory), which CUDA kernel each one runs, and the shared-memory opt-ins of those kernels:
 * - `k((grid,), (block,), args, shared_mem=N)` on a `cp.RawKernel` / `module.get_function('name')`;
 * - `runtime.launch(k, grid=..., block=..., args=..., shared_mem=N)` (vibeSpatial);
 * - `driver.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sharedMemBytes, stream, params, extra)`,
 *   `cudart.cudaLaunchKernel(func, grid, block, args, sharedMem, stream)`;
 * - opt-ins: `k.max_dynamic_shared_size_bytes = N` (CuPy), `cuFuncSetAttribute(f,
 *   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, N)`, `cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, N)`.
 */

export interface PyLaunch {
  node: SyntaxNode;
  via: 'kernel-call' | 'runtime.launch' | 'cuLaunchKernel' | 'cudaLaunchKernel';
  /** The kernel expression (`k`, `self._k`, `kernels["scan"]`). */
  kernel: SyntaxNode | null;
  /** Name of the `__global__` function it runs, when the file says (`RawKernel(src, "name")`, `get_function("name")`). */
  cudaName: string | null;
  grid: SyntaxNode | null;
  block: SyntaxNode | null;
  /** The dynamic shared-memory argument, when given. */
  smem: SyntaxNode | null;
}

export interface PyOptIn {
  node: SyntaxNode;
  /** Text of the kernel expression; null when it is a helper's parameter (may cover any kernel). */
  key: string | null;
  cudaName: string | null;
  value: number | null;
}

export interface PyLaunchFacts {
  launches: PyLaunch[];
  optIns: PyOptIn[];
  /** Opt-ins that may apply to the kernel of `l`. */
  optInsFor(l: PyLaunch): PyOptIn[];
  /** Integer value of a Python expression: literals, arithmetic, names assigned once, `np.dtype(np.float64).itemsize`. */
  intValue(n: SyntaxNode | null | undefined): number | null;
  /** `(x, y, z)` of a grid/block argument (an int or a tuple of ints), padded with 1. */
  dims(n: SyntaxNode | null | undefined): [number, number, number] | null;
  /** Dynamic shared bytes of a launch: 0 when not passed, null when not a constant. */
  smemBytes(l: PyLaunch): number | null;
  /** The kernel strings of this file that define `cudaName`. */
  kernelSources(cudaName: string): Source[];
}

const OPT_IN_ATTR = /MaxDynamicSharedMemorySize|MAX_DYNAMIC_SHARED_SIZE_BYTES/;
const SMEM_KWARGS = ['shared_mem', 'smem', 'shared_mem_bytes', 'sharedMemBytes', 'shared_memory'];
const DTYPE_BYTES: Record<string, number> = {
  float64: 8, double: 8, float32: 4, single: 4, float16: 2, half: 2, int64: 8, uint64: 8, int32: 4, uint32: 4,
  int16: 2, uint16: 2, int8: 1, uint8: 1, bool_: 1, complex64: 8, complex128: 16, intp: 8,
};

export const pythonLaunches: Analysis<PyLaunchFacts> = {
  name: 'python-launches',
  compute: (source, config) => memoized(memo, source, config, build),
};
const memo = new WeakMap<Source, { config: ResolvedConfig; value: PyLaunchFacts }>();

const stringValue = (n: SyntaxNode | null | undefined): string | null => {
  const s = unparen(n);
  if (s?.type !== 'string') return null;
  const c = s.namedChildren.filter((x) => x.type === 'string_content');
  return c.length === 1 && !s.namedChildren.some((x) => x.type === 'interpolation') ? c[0].text : null;
};

function build(source: Source, config: ResolvedConfig): PyLaunchFacts {
  const py = pythonModel.compute(source, config);
  const root = source.root;

  const intMemo = new Map<number, number | null>();
  const intValue = (n: SyntaxNode | null | undefined, depth = 0): number | null => {
    if (!n || depth > 12) return null;
    const hit = intMemo.get(n.id);
    if (hit !== undefined) return hit;
    intMemo.set(n.id, null);
    const v = intUncached(n, depth);
    intMemo.set(n.id, v);
    return v;
  };
  const intUncached = (n: SyntaxNode, depth: number): number | null => {
    switch (n.type) {
      case 'integer': {
        const t = n.text.replace(/_/g, '').toLowerCase();
        const v = t.startsWith('0x') ? parseInt(t, 16) : t.startsWith('0b') ? parseInt(t.slice(2), 2) : parseInt(t, 10);
        return Number.isFinite(v) ? v : null;
      }
      case 'parenthesized_expression':
        return intValue(n.namedChildren[0], depth + 1);
      case 'unary_operator': {
        const a = intValue(n.childForFieldName('argument'), depth + 1);
        const op = n.childForFieldName('operator')?.type ?? n.children[0]?.type;
        return a === null ? null : op === '-' ? -a : op === '+' ? a : null;
      }
      case 'binary_operator': {
        const l = intValue(n.childForFieldName('left'), depth + 1);
        const r = intValue(n.childForFieldName('right'), depth + 1);
        const op = n.childForFieldName('operator')?.type;
        if (l === null || r === null) return null;
        switch (op) {
          case '+': return l + r;
          case '-': return l - r;
          case '*': return l * r;
          case '//': return r ? Math.floor(l / r) : null;
          case '/': return r && l % r === 0 ? l / r : null;
          case '%': return r ? ((l % r) + r) % r : null;
          case '<<': return l * 2 ** r;
          case '>>': return Math.floor(l / 2 ** r);
          case '**': return l ** r;
          default: return null;
        }
      }
      case 'identifier': {
        // The one assignment in the enclosing function, else at module scope.
        for (const scope of [py.scopeOf(n), root]) {
          const list = py.assignmentsIn(scope).get(n.text);
          if (!list) continue;
          if (list.length !== 1 || list[0].value.type === 'assignment') return null;
          return intValue(list[0].value, depth + 1);
        }
        return null;
      }
      case 'call': {
        const f = calleePath(n.childForFieldName('function'));
        const a = pyArgs(n).positional;
        if (f === 'int' && a.length === 1) return intValue(a[0], depth + 1);
        if ((f === 'max' || f === 'min') && a.length >= 2) {
          const vs = a.map((x) => intValue(x, depth + 1));
          return vs.some((x) => x === null) ? null : f === 'max' ? Math.max(...(vs as number[])) : Math.min(...(vs as number[]));
        }
        return null;
      }
      case 'attribute': {
        // `np.dtype(np.float64).itemsize`, `cp.float32(0).itemsize`, `np.dtype("float64").itemsize`.
        if (n.childForFieldName('attribute')?.text !== 'itemsize') return null;
        const obj = n.childForFieldName('object');
        const key = (obj?.text ?? '').match(/\b(float64|double|float32|single|float16|half|u?int(?:8|16|32|64)|bool_|complex64|complex128|intp)\b/);
        return key ? (DTYPE_BYTES[key[1]] ?? null) : null;
      }
      default:
        return null;
    }
  };

  const dims = (n: SyntaxNode | null | undefined): [number, number, number] | null => {
    const u = unparen(n);
    if (!u) return null;
    if (u.type === 'tuple' || u.type === 'list') {
      const vs = u.namedChildren.filter((c) => c.type !== 'comment').map((c) => intValue(c));
      if (!vs.length || vs.some((v) => v === null)) return null;
      return [vs[0]!, vs[1] ?? 1, vs[2] ?? 1];
    }
    if (u.type === 'identifier') {
      const list = py.assignmentsIn(py.scopeOf(u)).get(u.text) ?? py.assignmentsIn(root).get(u.text);
      if (list?.length === 1 && list[0].value.type !== 'assignment' && list[0].value.id !== u.id) return dims(list[0].value);
    }
    const v = intValue(u);
    return v === null ? null : [v, 1, 1];
  };

  // Names (and attributes such as `self._k`) bound to a kernel, with the CUDA function they run.
  const bound = new Map<string, string | null>();
  const kernelOfCall = (call: SyntaxNode): string | null | undefined => {
    const p = calleePath(call.childForFieldName('function')) ?? '';
    const raw = /(^|\.)RawKernel$/.test(p);
    if (!raw && !/(^|\.)get_function$/.test(p)) return undefined;
    const { positional, keywords } = pyArgs(call);
    return stringValue(keywords.get('name') ?? positional[raw ? 1 : 0]);
  };
  const nameOfKernelExpr = (e: SyntaxNode | null | undefined): { known: boolean; cudaName: string | null } => {
    const u = unparen(e);
    if (!u) return { known: false, cudaName: null };
    if (u.type === 'call') {
      const k = kernelOfCall(u);
      return k === undefined ? { known: false, cudaName: null } : { known: true, cudaName: k };
    }
    if (u.type === 'subscript') {
      // `kernels["scan"]` from `runtime.compile_kernels(...)` or a dict of kernels.
      const key = stringValue(u.childForFieldName('subscript'));
      return { known: key !== null, cudaName: key };
    }
    if (bound.has(u.text)) return { known: true, cudaName: bound.get(u.text) ?? null };
    return { known: py.kernelNames.has(u.text), cudaName: null };
  };
  for (const a of root.descendantsOfType('assignment')) {
    const left = a.childForFieldName('left');
    const right = unparen(a.childForFieldName('right'));
    if (!left || !right || (left.type !== 'identifier' && left.type !== 'attribute')) continue;
    const k = nameOfKernelExpr(right);
    if (k.known) bound.set(left.text, bound.has(left.text) && bound.get(left.text) !== k.cudaName ? null : k.cudaName);
  }

  const launches: PyLaunch[] = [];
  const optIns: PyOptIn[] = [];
  const paramNames = (scope: SyntaxNode): string[] =>
    (scope.childForFieldName('parameters')?.namedChildren ?? []).map((p) => (p.type === 'identifier' ? p.text : (p.namedChildren.find((c) => c.type === 'identifier')?.text ?? '')));
  /**
   * An opt-in on a helper's parameter (`def enable_smem(kernel, nbytes): kernel.max_dynamic_shared_size_bytes = nbytes`)
   * becomes one opt-in per call of the helper in this file, for that call's kernel; a helper never
   * called here may serve any kernel.
   */
  const addOptIn = (node: SyntaxNode, kernelExpr: SyntaxNode | null | undefined, valueExpr: SyntaxNode | null | undefined): void => {
    const key = unparen(kernelExpr)?.text ?? null;
    const scope = py.scopeOf(node);
    const params = scope.type === 'function_definition' ? paramNames(scope) : [];
    const kIdx = key ? params.indexOf(key) : -1;
    if (kIdx < 0 || key === 'self') {
      optIns.push({ node, key, cudaName: nameOfKernelExpr(kernelExpr).cudaName, value: intValue(valueExpr) });
      return;
    }
    const vIdx = valueExpr ? params.indexOf(valueExpr.text.trim()) : -1;
    const helper = scope.childForFieldName('name')?.text ?? '';
    const uses = root.descendantsOfType('call').filter((c) => lastName(calleePath(c.childForFieldName('function'))) === helper);
    if (!uses.length) optIns.push({ node, key: null, cudaName: null, value: null });
    for (const u of uses) {
      const { positional, keywords } = pyArgs(u);
      const k = keywords.get(params[kIdx]) ?? positional[kIdx];
      const v = vIdx >= 0 ? (keywords.get(params[vIdx]) ?? positional[vIdx]) : valueExpr;
      optIns.push({ node: u, key: unparen(k)?.text ?? null, cudaName: nameOfKernelExpr(k).cudaName, value: intValue(v) });
    }
  };
  const LAUNCH_OR_OPT_IN = /^(cudaFuncSetAttribute|cuFuncSetAttribute|cuLaunchKernel|cudaLaunchKernel|launch|launch_kernel)$/;
  for (const call of root.descendantsOfType('call')) {
    const fn = call.childForFieldName('function');
    const p = calleePath(fn) ?? '';
    const name = lastName(p) ?? '';
    // Most calls of a module are neither launches nor opt-ins: decide that before reading the arguments.
    const maybeKernel =
      !!fn && (fn.type === 'subscript' || fn.type === 'call' || ((fn.type === 'identifier' || fn.type === 'attribute') && (bound.has(fn.text) || py.kernelNames.has(fn.text))));
    if (!maybeKernel && !LAUNCH_OR_OPT_IN.test(name)) continue;
    const { positional, keywords } = pyArgs(call);
    const smemKw = SMEM_KWARGS.map((k) => keywords.get(k)).find((x) => x) ?? null;
    if (/^(cudaFuncSetAttribute|cuFuncSetAttribute)$/.test(name) && OPT_IN_ATTR.test(positional[1]?.text ?? '')) {
      addOptIn(call, positional[0], positional[2]);
      continue;
    }
    if (name === 'cuLaunchKernel' && positional.length >= 8) {
      launches.push({ node: call, via: 'cuLaunchKernel', kernel: positional[0], cudaName: nameOfKernelExpr(positional[0]).cudaName, grid: null, block: null, smem: positional[7] ?? keywords.get('sharedMemBytes') ?? null });
      continue;
    }
    if (name === 'cudaLaunchKernel' && positional.length >= 4) {
      launches.push({ node: call, via: 'cudaLaunchKernel', kernel: positional[0], cudaName: nameOfKernelExpr(positional[0]).cudaName, grid: positional[1] ?? null, block: positional[2] ?? null, smem: positional[4] ?? keywords.get('sharedMem') ?? null });
      continue;
    }
    if (/(^|\.)runtime\.launch(_kernel)?$/.test(p) || (name === 'launch' && smemKw)) {
      const kernel = keywords.get('kernel') ?? positional[0] ?? null;
      launches.push({ node: call, via: 'runtime.launch', kernel, cudaName: nameOfKernelExpr(kernel).cudaName, grid: keywords.get('grid') ?? positional[1] ?? null, block: keywords.get('block') ?? positional[2] ?? null, smem: smemKw });
      continue;
    }
    const k = nameOfKernelExpr(fn);
    if (k.known && (positional.length >= 2 || keywords.has('block'))) {
      launches.push({ node: call, via: 'kernel-call', kernel: fn, cudaName: k.cudaName, grid: positional[0] ?? keywords.get('grid') ?? null, block: positional[1] ?? keywords.get('block') ?? null, smem: smemKw });
    }
  }
  for (const a of source.text.includes('max_dynamic_shared_size_bytes') ? root.descendantsOfType('assignment') : []) {
    const left = a.childForFieldName('left');
    if (left?.type !== 'attribute' || left.childForFieldName('attribute')?.text !== 'max_dynamic_shared_size_bytes') continue;
    addOptIn(a, left.childForFieldName('object'), a.childForFieldName('right'));
  }

  /**
   * The same kernel object: the same expression text, in the same function when it is a local name
   * (or parameter) there. Two `RawKernel`s of one source are separate objects with separate
   * attributes; only an opt-in on an expression that is not a kernel variable (`mod.get_function("k")`)
   * is matched by the CUDA name.
   */
  const localTo = (n: SyntaxNode, key: string): number | null => {
    const scope = py.scopeOf(n);
    if (scope.type !== 'function_definition' || !/^\w+$/.test(key)) return null;
    return py.assignmentsIn(scope).has(key) || paramNames(scope).includes(key) ? scope.id : null;
  };
  const optInsFor = (l: PyLaunch): PyOptIn[] => {
    const key = unparen(l.kernel)?.text ?? null;
    const scope = key ? localTo(l.node, key) : null;
    return optIns.filter((o) => {
      if (o.key === null) return true;
      if (key !== null && o.key === key) return localTo(o.node, o.key) === scope;
      return l.cudaName !== null && o.cudaName === l.cudaName && !bound.has(o.key) && !localTo(o.node, o.key);
    });
  };
  const smemBytes = (l: PyLaunch): number | null => (l.smem ? intValue(l.smem) : 0);
  const kernelSources = (cudaName: string): Source[] =>
    (source.kernels ?? []).filter((k) => new RegExp(`\\b${cudaName.replace(/[^\w]/g, '')}\\s*\\(`).test(k.text) && /__global__/.test(k.text));

  return { launches, optIns, optInsFor, intValue: (n) => intValue(n), dims, smemBytes, kernelSources };
}

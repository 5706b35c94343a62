import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { cudaModel } from './cuda.js';
import { pythonLaunches, type PyOptIn } from './pylaunch.js';
import { memoized, pythonModel } from './python.js';
import { kernelStaticBytes, smemFacts, staticBytesIn, type SmemOptIn } from './smem.js';

/**
 * Every kernel launch of a source (CUDA host or device code, a kernel string, or Python host code)
 * with the shared memory it asks for: the constant dynamic bytes, the kernel's static `__shared__`
 * bytes when its source is in the same file, and the opt-ins that raise
 * `cudaFuncAttributeMaxDynamicSharedMemorySize` for it (003 §4.2, catalog §5.1).
 */
export interface SmemLaunch {
  node: SyntaxNode;
  /** Kernel as the code names it (`gemm`, `gemm<128>`, `self._k`). */
  label: string;
  /** The `__global__` function, when known. */
  kernel: string | null;
  /** Dynamic shared bytes: 0 when not passed, null when not a constant. */
  dynamic: number | null;
  /** Static shared bytes of the kernel (known declarations; 0 when the kernel is not in this file). */
  static: number;
  /** Opt-ins that may cover this launch; `effective` is false for one set after the launch in the same function. Static bytes, opt-ins and `guarded` are only computed for launches with constant dynamic bytes. */
  optIns: Array<{ node: SyntaxNode; value: number | null; effective: boolean; line: number }>;
  /** The attribute's name in this API (for messages). */
  attr: string;
  /** The launch is inside a branch that tests the device's opt-in maximum. */
  guarded: boolean;
}

const OPTIN_QUERY = /optin|MaxSharedMemoryPerBlockOptin|MAX_SHARED_MEMORY_PER_BLOCK_OPTIN/i;

export const smemLaunches: Analysis<SmemLaunch[]> = {
  name: 'smem-launches',
  compute: (source, config) => memoized(memo, source, config, build),
};
const memo = new WeakMap<Source, { config: ResolvedConfig; value: SmemLaunch[] }>();

function guardedBy(n: SyntaxNode, stop: string): boolean {
  let p = n.parent;
  while (p && p.type !== stop) {
    if ((p.type === 'if_statement' || p.type === 'conditional_expression') && OPTIN_QUERY.test(p.childForFieldName('condition')?.text ?? '')) return true;
    p = p.parent;
  }
  return false;
}

const line = (s: Source, n: SyntaxNode) => s.toFile(n.startPosition.row, n.startPosition.column)?.line ?? n.startPosition.row + 1;

function build(source: Source, config: ResolvedConfig): SmemLaunch[] {
  return source.language === 'python' ? pythonSide(source, config) : cudaSide(source, config);
}

function cudaSide(source: Source, config: ResolvedConfig): SmemLaunch[] {
  const m = cudaModel.compute(source, config);
  const f = smemFacts.compute(source, config);
  const out: SmemLaunch[] = [];
  // A kernel string's kernels are raised from the Python module that loads them.
  const parent = source.parent ? pythonLaunches.compute(source.parent, config) : null;
  for (const l of m.launches) {
    const dynamic = f.dynamicBytes(l);
    // Launches without constant dynamic shared memory need no more facts (nothing checks them).
    if (!dynamic) {
      out.push({ node: l.node, label: l.kernel ?? '?', kernel: l.kernel, dynamic, static: 0, optIns: [], attr: '', guarded: false });
      continue;
    }
    const kernel = f.canonicalKernel(l.kernel);
    const kfn = kernel ? m.kernels.get(kernel) : undefined;
    const callee = l.kind === 'chevron' ? l.node.childForFieldName('function') : l.node.childForFieldName('arguments')?.namedChildren[l.kind === 'cudaLaunchKernelEx' ? 1 : 0];
    const st = kernelStaticBytes(f, kfn, callee);
    const fn = m.functionOf(l.node);
    const optIns = f.optInsFor(kernel, f.kernelArgs(callee)).map((o: SmemOptIn) => {
      // Set later in the launching function, even in the same loop: the first launch runs before it.
      const sameFnAfter = !!fn && o.fn?.node.id === fn.node.id && o.node.startIndex > l.node.endIndex;
      return { node: o.node, value: o.value, effective: !sameFnAfter, line: line(source, o.node) };
    });
    if (parent && kernel) {
      for (const o of parent.optIns) if (o.key === null || o.cudaName === kernel) optIns.push({ node: o.node, value: o.value, effective: true, line: line(source.parent!, o.node) });
    }
    out.push({
      node: l.node,
      label: l.kind === 'chevron' && callee ? callee.text.replace(/\s+/g, ' ') : kernel ? kernel + (f.kernelArgs(callee) !== null ? `<${f.kernelArgs(callee)}>` : '') : '?',
      kernel,
      dynamic,
      static: st?.bytes ?? 0,
      optIns,
      attr: source.parent ? '`max_dynamic_shared_size_bytes`' : l.kind === 'cuLaunchKernel' ? 'CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES' : 'cudaFuncAttributeMaxDynamicSharedMemorySize',
      guarded: guardedBy(l.node, 'function_definition'),
    });
  }
  return out;
}

function pythonSide(source: Source, config: ResolvedConfig): SmemLaunch[] {
  const pl = pythonLaunches.compute(source, config);
  const py = pythonModel.compute(source, config);
  const out: SmemLaunch[] = [];
  for (const l of pl.launches) {
    const dynamic = pl.smemBytes(l);
    if (!dynamic) {
      out.push({ node: l.node, label: l.cudaName ?? '?', kernel: l.cudaName, dynamic, static: 0, optIns: [], attr: '', guarded: false });
      continue;
    }
    const st = l.cudaName ? staticBytesIn(pl.kernelSources(l.cudaName), l.cudaName, config) : null;
    const scope = py.scopeOf(l.node);
    const optIns = pl.optInsFor(l).map((o: PyOptIn) => {
      const sameFnAfter = py.scopeOf(o.node).id === scope.id && o.node.startIndex > l.node.endIndex;
      return { node: o.node, value: o.value, effective: !sameFnAfter, line: line(source, o.node) };
    });
    out.push({
      node: l.node,
      label: l.kernel?.text.replace(/\s+/g, ' ') ?? l.cudaName ?? '?',
      kernel: l.cudaName,
      dynamic,
      static: st?.bytes ?? 0,
      optIns,
      attr: l.via === 'cuLaunchKernel' ? 'CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES' : l.via === 'cudaLaunchKernel' ? 'cudaFuncAttributeMaxDynamicSharedMemorySize' : '`max_dynamic_shared_size_bytes`',
      guarded: guardedBy(l.node, 'function_definition'),
    });
  }
  return out;
}

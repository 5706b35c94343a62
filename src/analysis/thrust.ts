import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { cudaModel, deviceLambdaHead, type CudaModel } from './cuda.js';
import { hostFunctionOf } from './flow.js';
import { memoized } from './python.js';
import { calleePath, lastName, unparen } from './syntax.js';
import type { ResolvedConfig } from '../config/schema.js';

/**
 * Thrust execution policies and CUB device-wide calls of CUDA C++ host code, and whether the code
 * around them works on a stream. Thrust runs an algorithm under `thrust::device` / `thrust::cuda::par`
 * (with or without an allocator) on the legacy default stream and synchronizes after it; `.on(s)`
 * moves it to `s` but still synchronizes, `par_nosync.on(s)` does neither (Thrust 1.16+). CUB's
 * device-wide algorithms take the stream as their last (defaulted) argument.
 */

export type PolicyKind =
  /** `thrust::device`, `thrust::cuda::par`, `thrust::cuda::par(alloc)`, `par_nosync` without `.on`. */
  | 'default-stream'
  /** `thrust::cuda::par.on(s)`, `thrust::cuda::par(alloc).on(s)`: on `s`, synchronizes after the algorithm. */
  | 'sync-on'
  /** `thrust::cuda::par_nosync(alloc).on(s)`. */
  | 'nosync-on'
  /** `thrust::host`, `thrust::seq`, `thrust::cpp::par`, `thrust::omp::par`, `thrust::tbb::par`. */
  | 'host';

export interface Policy {
  kind: PolicyKind;
  /** The stream of `.on(s)`, as written. */
  stream: SyntaxNode | null;
  /** The expression spelling the policy (the argument, or the initializer of the variable it names). */
  node: SyntaxNode;
}

export interface ThrustCall {
  node: SyntaxNode;
  /** `sort`, `inclusive_scan`, `reduce`. */
  algorithm: string;
  policy: Policy;
  /** The argument naming the policy (an expression or a variable). */
  arg: SyntaxNode;
}

export interface CubCall {
  node: SyntaxNode;
  /** `cub::DeviceReduce::Sum`. */
  path: string;
  /** The argument passing the stream, when one of the trailing arguments is a stream. */
  stream: SyntaxNode | null;
  /** `cub::X(nullptr, bytes, ...)`: the temporary-storage size query, which launches nothing. */
  sizeQuery: boolean;
}

export interface ThrustModel {
  calls: ThrustCall[];
  cub: CubCall[];
}

export const STREAM_TYPE = /\b(cudaStream_t|CUstream|hipStream_t|cuda_stream_view|cuda_stream|CUDAStream|CUDAStreamView|stream_ref|cudaStream)\b/;
/** Text of an argument that passes a stream: `stream`, `s`, `ctx->Stream()`, `handle.get_stream()`, `at::cuda::getCurrentCUDAStream()`. */
export const STREAM_ARG = /stream|Stream|^s\d*$|^st$|^strm\w*$|^cudaStreamPerThread$|^cudaStreamLegacy$/;
const HOST_POLICY = /^(::)?thrust::(host|seq|cpp::par|omp::par|tbb::par|system::cpp::par|system::omp::par|system::tbb::par)$/;
const DEVICE_POLICY = /^(::)?thrust::((cuda|hip|cuda_cub|system::cuda|system::hip)::)?(device|par|par_nosync)$/;

export const thrustModel: Analysis<ThrustModel> = {
  name: 'thrust-model',
  compute: (source, config) => memoized(thrustMemo, source, config, build),
};
const thrustMemo = new WeakMap<Source, { config: ResolvedConfig; value: ThrustModel }>();

const strip = (t: string) => t.replace(/\s+/g, '');

/** The policy an expression spells, or null when it is not one Thrust names itself (a project helper, a variable). */
export function policyOf(e: SyntaxNode | null | undefined): Policy | null {
  const u = unparen(e ?? null);
  if (!u) return null;
  const t = strip(u.text);
  if (HOST_POLICY.test(t)) return { kind: 'host', stream: null, node: u };
  if (DEVICE_POLICY.test(t)) return { kind: 'default-stream', stream: null, node: u };
  if (u.type !== 'call_expression') return null;
  const fn = u.childForFieldName('function');
  const args = u.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
  // `thrust::cuda::par(alloc)`, `thrust::cuda::par_nosync(alloc)`.
  if (fn && DEVICE_POLICY.test(strip(fn.text))) return { kind: 'default-stream', stream: null, node: u };
  if (fn?.type === 'field_expression' && fn.childForFieldName('field')?.text === 'on') {
    const base = policyOf(fn.childForFieldName('argument'));
    if (!base || base.kind === 'host') return null;
    const nosync = /par_nosync/.test(strip(fn.childForFieldName('argument')?.text ?? ''));
    return { kind: nosync ? 'nosync-on' : 'sync-on', stream: args[0] ?? null, node: u };
  }
  return null;
}

/** Inside a `[=] __device__ (...) {...}` lambda (or `__host__ __device__`, a `*_DEVICE` macro): device code. */
export function inDeviceLambda(n: SyntaxNode): boolean {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'lambda_expression') {
      const body = p.childForFieldName('body');
      const head = body ? p.text.slice(0, body.startIndex - p.startIndex) : p.text;
      if (deviceLambdaHead(head)) return true;
    }
    if (p.type === 'function_definition') return false;
  }
  return false;
}

function params(fn: SyntaxNode): SyntaxNode[] {
  let d = fn.childForFieldName('declarator');
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? null;
  return d?.childForFieldName('parameters')?.namedChildren.filter((p) => /parameter_declaration/.test(p.type)) ?? [];
}

function paramName(p: SyntaxNode): string | null {
  let d = p.childForFieldName('declarator');
  while (d && d.type !== 'identifier') d = d.childForFieldName('declarator') ?? d.namedChildren.find((c) => c.type === 'identifier' || /declarator/.test(c.type)) ?? null;
  return d?.text ?? null;
}

/** The outermost named function around `n` (a lambda's stream comes from the function that builds it). */
function namedFunction(n: SyntaxNode): SyntaxNode | null {
  let fn = hostFunctionOf(n);
  while (fn && fn.type !== 'function_definition') fn = hostFunctionOf(fn);
  return fn;
}

/** `auto policy = thrust::cuda::par(alloc);` before `n` in its function: the initializer. */
function localPolicy(name: string, at: SyntaxNode): Policy | null {
  const fn = namedFunction(at);
  if (!fn) return null;
  let found: Policy | null = null;
  for (const d of fn.descendantsOfType('init_declarator')) {
    if (d.startIndex > at.startIndex) break;
    const decl = d.childForFieldName('declarator');
    if (decl?.text !== name) continue;
    const v = d.childForFieldName('value');
    found = policyOf(v?.type === 'initializer_list' || v?.type === 'argument_list' ? v.namedChildren[0] : v);
  }
  return found;
}

function build(source: Source, config: ResolvedConfig): ThrustModel {
  const m: CudaModel = cudaModel.compute(source, config);
  const calls: ThrustCall[] = [];
  const cub: CubCall[] = [];
  const text = source.text;
  if (/thrust|cub::/.test(text)) {
    for (const c of m.calls) {
      if (m.inDeviceCode(c.node) || inDeviceLambda(c.node)) continue;
      if (/^(::)?cub::Device\w+::\w+$/.test(c.path)) {
        const tail = c.args.slice(-2);
        const stream = tail.reverse().find((a) => STREAM_ARG.test(strip(a.text)) || streamVarIn(a, c.node)) ?? null;
        const first = strip(c.args[0]?.text ?? '');
        cub.push({ node: c.node, path: c.path, stream, sizeQuery: /^(nullptr|NULL|0|\(void\*\)0|\(void\*\)nullptr)$/.test(first) });
        continue;
      }
      const arg = c.args[0];
      if (!arg || c.args.length < 2) continue;
      let policy = policyOf(arg);
      if (!policy && unparen(arg)?.type === 'identifier') policy = localPolicy(arg.text, c.node);
      if (!policy) continue;
      // Only Thrust's algorithms take a policy first (`thrust::sort(policy, ...)`, or `sort(...)` under `using namespace thrust`).
      if (!/^(::)?thrust::\w+$/.test(c.path) && c.path.includes('::')) continue;
      calls.push({ node: c.node, algorithm: lastName(c.path.replace(/::/g, '.')) ?? c.path, policy, arg });
    }
  }

  function streamVarIn(a: SyntaxNode, at: SyntaxNode): boolean {
    const u = unparen(a);
    if (u?.type !== 'identifier') return false;
    const fn = namedFunction(at);
    if (!fn) return false;
    if (params(fn).some((p) => paramName(p) === u.text && STREAM_TYPE.test(p.childForFieldName('type')?.text ?? p.text))) return true;
    return fn.descendantsOfType('declaration').some((d) => STREAM_TYPE.test(d.childForFieldName('type')?.text ?? '') && d.namedChildren.some((x) => x.text === u.text || x.childForFieldName('declarator')?.text === u.text));
  }

  return { calls, cub };
}

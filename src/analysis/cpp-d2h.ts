import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { cudaModel } from './cuda.js';
import { hostFunctionOf } from './flow.js';
import { memoized } from './python.js';
import { calleePath, contains, lastName, unparen } from './syntax.js';
import { inDeviceLambda, thrustModel } from './thrust.js';
import { escapeRe as esc } from '../core/regex.js';

/**
 * Device values read back by CUDA C++ host code (CUDA runtime, libtorch extensions, Thrust, RMM):
 * where a scalar, a count or an element leaves the device, and the GPU work of each host function,
 * so rules can tell a read in the middle of a pipeline from one at its end (003 §8.2).
 */

export type ReadbackKind = 'memcpy' | 'item' | 'cpu' | 'device-scalar' | 'device-vector-element';

export interface Readback {
  node: SyntaxNode;
  kind: ReadbackKind;
  /** The host variable that receives the value (`n` of `cudaMemcpy(&n, ...)`, `int n = t.item<int>()`). */
  value: string | null;
  /** The enclosing named host function. */
  fn: SyntaxNode;
}

export interface CppD2H {
  readbacks: Readback[];
  /** Launches, stream-ordered runtime calls, Thrust and CUB algorithms, in document order. */
  gpuWork: SyntaxNode[];
}

export const cppD2H: Analysis<CppD2H> = {
  name: 'cpp-d2h',
  compute: (source, config) => memoized(memo, source, config, build),
};
const memo = new WeakMap<Source, { config: ResolvedConfig; value: CppD2H }>();

const CPU_DEVICE = /^((at|torch|c10)::)?(kCPU|DeviceType::CPU)$|^((at|torch|c10)::)?Device\(((at|torch|c10)::)?(kCPU|DeviceType::CPU)\)$|^"cpu"$/;
/** Copy helpers named for the direction (`memcpy_d2h`, `copy_device_to_host`, raft's `update_host`). */
const D2H_HELPER = /^(\w*_)?(memcpy|copy)_?(d2h|dtoh|device_?to_?host)$|^update_host$/i;
/** Types whose `operator[]` / `back()` / `front()` on the host copy one element from the device. */
const DEVICE_VECTOR = /\b(device_vector|caching_device_vector|device_uvector)\s*</;
const TENSOR_ALLOC = /^((at|torch)::)?(empty|zeros|ones|full|empty_strided|randn|rand|arange)$/;

function outerFunction(n: SyntaxNode): SyntaxNode | null {
  let fn = hostFunctionOf(n);
  while (fn && fn.type !== 'function_definition') fn = hostFunctionOf(fn);
  return fn;
}

function methodName(call: SyntaxNode): { name: string; object: SyntaxNode | null } | null {
  const fn = call.childForFieldName('function');
  if (fn?.type !== 'field_expression') return null;
  const f = fn.childForFieldName('field');
  const name = f?.type === 'template_method' ? f.childForFieldName('name')?.text : f?.text;
  return name ? { name, object: fn.childForFieldName('argument') } : null;
}

/** The variable a value is stored in: `int n = <e>;`, `n = <e>;`, `auto n{<e>}`. */
function boundName(e: SyntaxNode): string | null {
  let p = e.parent;
  while (p && (p.type === 'parenthesized_expression' || p.type === 'cast_expression' || p.type === 'static_cast' || p.type === 'argument_list' && p.parent?.type === 'call_expression' && /_cast$/.test(calleePath(p.parent.childForFieldName('function')) ?? ''))) p = p.type === 'argument_list' ? p.parent!.parent : p.parent;
  if (!p) return null;
  if (p.type === 'init_declarator') return p.childForFieldName('declarator')?.text ?? null;
  if (p.type === 'assignment_expression' && contains(p.childForFieldName('right')!, e)) return p.childForFieldName('left')?.text ?? null;
  return null;
}

function build(source: Source, config: ResolvedConfig): CppD2H {
  const m = cudaModel.compute(source, config);
  const readbacks: Readback[] = [];
  const text = source.text;
  const gpuWork: SyntaxNode[] = [...m.launches.map((l) => l.node), ...m.calls.filter((c) => m.isGpuOp(c.node)).map((c) => c.node)];
  if (/thrust|cub::/.test(text)) {
    const t = thrustModel.compute(source, config);
    gpuWork.push(...t.calls.filter((c) => c.policy.kind !== 'host').map((c) => c.node), ...t.cub.filter((c) => !c.sizeQuery).map((c) => c.node));
  }
  gpuWork.sort((a, b) => a.startIndex - b.startIndex);

  const push = (node: SyntaxNode, kind: ReadbackKind, value: string | null) => {
    if (m.inDeviceCode(node) || inDeviceLambda(node)) return;
    const fn = outerFunction(node);
    if (fn) readbacks.push({ node, kind, value, fn });
  };

  for (const c of m.calls) {
    const name = c.name.replace(/_v2$/, '');
    const argsText = c.args.map((a) => a.text).join(' ');
    const isD2H =
      ((name === 'cudaMemcpy' || name === 'cudaMemcpyAsync') && /DeviceToHost/.test(argsText)) ||
      /^cuMemcpyDtoH(Async)?$/.test(name) ||
      /^cudaMemcpyFromSymbol(Async)?$/.test(name) ||
      D2H_HELPER.test(name);
    if (isD2H) {
      // A scalar destination (`&n`, `&info.count`): a count or a flag comes back, not a bulk download.
      const dst = c.args.find((a) => unparen(a)?.type === 'pointer_expression' && unparen(a)!.text.startsWith('&'));
      const target = dst ? unparen(dst)!.childForFieldName('argument') : null;
      if (target && (target.type === 'identifier' || target.type === 'field_expression')) push(c.node, 'memcpy', target.text);
      continue;
    }
    const meth = methodName(c.node);
    if (!meth) continue;
    if (meth.name === 'item' && c.args.length === 0) {
      push(c.node, 'item', boundName(c.node));
    } else if ((meth.name === 'cpu' && c.args.length === 0) || (meth.name === 'to' && c.args.length >= 1 && CPU_DEVICE.test(c.args[0].text.replace(/\s+/g, '')))) {
      // `t.cpu().item<int>()` is reported once, at the item().
      const outer = c.node.parent?.type === 'field_expression' ? c.node.parent.parent : null;
      if (outer?.type === 'call_expression' && methodName(outer)?.name === 'item') continue;
      push(c.node, 'cpu', boundName(c.node));
    } else if (meth.name === 'value' && c.args.length === 1 && /stream|Stream/.test(c.args[0].text)) {
      // rmm::device_scalar<T>::value(stream): copies the scalar and synchronizes the stream.
      push(c.node, 'device-scalar', boundName(c.node));
    }
  }

  // thrust::device_vector element reads on the host: `v[i]`, `v.back()`, `v.front()`.
  if (DEVICE_VECTOR.test(text)) {
    const vectors = new Map<SyntaxNode, Set<string>>();
    for (const d of source.root.descendantsOfType(['declaration', 'parameter_declaration', 'field_declaration'])) {
      const type = d.childForFieldName('type');
      if (!type || !/^(\w+::)*(device_vector|caching_device_vector|device_uvector)\s*</.test(type.text)) continue;
      // A parameter of a bare declaration (`void f(device_vector<T>* w);`) names nothing in any body.
      if (d.type === 'parameter_declaration' && !outerFunction(d)) continue;
      const scope = outerFunction(d) ?? source.root;
      let set = vectors.get(scope);
      if (!set) vectors.set(scope, (set = new Set()));
      for (const x of d.namedChildren) {
        let id: SyntaxNode | null = x === type ? null : x;
        // `device_vector<T>* p`: `p[i]` indexes the pointer, not the vector's elements.
        if (id && /pointer_declarator/.test(id.type + (id.childForFieldName('declarator')?.type ?? ''))) continue;
        while (id && id.type !== 'identifier' && id.type !== 'field_identifier') id = id.childForFieldName('declarator') ?? id.namedChildren.find((k) => k.type === 'identifier' || /declarator/.test(k.type)) ?? null;
        if (id) set.add(id.text);
      }
    }
    const isVector = (name: string, at: SyntaxNode) => vectors.get(outerFunction(at) ?? source.root)?.has(name) || vectors.get(source.root)?.has(name);
    for (const s of source.root.descendantsOfType('subscript_expression')) {
      const base = s.childForFieldName('argument');
      if (base?.type !== 'identifier' || !isVector(base.text, s)) continue;
      const p = s.parent;
      if (p?.type === 'assignment_expression' && p.childForFieldName('left')?.id === s.id) continue;
      if (p?.type === 'pointer_expression' && p.text.startsWith('&')) continue;
      push(s, 'device-vector-element', boundName(s));
    }
    for (const c of m.calls) {
      const meth = methodName(c.node);
      if (!meth || (meth.name !== 'back' && meth.name !== 'front') || c.args.length) continue;
      if (meth.object?.type !== 'identifier' || !isVector(meth.object.text, c.node)) continue;
      push(c.node, 'device-vector-element', boundName(c.node));
    }
  }
  readbacks.sort((a, b) => a.node.startIndex - b.node.startIndex);
  return { readbacks, gpuWork };
}

/** GPU work after `r` in its function, or around it in the same loop. */
export function workAfter(d: CppD2H, r: Readback, loop: SyntaxNode | null): SyntaxNode | null {
  const after = d.gpuWork.find((w) => w.startIndex > r.node.endIndex && contains(r.fn, w) && !contains(w, r.node));
  if (after) return after;
  if (loop) return d.gpuWork.find((w) => contains(loop, w) && !contains(w, r.node)) ?? null;
  return null;
}

/** Does a later use of `value` size an allocation or a launch, or steer host control flow? */
export function valueDrives(d: CppD2H, r: Readback, launches: SyntaxNode[]): 'alloc' | 'launch' | 'control' | null {
  if (!r.value || !/^\w+$/.test(r.value)) return null;
  const re = new RegExp(`\\b${esc(r.value)}\\b`);
  for (const id of r.fn.descendantsOfType('identifier')) {
    if (id.text !== r.value || id.startIndex <= r.node.endIndex) continue;
    for (let p: SyntaxNode | null = id.parent; p && p.id !== r.fn.id; p = p.parent) {
      if (p.type === 'call_expression') {
        const path = calleePath(p.childForFieldName('function')) ?? '';
        const name = lastName(path.replace(/::/g, '.')) ?? path;
        if (TENSOR_ALLOC.test(path) || /^(cudaMalloc\w*|cuMemAlloc\w*|resize|reserve|allocate)$/.test(name)) return 'alloc';
        if (launches.some((l) => l.id === p!.id)) return 'launch';
      }
      if (p.type === 'kernel_call_syntax') return 'launch';
      if (/^(if_statement|while_statement|for_statement|do_statement|conditional_expression)$/.test(p.type)) {
        const cond = p.childForFieldName('condition');
        if (cond && contains(cond, id) && re.test(cond.text)) return 'control';
      }
      if (/statement$/.test(p.type) || p.type === 'declaration') {
        // `dim3 grid(n / 256)`, `std::vector<T> h(n)`, `rmm::device_uvector<T> out(n, stream)`.
        if (p.type === 'declaration' && /\b(dim3|device_vector|device_uvector|device_buffer|Tensor)\b/.test(p.childForFieldName('type')?.text ?? '')) return /dim3/.test(p.childForFieldName('type')!.text) ? 'launch' : 'alloc';
        break;
      }
    }
  }
  return null;
}

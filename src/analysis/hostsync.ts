/**
 * Host-synchronization facts shared by the sync rules that ask "does the host need this wait?"
 * (sync/redundant-stream-sync, sync/host-sync-for-stream-order): stream-ordered operations of CUDA
 * host code, host accesses between a sync and the next operation, and sync points that exist to
 * measure or are marked as fences.
 */
import type { CudaModel } from './cuda.js';
import { streamText } from './streams.js';
import { commentsAround, contains, lastName, matchesVocab } from './syntax.js';
import type { SyntaxNode } from '../core/types.js';

const TRACE_COND = /\b\w*(trac(e|ing)|profil\w*|timing|TRACE|PROFILE)\w*\b/;
/** Whether the source text names any `sync_calls` entry: the sync rules skip their stream analysis otherwise. */
export function mentionsSyncCall(text: string, syncCalls: readonly string[]): boolean {
  return syncCalls.some((e) => text.includes(lastName(e) ?? e));
}

export const BLOCKING_COPY = /^(cudaMemcpy|cudaMemcpy2D|cudaMemcpy3D|cudaMemcpyToSymbol|cudaMemcpyFromSymbol|cudaMemcpyPeer|cuMemcpy|cuMemcpyDtoH|cuMemcpyHtoD|cuMemcpyDtoD)(_v2)?$/;
export const FREES = /^(cudaFree|cudaFreeHost|cudaFreeArray|cuMemFree|cuMemFree_v2|cuMemFreeHost|free)$/;
export const HOST_ACCESSIBLE_ALLOC = /^(cudaMallocManaged|cudaMallocHost|cudaHostAlloc|cuMemAllocManaged|cuMemAllocHost|cuMemHostAlloc|malloc)$/;
export const FILE_IO = /^(fwrite|fprintf|fputs|fflush|write|fclose)$/;

export function fenceMarked(stmt: SyntaxNode, markers: readonly string[]): boolean {
  const comments = commentsAround(stmt).map((c) => c.toLowerCase());
  return comments.some((c) => markers.some((mk) => c.includes(mk.toLowerCase())));
}

/** An `if` around `n` whose condition turns tracing or profiling on: such a sync exists to measure. */
export function traceGated(n: SyntaxNode, stop: SyntaxNode): boolean {
  for (let p = n.parent; p && p.id !== stop.id; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const cond = p.childForFieldName('condition');
      if (cond && !contains(cond, n) && TRACE_COND.test(cond.text)) return true;
    }
  }
  return false;
}

export function findLast<T>(list: T[], pred: (x: T) => boolean): T | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (pred(list[i])) return list[i];
  return undefined;
}

export interface Op {
  node: SyntaxNode;
  stream: string | null;
}

export function withItems(w: SyntaxNode): SyntaxNode[] {
  const clause = w.namedChildren.find((c) => c.type === 'with_clause');
  return (clause?.namedChildren ?? []).filter((c) => c.type === 'with_item').map((i) => {
    const v = i.childForFieldName('value') ?? i.namedChildren[0];
    return v?.type === 'as_pattern' ? v.namedChildren[0] : v;
  }).filter((v): v is SyntaxNode => !!v);
}

/** `cub::DeviceScan::ExclusiveSum(..., stream)` / `thrust::sort(thrust::cuda::par.on(s), ...)`: the stream argument, if any. */
export function libraryStream(args: SyntaxNode[], streamNames: Set<string>): string | null {
  const on = args[0] && /\.on\(\s*([^)]+?)\s*\)/.exec(args[0].text);
  if (on) return streamText({ text: on[1] } as SyntaxNode);
  const last = args[args.length - 1];
  if (last && (streamNames.has(last.text) || /stream/i.test(last.text))) return streamText(last);
  return null;
}

export interface FnFacts {
  calls: CudaModel['calls'];
  /** Pointers the host can dereference (managed, pinned, malloc) and async-copy host ends. */
  hostPtrs: Set<string>;
  /** Every pointer variable of the function. */
  ptrs: Set<string>;
  /** Host accesses that may read device results: subscripts, dereferences, `->`, `delete`, host_vector copies. */
  accesses: SyntaxNode[];
}

export function fnFacts(cm: CudaModel, fn: SyntaxNode): FnFacts {
  const calls = cm.calls.filter((c) => contains(fn, c.node));
  const hostPtrs = new Set<string>();
  const ptrs = new Set<string>();
  // `(void**)&d_x`, `host_out.data()`, `h_xy + 2 * b * n`, `&last`: the variable that names the buffer.
  const baseName = (e: SyntaxNode | undefined) => (e ? /[A-Za-z_]\w*/.exec(e.text.replace(/^\s*\([^()]*\)\s*/, ''))?.[0] : undefined);
  for (const c of calls) {
    if (HOST_ACCESSIBLE_ALLOC.test(c.name)) {
      const n = c.name === 'malloc' ? (c.node.parent?.type === 'init_declarator' ? c.node.parent.childForFieldName('declarator')?.text.replace(/^\*+/, '') : undefined) : baseName(c.args[0]);
      if (n) hostPtrs.add(n);
    }
    const allocated = /^cudaMalloc/.test(c.name) ? baseName(c.args[0]) : undefined;
    if (allocated) ptrs.add(allocated);
    // Both ends of an async copy that touch host memory: the D2H destination and the H2D source.
    if (/^cudaMemcpy\w*Async$/.test(c.name)) {
      const host = /DeviceToHost/.test(c.node.text) ? c.args[0] : /HostToDevice/.test(c.node.text) ? c.args[1] : /Default/.test(c.node.text) ? c.args[0] : undefined;
      const name = baseName(host);
      if (name) hostPtrs.add(name);
    }
  }
  for (const d of fn.descendantsOfType('pointer_declarator')) {
    const id = d.descendantsOfType('identifier')[0];
    if (id) ptrs.add(id.text);
  }
  const accesses = fn.descendantsOfType(['subscript_expression', 'pointer_expression', 'field_expression', 'delete_expression', 'identifier', 'declaration']).filter((n) => {
    if (n.type === 'delete_expression') return true;
    if (n.type === 'declaration') return /\bhost_vector\b/.test(n.text);
    if (n.type === 'identifier') return hostPtrs.has(n.text);
    if (n.type === 'field_expression' && !n.text.includes('->')) return false;
    const base = n.namedChildren[0];
    return base?.type === 'identifier' && (ptrs.has(base.text) || hostPtrs.has(base.text));
  });
  return { calls, hostPtrs, ptrs, accesses };
}

export function cppHostTouches(cm: CudaModel, f: FnFacts, sync: SyntaxNode, a: SyntaxNode, b: SyntaxNode, timing: readonly string[]): boolean {
  const after = (n: SyntaxNode) => n.startIndex >= sync.endIndex && n.startIndex < b.startIndex;
  for (const c of f.calls) {
    if (c.node.startIndex > a.endIndex && c.node.startIndex < b.startIndex && /^(cudaSetDevice|cuCtxSetCurrent|cuCtxPushCurrent|cuCtxPopCurrent)$/.test(c.name)) return true;
    if (!after(c.node) || contains(c.node, sync)) continue;
    if (BLOCKING_COPY.test(c.name) || FREES.test(c.name) || (FILE_IO.test(c.name) && !/^(stderr|stdout)$/.test(c.args[0]?.text ?? '')) || matchesVocab(c.path, timing)) return true;
    if (/^thrust::copy/.test(c.path)) return true;
    // A device pointer handed to a host library (MPI, a file writer, a checksum): it reads data the GPU produced.
    if (!cm.isGpuOp(c.node) && !/^(cuda|cu[A-Z]|nvtx|cub::|thrust::)/.test(c.path) && c.args.some((x) => (x.type === 'identifier' ? [x] : x.descendantsOfType('identifier')).some((i) => f.ptrs.has(i.text) || f.hostPtrs.has(i.text)))) return true;
  }
  return f.accesses.some(after);
}

/** Stream-ordered operations of CUDA host code (stream uses and GPU calls), in document order. */
export function cudaOps(cm: CudaModel, uses: ReadonlyArray<{ node: SyntaxNode; stream: string | null }>, streamNames: Set<string>): Op[] {
  const ops: Op[] = uses.map((u) => ({ node: u.node, stream: u.stream }));
  const seen = new Set(ops.map((o) => o.node.id));
  for (const c of cm.calls) {
    if (!cm.isGpuOp(c.node) || seen.has(c.node.id)) continue;
    ops.push({ node: c.node, stream: libraryStream(c.args, streamNames) });
  }
  return ops.sort((x, y) => x.node.startIndex - y.node.startIndex);
}

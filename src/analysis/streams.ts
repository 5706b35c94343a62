import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import { cudaModel, type CudaModel } from './cuda.js';
import type { ResolvedConfig } from '../config/schema.js';
import { pythonModel, type PyModel } from './python.js';
import { enclosingClass, hostFunctionOf, onEveryPath, unconditionalWithin } from './flow.js';
import { calleePath, contains, lastName, matchesVocab, pyArgs, unparen } from './syntax.js';
import { hasProjectFacts, includedFunction, pyFunctionFacts } from '../index/lookup.js';

/**
 * Streams, events and synchronization points of a source, in document order, for Python (CuPy,
 * cuda-python, vibeSpatial runtime) and CUDA C++ host code alike. The sync and memory rules reason
 * over this one list instead of each re-finding `synchronize` calls.
 */

export type SyncScope = 'device' | 'stream' | 'event';

export interface SyncPoint {
  node: SyntaxNode;
  scope: SyncScope;
  /** Text of the stream or event synchronized (null for device-wide or the current stream). */
  target: string | null;
  /** `synchronize=` default of a CCCL helper, or `X.synchronize()` on a stream object. */
  via: 'call' | 'method' | 'cccl-default';
}

export interface StreamDecl {
  node: SyntaxNode;
  /** Name (Python) or variable (C++) that holds the stream. */
  name: string;
  /** `non_blocking=True`, `cudaStreamNonBlocking`. */
  nonBlocking: boolean;
  /** Priority argument node, when one is passed. */
  priority: SyntaxNode | null;
  inLoop: boolean;
}

/**
 * A call that creates a new stream (vocabulary `stream_create_calls`), whether or not its result is
 * bound to a name: `[cp.cuda.Stream() for _ in range(n)]`, `pool.append(cp.cuda.Stream())` create
 * streams too. C++ creations are the `streams` declarations.
 */
export interface StreamCreation {
  node: SyntaxNode;
  /** Name bound to the new stream (`s`, `self.s`, `streams[i]`, C++ `s` of `&s`); null when unbound. */
  name: string | null;
  nonBlocking: boolean;
  /** Priority argument node, when one is passed (keyword or positional). */
  priority: SyntaxNode | null;
}

export interface StreamUse {
  node: SyntaxNode;
  /** Stream text passed to the operation; null = default (legacy null) stream. */
  stream: string | null;
  kind: 'launch' | 'copy' | 'memset' | 'alloc' | 'free' | 'cccl' | 'other';
}

export interface StreamFacts {
  syncs: SyncPoint[];
  streams: StreamDecl[];
  /** Every stream creation call, in document order (see `StreamCreation`). */
  creations: StreamCreation[];
  uses: StreamUse[];
  /** `cudaEventRecord(e, s)` / `e.record(s)` and `cudaStreamWaitEvent(s, e)` / `s.wait_event(e)`. */
  eventRecords: Array<{ node: SyntaxNode; event: string; stream: string | null }>;
  eventWaits: Array<{ node: SyntaxNode; stream: string | null; event: string }>;
  /** Asynchronous device-to-host copies and the host buffer each one writes (in document order). */
  asyncD2H: AsyncD2H[];
  /** Stream/event queries that a host loop spins on until the work is done (`while (cudaStreamQuery(s) != cudaSuccess)`). */
  polls: SyncPoint[];
}

/**
 * `cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s)`, `runtime.copy_device_to_host_async(d, s, h)`,
 * `d.get(stream=s, out=h, blocking=False)`: the host buffer holds the data only once the stream has
 * reached the copy, which the host learns from a sync on that stream (003 §2.3).
 */
export interface AsyncD2H {
  node: SyntaxNode;
  /** Base name of the host buffer written: `h`, `self.h_buf`, `buf.host` (`h.ctypes.data`, `&h[0]`, `h.data()` → `h`). */
  host: string;
  hostNode: SyntaxNode | null;
  /** Stream text; null = legacy default stream. */
  stream: string | null;
  streamNode: SyntaxNode | null;
}

const PY_STREAM_CTORS = /(^|\.)(Stream|ExternalStream|from_external|cudaStreamCreate\w*|cuStreamCreate\w*|create_stream|stream)$/;
// `cudaStreamPerThread` (and CuPy's `Stream.ptds`) is the per-thread default stream: not the legacy
// stream, so it neither serializes the other streams nor belongs in this list.
const NULL_STREAM = /^(0|0x0|nullptr|NULL|None|cudaStreamLegacy|CU_STREAM_LEGACY|cp\.cuda\.Stream\.null|cupy\.cuda\.Stream\.null|Stream\.null|(cp|cupy)\.cuda\.Stream\.null\.ptr)$/;
/**
 * Position of the stream argument of the CUDA stream-ordered copy, memset and allocation calls; the
 * C++ runtime API defaults an omitted stream to 0, the legacy default stream.
 */
const STREAM_ARG: Record<string, number> = {
  cudaMemcpyAsync: 4, cudaMemcpy2DAsync: 7, cudaMemcpy3DAsync: 1, cudaMemcpy3DPeerAsync: 1, cudaMemcpyPeerAsync: 5,
  cudaMemcpyToSymbolAsync: 5, cudaMemcpyFromSymbolAsync: 5, cudaMemcpy2DToArrayAsync: 8, cudaMemcpy2DFromArrayAsync: 8,
  cudaMemcpyToArrayAsync: 6, cudaMemcpyFromArrayAsync: 6, cudaMemsetAsync: 3, cudaMemset2DAsync: 5, cudaMemset3DAsync: 3,
  cudaMemPrefetchAsync: 3, cudaMallocAsync: 2, cudaMallocFromPoolAsync: 3, cudaFreeAsync: 1,
  cuMemcpyAsync: 3, cuMemcpyHtoDAsync: 3, cuMemcpyDtoHAsync: 3, cuMemcpyDtoDAsync: 3, cuMemcpyPeerAsync: 5,
  cuMemsetD8Async: 3, cuMemsetD16Async: 3, cuMemsetD32Async: 3, cuMemsetD2D8Async: 5, cuMemsetD2D16Async: 5,
  cuMemsetD2D32Async: 5, cuMemAllocAsync: 2, cuMemAllocFromPoolAsync: 3, cuMemFreeAsync: 1, cuMemPrefetchAsync: 3,
};
const PY_STREAM_ARG: Record<string, number> = { ...STREAM_ARG, cudaMallocAsync: 1, cuMemAllocAsync: 1, cuMemAllocFromPoolAsync: 2, cudaMallocFromPoolAsync: 2, mallocAsync: 1, freeAsync: 1, memcpyAsync: 4, memsetAsync: 3, cudaLaunchKernel: 5, cudaLaunchCooperativeKernel: 5, cuLaunchKernel: 8, cuLaunchCooperativeKernel: 8 };


export const streamFacts: Analysis<StreamFacts> = {
  name: 'stream-facts',
  compute(source, config) {
    const facts: StreamFacts = { syncs: [], streams: [], creations: [], uses: [], eventRecords: [], eventWaits: [], asyncD2H: [], polls: [] };
    factsContext.set(facts, { config, path: source.path });
    const vocab = config.vocab;
    if (source.language === 'python') {
      const m = pythonModel.compute(source, config);
      const eventNames = new Set<string>();
      const calls = source.root.descendantsOfType('call');
      // Stream objects first: `s.record()` and `with s:` need to know them wherever they appear.
      for (const call of calls) {
        const path = calleePath(call.childForFieldName('function'));
        if (!path || !PY_STREAM_CTORS.test(path) || !/cuda|cupy|cp\.|cudart|driver|runtime/.test(path)) continue;
        const name = pyBoundName(call);
        if (!name) continue;
        facts.streams.push({
          node: call,
          name,
          // CuPy `non_blocking=True`, cuda-python `cudaStreamNonBlocking` / `CU_STREAM_NON_BLOCKING` flags.
          nonBlocking: /non_blocking\s*=\s*True|cudaStreamNonBlocking|CU_STREAM_NON_BLOCKING/.test(call.text),
          priority: pyStreamPriority(call),
          inLoop: m.inLoop(call),
        });
      }
      for (const call of calls) {
        if (!m.callMatches(call, vocab.stream_create_calls)) continue;
        // `Stream(null=True)` / `Stream(ptds=True)` are CuPy handles of the default streams, not new ones.
        if (/\b(null|ptds)\s*=\s*True\b/.test(call.text)) continue;
        facts.creations.push({ node: call, name: pyBoundName(call), nonBlocking: /non_blocking\s*=\s*True|cudaStreamNonBlocking|CU_STREAM_NON_BLOCKING/.test(call.text), priority: pyStreamPriority(call) });
      }
      const streamNames = new Set(facts.streams.map((d) => d.name));
      for (const call of calls) {
        const fn = call.childForFieldName('function');
        const path = calleePath(fn);
        // `events[i].synchronize()`: a subscripted receiver has no dotted path, but the method name counts.
        const name = lastName(path) ?? (fn?.type === 'attribute' ? (fn.childForFieldName('attribute')?.text ?? '') : '');
        const args = pyArgs(call);
        if (name === 'synchronize' || matchesVocab(path, vocab.sync_calls)) {
          const obj = fn?.type === 'attribute' ? unparen(fn.childForFieldName('object')) : null;
          const device = /deviceSynchronize|cudaDeviceSynchronize|cuCtxSynchronize|torch\.cuda\.synchronize|(^|\.)runtime\.synchronize$|Device\.synchronize$/.test(path ?? '');
          const target = device ? null : name === 'synchronize' ? (obj?.text ?? null) : (args.positional[0]?.text ?? null);
          facts.syncs.push({ node: call, scope: device ? 'device' : /[Ee]vent/.test(path ?? '') ? 'event' : 'stream', target, via: name === 'synchronize' ? 'method' : 'call' });
          continue;
        }
        if (/(^|\.)(cudaStreamQuery|cudaEventQuery|cuStreamQuery|cuEventQuery|streamQuery|eventQuery)$/.test(path ?? '') && pollingLoop(call)) {
          // `while cudart.cudaStreamQuery(s)[0] != cudaSuccess:`: a host spin-wait is a synchronization.
          const target = args.positional[0]?.text ?? null;
          if (target) facts.polls.push({ node: call, scope: /[Ee]vent/.test(path ?? '') ? 'event' : 'stream', target, via: 'call' });
        }
        if (name && vocab.cccl_calls.includes(name) && m.isGpuOpNode(call)) {
          const sync = args.keywords.get('synchronize');
          // CCCL helpers of 003 §2.3 synchronize unless told not to.
          if (!sync || !/^False$/.test(sync.text)) facts.syncs.push({ node: call, scope: 'device', target: null, via: 'cccl-default' });
          facts.uses.push({ node: call, stream: args.keywords.get('stream')?.text ?? null, kind: 'cccl' });
          continue;
        }
        if (path && PY_STREAM_CTORS.test(path) && /cuda|cupy|cp\.|cudart|driver|runtime/.test(path)) continue;
        if (/(^|\.)Event$/.test(path ?? '')) {
          const ev = pyBoundName(call);
          if (ev) eventNames.add(ev);
        }
        if (name === 'record' && fn?.type === 'attribute') {
          const obj = unparen(fn.childForFieldName('object'));
          const explicit = args.positional[0] ?? args.keywords.get('stream') ?? null;
          if (obj && !eventNames.has(obj.text) && (pyIsStreamExpr(obj, streamNames) || /get_current_stream\(\s*\)$/.test(obj.text))) {
            // `e = s.record()`: CuPy's Stream.record returns a new event recorded on `s`.
            // Unbound (`s2.wait_event(s1.record())`): the call text itself names the event.
            const ev = pyBoundName(call) ?? pyArgs(call).keywords.get('event')?.text ?? call.text;
            if (ev) eventNames.add(ev);
            facts.eventRecords.push({ node: call, event: ev, stream: pyStreamOf(obj.text, call, streamNames) });
          } else {
            facts.eventRecords.push({ node: call, event: obj?.text ?? '', stream: explicit ? pyStreamOf(explicit.text, call, streamNames) : pyContextStream(call, streamNames) });
          }
        } else if (name === 'wait_event' && fn?.type === 'attribute') {
          facts.eventWaits.push({ node: call, stream: fn.childForFieldName('object')?.text ?? null, event: args.positional[0]?.text ?? '' });
        } else if (/(^|\.)(cudaEventRecord|cuEventRecord|eventRecord)$/.test(path ?? '')) {
          facts.eventRecords.push({ node: call, event: args.positional[0]?.text ?? '', stream: streamText(args.positional[1] ?? null) });
        } else if (/(^|\.)(cudaStreamWaitEvent|cuStreamWaitEvent|streamWaitEvent)$/.test(path ?? '')) {
          facts.eventWaits.push({ node: call, stream: streamText(args.positional[0] ?? null), event: args.positional[1]?.text ?? '' });
        }
        const d2h = pyAsyncD2H(call, m, vocab, streamNames);
        if (d2h) {
          facts.asyncD2H.push(d2h);
          facts.uses.push({ node: call, stream: d2h.stream, kind: 'copy' });
          continue;
        }
        const at = PY_STREAM_ARG[name];
        const streamArg = args.keywords.get('stream') ?? args.keywords.get('hStream') ?? (at !== undefined && /^(cuda|cu[A-Z]|mallocAsync|freeAsync|memcpyAsync|memsetAsync)/.test(name) ? args.positional[at] : undefined);
        const kind: StreamUse['kind'] = /[Ll]aunch/.test(path ?? '') ? 'launch' : /[Cc]opy|[Mm]emcpy/.test(path ?? '') ? 'copy' : /[Mm]emset/.test(path ?? '') ? 'memset' : /[Mm]alloc|AllocAsync|AllocFromPool/.test(name) ? 'alloc' : /[Ff]ree/.test(name) ? 'free' : 'other';
        if (m.isGpuOpNode(call) || (streamArg && /Async$/.test(name))) {
          facts.uses.push({ node: call, stream: streamArg ? pyStreamOf(streamArg.text, call, streamNames) : pyContextStream(call, streamNames), kind });
        }
      }
      // `while not s.done:` (CuPy Stream/Event property): a host spin-wait is a synchronization.
      for (const a of source.root.descendantsOfType('attribute')) {
        if (a.childForFieldName('attribute')?.text !== 'done' || !pollingLoop(a)) continue;
        const target = a.childForFieldName('object')?.text ?? '';
        facts.polls.push({ node: a, scope: eventNames.has(target) ? 'event' : 'stream', target, via: 'method' });
      }
      facts.polls.sort((a, b) => a.node.startIndex - b.node.startIndex);
      // `e.synchronize()` on an event object is an event sync, whatever the receiver is called.
      const eventBases = new Set([...eventNames].map((e) => e.replace(/\s+/g, '').replace(/\[.*\]$/, '')));
      for (const s of facts.syncs) if (s.scope === 'stream' && s.target && eventBases.has(s.target.replace(/\s+/g, '').replace(/\[.*\]$/, ''))) s.scope = 'event';
      facts.uses.sort((a, b) => a.node.startIndex - b.node.startIndex);
      return facts;
    }
    const m = cudaModel.compute(source, config);
    for (const l of m.launches) facts.uses.push({ node: l.node, stream: streamText(l.stream), kind: 'launch' });
    for (const c of m.calls) {
      const n = c.name;
      if (/^(cudaDeviceSynchronize|cuCtxSynchronize)$/.test(n)) facts.syncs.push({ node: c.node, scope: 'device', target: null, via: 'call' });
      else if (/^(cudaStreamSynchronize|cuStreamSynchronize)$/.test(n)) facts.syncs.push({ node: c.node, scope: 'stream', target: streamText(c.args[0] ?? null), via: 'call' });
      else if (/^(cudaEventSynchronize|cuEventSynchronize)$/.test(n)) facts.syncs.push({ node: c.node, scope: 'event', target: c.args[0]?.text ?? null, via: 'call' });
      else if (/^(cudaStreamCreate|cudaStreamCreateWithFlags|cudaStreamCreateWithPriority|cuStreamCreate|cuStreamCreateWithPriority)$/.test(n)) {
        const target = c.args[0]?.text.replace(/^&/, '') ?? '';
        facts.streams.push({
          node: c.node,
          name: target,
          nonBlocking: /NonBlocking|CU_STREAM_NON_BLOCKING/.test(c.node.text),
          priority: /Priority/.test(n) ? (c.args[2] ?? null) : null,
          inLoop: m.loopOf(c.node) !== null,
        });
        facts.creations.push(facts.streams[facts.streams.length - 1]);
      } else if (n === 'cudaEventRecord' || n === 'cuEventRecord') facts.eventRecords.push({ node: c.node, event: c.args[0]?.text ?? '', stream: streamText(c.args[1] ?? null) });
      else if (n === 'cudaStreamWaitEvent' || n === 'cuStreamWaitEvent') facts.eventWaits.push({ node: c.node, stream: streamText(c.args[0] ?? null), event: c.args[1]?.text ?? '' });
      else if (/^(cudaStreamQuery|cudaEventQuery|cuStreamQuery|cuEventQuery)$/.test(n)) {
        // `while (cudaStreamQuery(s) == cudaErrorNotReady) {}`: a host spin-wait is a synchronization.
        if (pollingLoop(c.node)) facts.polls.push({ node: c.node, scope: /Event/.test(n) ? 'event' : 'stream', target: /Event/.test(n) ? (c.args[0]?.text ?? null) : streamText(c.args[0] ?? null), via: 'call' });
      } else {
        const base = n.replace(/_v2$/, '');
        const at = STREAM_ARG[base];
        if (at === undefined) continue;
        facts.uses.push({
          node: c.node,
          stream: streamText(c.args[at] ?? null),
          kind: /Memcpy/.test(base) ? 'copy' : /Memset/.test(base) ? 'memset' : /Malloc|MemAlloc/.test(base) ? 'alloc' : /Free/.test(base) ? 'free' : 'other',
        });
        const d2h = cppAsyncD2H(c.node, base, c.args, at);
        if (d2h) facts.asyncD2H.push(d2h);
      }
    }
    // NCCL collectives take their stream last; CUB device algorithms take it as a trailing optional
    // argument that defaults to the legacy stream; host helpers handed a stream queue work on it.
    for (const c of m.calls) {
      if (m.inDeviceCode(c.node)) continue;
      if (/^nccl[A-Z]/.test(c.name) && m.isGpuOp(c.node)) {
        facts.uses.push({ node: c.node, stream: streamText(c.args[c.args.length - 1] ?? null), kind: 'other' });
      } else if (/^cub::Device\w+::\w+$/.test(c.path.replace(/^::/, '')) && c.args.length >= 2 && m.isGpuOp(c.node)) {
        const s = c.args.find((a) => m.isStreamExpr(a));
        facts.uses.push({ node: c.node, stream: s ? streamText(s) : null, kind: 'other' });
      }
    }
    // A helper left at its default stream (no stream passed where the file passes one elsewhere, a launcher
    // handed only a `__device__` lambda, a launch-configuration object without its stream) is legacy-stream work.
    for (const h of m.helperOps) if (h.stream !== null || h.omitted) facts.uses.push({ node: h.node, stream: h.stream === null ? null : streamText({ text: h.stream } as SyntaxNode), kind: 'other' });
    facts.uses.sort((a, b) => a.node.startIndex - b.node.startIndex);
    facts.syncs.sort((a, b) => a.node.startIndex - b.node.startIndex);
    return facts;
  },
};

/** The stream an operation runs on; null for the legacy default stream (omitted, 0, nullptr). */
export function streamText(n: SyntaxNode | null): string | null {
  if (!n) return null;
  const t = n.text.trim();
  return NULL_STREAM.test(t) ? null : t;
}

export function isNullStream(t: string | null): boolean {
  return t === null;
}

// ---------------------------------------------------------------------------------------------
// Python: which stream an operation is queued on.

/** Names that conventionally hold a stream (`stream`, `s1`, `s_copy`, `self.compute_stream`, `streams[i]`). */
const PY_STREAM_NAME = /(^|[._])(streams?|strm)(\[.*\])?$|^(self\.)?_?(s|strm|stream)(\d+|_\w+)?(\[.*\])?$|(^|[._])(stream|strm)_\w+$/i;
const PY_STREAM_CALL = /(^|\.)(Stream|ExternalStream|from_external|get_current_stream)$/;

/**
 * Priority argument of a Python stream creation: `priority=` (CuPy `Stream`), else the positional slot:
 * CuPy `Stream(null, non_blocking, ptds, priority)`, cuda-python / CuPy runtime
 * `cudaStreamCreateWithPriority(flags, priority)` (the stream is returned, not passed).
 */
function pyStreamPriority(call: SyntaxNode): SyntaxNode | null {
  const { positional, keywords } = pyArgs(call);
  const kw = keywords.get('priority');
  if (kw) return kw;
  const name = lastName(calleePath(call.childForFieldName('function'))) ?? '';
  if (/^(cudaStreamCreateWithPriority|cuStreamCreateWithPriority|streamCreateWithPriority)$/.test(name)) return positional[1] ?? null;
  if (name === 'Stream') return positional[3] ?? null;
  return null;
}

/** The name a call's result is bound to: `s = f()`, `err, s = f()` (cuda-python returns `(err, value)`), `with f() as s:`. */
export function pyBoundName(call: SyntaxNode): string | null {
  const parent = call.parent;
  if (parent?.type === 'assignment' && parent.childForFieldName('right')?.id === call.id) {
    const left = parent.childForFieldName('left');
    if (!left) return null;
    if (left.type === 'pattern_list' || left.type === 'tuple_pattern') {
      const last = left.namedChildren[left.namedChildren.length - 1];
      return last && (last.type === 'identifier' || last.type === 'attribute') ? last.text : null;
    }
    return left.type === 'identifier' || left.type === 'attribute' || left.type === 'subscript' ? left.text : null;
  }
  if (parent?.type === 'as_pattern') return parent.childForFieldName('alias')?.namedChildren[0]?.text ?? null;
  return null;
}

/** A Python expression that denotes a stream object. */
export function pyIsStreamExpr(e: SyntaxNode, streamNames: ReadonlySet<string>): boolean {
  const u = unparen(e);
  if (!u) return false;
  if (streamNames.has(u.text)) return true;
  if (u.type === 'call') return PY_STREAM_CALL.test(calleePath(u.childForFieldName('function')) ?? '');
  if (/(^|\.)Stream\.(null|ptds)$/.test(u.text)) return true;
  return (u.type === 'identifier' || u.type === 'attribute' || u.type === 'subscript') && PY_STREAM_NAME.test(u.text);
}

/** The stream object text a stream expression refers to: `s.ptr`, `int(s)`, `s.handle` → `s`; null for the legacy default stream. */
export function pyStreamOf(text: string, at: SyntaxNode, streamNames: ReadonlySet<string>): string | null {
  let t = text.trim();
  for (;;) {
    const m = /^(?:int|getattr)\((.*)\)$/.exec(t) ?? /^(.*)\.(?:ptr|handle)$/.exec(t);
    if (!m) break;
    t = m[1].trim();
  }
  if (/get_current_stream\(\s*\)$/.test(t)) return pyContextStream(at, streamNames);
  if (/(^|\.)Stream\.ptds$/.test(t)) return 'ptds';
  return NULL_STREAM.test(t) ? null : t;
}

/** Items of a `with` statement (the context expressions; `with X as y` yields `X`). */
export function pyWithItems(w: SyntaxNode): SyntaxNode[] {
  const clause = w.namedChildren.find((c) => c.type === 'with_clause');
  return (clause?.namedChildren ?? [])
    .filter((c) => c.type === 'with_item')
    .map((i) => {
      const v = i.childForFieldName('value') ?? i.namedChildren[0];
      return v?.type === 'as_pattern' ? v.namedChildren[0] : v;
    })
    .filter((v): v is SyntaxNode => !!v);
}

/**
 * The stream CuPy's current stream is at `n`: the innermost `with <stream>:` around it in its function,
 * else the stream of the last `<stream>.use()` before it in the function, else null (the legacy default
 * stream, unless a caller made another stream current).
 */
export function pyContextStream(n: SyntaxNode, streamNames: ReadonlySet<string>): string | null {
  let fn: SyntaxNode | null = null;
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'lambda') {
      fn = p;
      break;
    }
    if (p.type !== 'with_statement' || contains(pyWithItems(p)[0] ?? p, n)) continue;
    for (const item of pyWithItems(p)) {
      if (!pyIsStreamExpr(item, streamNames)) continue;
      const alias = item.parent?.type === 'as_pattern' ? item.parent.childForFieldName('alias')?.text : undefined;
      return alias && item.type === 'call' && /(^|\.)Stream$/.test(calleePath(item.childForFieldName('function')) ?? '') ? alias : pyStreamOf(item.text, p, streamNames);
    }
  }
  let last: SyntaxNode | null = null;
  for (const obj of useCallsIn(fn ?? n.tree.rootNode)) {
    if (obj.startIndex >= n.startIndex) break;
    if (pyIsStreamExpr(obj, streamNames)) last = obj;
  }
  return last ? pyStreamOf(last.text, last, streamNames) : null;
}

// Receivers of `X.use()` calls per function, per tree (most functions have none; this is asked for every operation).
const useCache = new WeakMap<object, Map<number, SyntaxNode[]>>();
function useCallsIn(scope: SyntaxNode): SyntaxNode[] {
  let perTree = useCache.get(scope.tree);
  if (!perTree) useCache.set(scope.tree, (perTree = new Map()));
  let list = perTree.get(scope.id);
  if (!list) {
    list = [];
    if (scope.text.includes('.use(')) {
      for (const c of scope.descendantsOfType('call')) {
        const f = c.childForFieldName('function');
        if (f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'use') list.push(f.childForFieldName('object')!);
      }
    }
    perTree.set(scope.id, list);
  }
  return list;
}

/** Loop whose condition is (or contains) `n`, so the host spins on it. */
function pollingLoop(n: SyntaxNode): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'while_statement' || p.type === 'do_statement') {
      const cond = p.childForFieldName('condition');
      return cond && contains(cond, n) ? p : null;
    }
    if (p.type.endsWith('statement') || p.type === 'block' || p.type === 'compound_statement') return null;
  }
  return null;
}

/** Base host buffer of a copy endpoint: `h.ctypes.data`, `h[a:b]`, `np.asarray(h)` → `h`; `self.h_buf.ctypes.data` → `self.h_buf`. */
export function pyBufferBase(e: SyntaxNode | null | undefined): SyntaxNode | null {
  let u = unparen(e);
  while (u) {
    if (u.type === 'call') {
      const f = u.childForFieldName('function');
      if (f?.type === 'attribute' && /^(data_as|view|reshape|ravel)$/.test(f.childForFieldName('attribute')?.text ?? '')) u = unparen(f.childForFieldName('object'));
      else if (f?.type === 'identifier' && f.text === 'int') u = unparen(pyArgs(u).positional[0]);
      else return null;
    } else if (u.type === 'subscript') u = unparen(u.childForFieldName('value'));
    else if (u.type === 'attribute' && /^(ctypes|data|ptr|T)$/.test(u.childForFieldName('attribute')?.text ?? '')) u = unparen(u.childForFieldName('object'));
    else break;
  }
  return u && (u.type === 'identifier' || u.type === 'attribute') ? u : null;
}

function pyAsyncD2H(call: SyntaxNode, m: PyModel, vocab: ResolvedConfig['vocab'], streamNames: ReadonlySet<string>): AsyncD2H | null {
  const fn = call.childForFieldName('function');
  const tail = fn?.type === 'attribute' ? (fn.childForFieldName('attribute')?.text ?? '') : (fn?.text ?? '');
  if (!/async|Async|^get$|asnumpy/.test(tail)) return null;
  const path = calleePath(fn);
  const name = lastName(path) ?? tail;
  const { positional, keywords } = pyArgs(call);
  const mk = (hostExpr: SyntaxNode | null | undefined, streamExpr: SyntaxNode | null | undefined): AsyncD2H | null => {
    const hostNode = hostExpr ? pyBufferBase(hostExpr) : null;
    const host = hostNode?.text ?? pyBoundName(call);
    if (!host) return null;
    return { node: call, host, hostNode, stream: streamExpr ? pyStreamOf(streamExpr.text, call, streamNames) : pyContextStream(call, streamNames), streamNode: streamExpr ?? null };
  };
  const hostKw = keywords.get('out') ?? keywords.get('dst') ?? keywords.get('host') ?? keywords.get('host_out');
  if (matchesVocab(path, vocab.d2h_async_calls)) {
    if (/DtoH/.test(name)) return mk(positional[0], keywords.get('hStream') ?? positional[3]);
    // MemoryPointer.copy_to_host_async(mem, size, stream=None)
    if (/copy_to_host_async$/.test(name)) return mk(positional[0], keywords.get('stream') ?? positional[2]);
    // runtime.copy_device_to_host_async(d_array, stream, h_buf)
    return mk(hostKw ?? positional[2], keywords.get('stream') ?? positional[1]);
  }
  if (matchesVocab(path, vocab.memcpy_calls) && /Async$/.test(name)) {
    const kind = keywords.get('kind') ?? positional[3];
    // cupy.cuda.runtime.memcpyDeviceToHost == cudaMemcpyDeviceToHost == 2
    if (kind && (/DeviceToHost|DtoH/.test(kind.text) || kind.text === '2')) return mk(positional[0], keywords.get('stream') ?? positional[4]);
    return null;
  }
  const blocking = keywords.get('blocking');
  if (!blocking || blocking.text !== 'False') return null;
  // CuPy >= 13: `d.get(stream=s, out=h, blocking=False)`, `cp.asnumpy(d, stream=s, out=h, blocking=False)`.
  if (fn?.type === 'attribute' && name === 'get' && m.isDevice(fn.childForFieldName('object'))) return mk(hostKw, keywords.get('stream') ?? positional[0]);
  if (/(^|\.)asnumpy$/.test(path ?? '') && m.isDevice(positional[0])) return mk(hostKw, keywords.get('stream') ?? positional[1]);
  return null;
}

// ---------------------------------------------------------------------------------------------
// C++

const CPP_CAST_CALL = /^(static_cast|reinterpret_cast|const_cast|thrust::raw_pointer_cast|raw_pointer_cast|std::addressof)$/;

/** Base buffer of a pointer expression: `(void*)h`, `&h[0]`, `h + off`, `h.data()`, `static_cast<void*>(h)` → `h`; `buf.host` stays. */
export function cppBufferBase(e: SyntaxNode | null | undefined): SyntaxNode | null {
  let u: SyntaxNode | null = e ?? null;
  while (u) {
    if (u.type === 'parenthesized_expression') u = u.namedChildren[0] ?? null;
    else if (u.type === 'cast_expression') u = u.childForFieldName('value');
    else if (u.type === 'pointer_expression') u = u.childForFieldName('argument');
    else if (u.type === 'subscript_expression') u = u.childForFieldName('argument');
    else if (u.type === 'binary_expression' && /^[+-]$/.test(u.childForFieldName('operator')?.type ?? '')) u = u.childForFieldName('left');
    else if (u.type === 'call_expression') {
      const f = u.childForFieldName('function');
      const path = calleePath(f) ?? '';
      const args = u.childForFieldName('arguments')?.namedChildren ?? [];
      if (CPP_CAST_CALL.test(path)) u = args[0] ?? null;
      else if (f?.type === 'field_expression' && /^(data|get|begin)$/.test(f.childForFieldName('field')?.text ?? '')) u = f.childForFieldName('argument');
      else return null;
    } else break;
  }
  return u && (u.type === 'identifier' || u.type === 'field_expression' || u.type === 'qualified_identifier') ? u : null;
}

function cppAsyncD2H(call: SyntaxNode, name: string, args: SyntaxNode[], streamAt: number): AsyncD2H | null {
  let toHost = false;
  if (name === 'cuMemcpyDtoHAsync') toHost = true;
  else if (/^cudaMemcpy(2D)?(FromSymbol|FromArray)?Async$|^cudaMemcpy2DFromArrayAsync$/.test(name)) {
    toHost = args.some((a) => /\bcudaMemcpyDeviceToHost\b/.test(a.text));
  }
  if (!toHost) return null;
  const hostNode = cppBufferBase(args[0]);
  if (!hostNode) return null;
  const streamNode = args[streamAt] ?? null;
  return { node: call, host: hostNode.text.replace(/\s+/g, ''), hostNode, stream: streamText(streamNode), streamNode };
}

/**
 * CUDA host code: the one stream every stream-ordered operation of host function `fn` runs on
 * (launches, `*Async` copies and memsets, `cudaMallocAsync`/`cudaFreeAsync`). Null when there are
 * none, several, or some run on the legacy default stream: then moving a blocking call onto "the"
 * stream could reorder it against work on another stream.
 */
export function soleStreamOf(facts: StreamFacts, m: CudaModel, fn: SyntaxNode): string | null {
  let byFn = usesByFunction.get(facts);
  if (!byFn) {
    usesByFunction.set(facts, (byFn = new Map()));
    for (const u of facts.uses) {
      const f = m.functionOf(u.node)?.node.id;
      if (f === undefined) continue;
      const list = byFn.get(f) ?? [];
      list.push(u);
      byFn.set(f, list);
    }
  }
  const streams = new Set<string | null>();
  for (const u of byFn.get(fn.id) ?? []) streams.add(u.stream === null ? null : u.stream.replace(/\s+/g, ''));
  if (streams.size !== 1 || streams.has(null)) return null;
  return [...streams][0];
}

const usesByFunction = new WeakMap<StreamFacts, Map<number, StreamUse[]>>();
const opsByFunction = new WeakMap<CudaModel, Map<number, { launches: CudaModel['launches']; calls: CudaModel['calls'] }>>();
function opsOf(m: CudaModel, fn: SyntaxNode): { launches: CudaModel['launches']; calls: CudaModel['calls'] } {
  let byFn = opsByFunction.get(m);
  if (!byFn) {
    opsByFunction.set(m, (byFn = new Map()));
    const slot = (n: SyntaxNode) => {
      const f = m.functionOf(n)?.node.id;
      if (f === undefined) return null;
      let e = byFn!.get(f);
      if (!e) byFn!.set(f, (e = { launches: [], calls: [] }));
      return e;
    };
    for (const l of m.launches) slot(l.node)?.launches.push(l);
    for (const c of m.calls) slot(c.node)?.calls.push(c);
  }
  return byFn.get(fn.id) ?? { launches: [], calls: [] };
}

const CASTS = /^(static_cast|reinterpret_cast|const_cast|dynamic_cast|thrust::raw_pointer_cast|raw_pointer_cast|std::addressof|sizeof)$/;

/**
 * CUDA host code: every launch and API call of `fn` that takes buffer `name` (other than the calls
 * in `except`) also takes `stream` (as its launch stream, an argument, or a `par.on(stream)`
 * policy), and at least one does. Casts are looked through.
 */
export function bufferUsedOnlyOnStream(m: CudaModel, fn: SyntaxNode, name: string, stream: string, except: ReadonlySet<number> | readonly SyntaxNode[]): boolean {
  // The excepted calls, as nodes (callers pass the nodes, or the ids of calls in `m.calls`).
  const exceptNodes = Array.isArray(except) ? (except as readonly SyntaxNode[]) : m.calls.filter((c) => (except as ReadonlySet<number>).has(c.node.id)).map((c) => c.node);
  const exceptIds = new Set(exceptNodes.map((e) => e.id));
  // `CUDA_CHECK(cudaMalloc(&p, n))`: a mention inside an excepted call belongs to it, not to the wrapper.
  const mentions = (n: SyntaxNode) =>
    [n, ...n.descendantsOfType('identifier')].some((i) => i.type === 'identifier' && i.text === name && !exceptNodes.some((e) => e.startIndex <= i.startIndex && i.endIndex <= e.endIndex));
  const onStream = (args: SyntaxNode[]) => args.some((a) => a.text.replace(/\s+/g, '') === stream || new RegExp(`\\.on\\(\\s*${stream.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*\\)`).test(a.text));
  const inExcepted = (n: SyntaxNode) => exceptNodes.some((e) => e.startIndex <= n.startIndex && n.endIndex <= e.endIndex);
  const ops = opsOf(m, fn);
  let used = 0;
  for (const l of ops.launches) {
    if (!l.args.some(mentions)) continue;
    if ((streamText(l.stream) ?? '').replace(/\s+/g, '') !== stream) return false;
    used++;
  }
  const launchIds = new Set(ops.launches.map((l) => l.node.id));
  for (const c of ops.calls) {
    if (launchIds.has(c.node.id) || exceptIds.has(c.node.id) || CASTS.test(c.path)) continue;
    if (!c.args.some(mentions) || inExcepted(c.node)) continue;
    // A call nested in a launch's arguments is part of that launch.
    if (ops.launches.some((l) => l.node.id !== c.node.id && l.node.startIndex <= c.node.startIndex && c.node.endIndex <= l.node.endIndex)) continue;
    if (!onStream(c.args)) return false;
    used++;
  }
  return used > 0;
}

// ---------------------------------------------------------------------------------------------
// HOST_READ (catalog §1.4): host code reading a buffer's contents.

export type HostAccess = 'read' | 'write' | 'rebind' | 'device' | 'none';

const PY_NO_READ_CALLS = new Set(['len', 'id', 'isinstance', 'type', 'hasattr', 'callable', 'weakref.ref', 'ref']);
// Storing the buffer in a container hands it on for later; nothing is read yet.
const STORE_METHODS = new Set(['append', 'extend', 'put', 'put_nowait', 'insert', 'add', 'appendleft', 'setdefault', 'submit']);
const PY_ARRAY_METADATA = new Set(['shape', 'dtype', 'size', 'nbytes', 'ndim', 'strides', 'itemsize', 'ctypes', 'flags', 'base', '__array_interface__', '__cuda_array_interface__']);

/** The normalized key of a host buffer expression: `this->h_` and `h_` are the same buffer. */
export function bufferKey(text: string): string {
  return text.replace(/\s+/g, '').replace(/^this->/, '').replace(/^self\./, 'self.');
}

/** Occurrences of buffer `key` inside `scope` (identifiers, `self.x` / `buf.host` / `this->h_` expressions). */
export function bufferOccurrences(scope: SyntaxNode, key: string): SyntaxNode[] {
  const dotted = key.includes('.') || key.includes('->');
  const types = dotted ? ['attribute', 'field_expression'] : ['identifier'];
  return scope.descendantsOfType(types).filter((n) => bufferKey(n.text) === key && !(n.parent?.type === 'attribute' && n.parent.childForFieldName('attribute')?.id === n.id));
}

/**
 * How the Python host code at occurrence `occ` of a buffer uses it: reads its contents (subscript,
 * iteration, arithmetic, `print`, passing it to host code), writes it (`h[0] = 0`, `out=h`), rebinds
 * the name, hands it to a stream-ordered GPU call (`device`), or touches only metadata (`none`).
 */
export function pyHostAccess(occ: SyntaxNode, m: PyModel, vocab: ResolvedConfig['vocab']): HostAccess {
  let cur = occ;
  let p = occ.parent;
  // Views of the buffer read the same memory: `h[1:]`, `h.T`, `h.reshape(...)` are the buffer too.
  while (p) {
    // `(stream, h)` / `[h_a, h_b]`: the container is used, not yet the buffer's contents.
    if (p.type === 'parenthesized_expression' || p.type === 'tuple' || p.type === 'list') {
      cur = p;
      p = p.parent;
      continue;
    }
    if (p.type === 'attribute' && p.childForFieldName('object')?.id === cur.id) {
      const attr = p.childForFieldName('attribute')?.text ?? '';
      if (PY_ARRAY_METADATA.has(attr)) return 'none';
      const call = p.parent?.type === 'call' && p.parent.childForFieldName('function')?.id === p.id ? p.parent : null;
      if (!call) {
        if (attr === 'T' || attr === 'real' || attr === 'imag' || attr === 'flat') {
          cur = p;
          p = p.parent;
          continue;
        }
        return 'read';
      }
      if (attr === 'fill') return 'write';
      if (/^(view|reshape|ravel|transpose|squeeze)$/.test(attr)) {
        cur = call;
        p = call.parent;
        continue;
      }
      return 'read';
    }
    if (p.type === 'subscript' && p.childForFieldName('value')?.id === cur.id) {
      const q = p.parent;
      if (q?.type === 'assignment' && q.childForFieldName('left')?.id === p.id) return 'write';
      if (q?.type === 'pattern_list' && q.parent?.type === 'assignment' && q.parent.childForFieldName('left')?.id === q.id) return 'write';
      if (q?.type === 'subscript' || q?.type === 'attribute') {
        cur = p;
        p = q;
        continue;
      }
      cur = p;
      p = q;
      // `h[0]` as an argument or operand reads the element; fall through with the element as the occurrence.
      if (!p || ['argument_list', 'keyword_argument', 'return_statement', 'expression_list'].includes(p.type)) return 'read';
      break;
    }
    break;
  }
  if (!p) return 'none';
  const isElement = cur.type === 'subscript';
  switch (p.type) {
    case 'assignment':
      if (p.childForFieldName('left')?.id === cur.id) return 'rebind';
      return isElement ? 'read' : 'none'; // `g = h` aliases the buffer; the alias is not followed
    case 'augmented_assignment':
      return 'read';
    case 'pattern_list':
    case 'tuple_pattern':
      return p.parent?.type === 'assignment' && p.parent.childForFieldName('left')?.id === p.id ? 'rebind' : 'read';
    case 'for_statement':
    case 'for_in_clause': {
      const left = p.childForFieldName('left');
      return left && contains(left, cur) ? 'rebind' : 'read';
    }
    case 'return_statement':
    case 'yield':
    case 'delete_statement':
    case 'global_statement':
    case 'nonlocal_statement':
      return 'none';
    case 'comparison_operator':
      return p.children.some((c) => c.type === 'is' || c.type === 'is not') ? 'none' : 'read';
    case 'keyword_argument': {
      if (p.childForFieldName('name')?.text === 'out') return 'write';
      const call = p.parent?.parent;
      return call?.type === 'call' ? pyCallAccess(call, cur, m, vocab) : 'read';
    }
    case 'argument_list': {
      const call = p.parent;
      return call?.type === 'call' ? pyCallAccess(call, cur, m, vocab) : 'read';
    }
    default:
      return 'read';
  }
}

function pyCallAccess(call: SyntaxNode, arg: SyntaxNode, m: PyModel, vocab: ResolvedConfig['vocab']): HostAccess {
  const fn = call.childForFieldName('function');
  const path = calleePath(fn) ?? '';
  const name = lastName(path) ?? '';
  if (PY_NO_READ_CALLS.has(path)) return 'none';
  if (fn?.type === 'attribute' && STORE_METHODS.has(name)) return 'none';
  if (/^(np|numpy)\.copyto$/.test(path) && pyArgs(call).positional[0]?.id === arg.id) return 'write';
  const streamOrdered = [vocab.launch_calls, vocab.d2h_async_calls, vocab.h2d_calls, vocab.memcpy_calls].some((v) => matchesVocab(path, v)) || /Async$|_async$/.test(name);
  if (streamOrdered || m.isGpuOpNode(call)) return 'device';
  return 'read';
}

const CPP_NO_READ_METHODS = /^(size|capacity|empty|data|get|resize|reserve|clear|length|max_size|shrink_to_fit|swap)$/;
const CPP_WRITE_CALLS = /^(memset|std::memset|std::fill|std::fill_n|fill|fill_n)$/;

/** How C++ host code at occurrence `occ` of a host buffer uses it (see `pyHostAccess`). */
export function cppHostAccess(occ: SyntaxNode): HostAccess {
  let cur = occ;
  let p = occ.parent;
  while (p && (p.type === 'parenthesized_expression' || p.type === 'cast_expression' || (p.type === 'binary_expression' && /^[+-]$/.test(p.childForFieldName('operator')?.type ?? '') && p.childForFieldName('left')?.id === cur.id))) {
    cur = p;
    p = p.parent;
  }
  if (!p) return 'none';
  // `h[i]`, `*h`, `h->x`: an element access; a plain `=` to it is a write, anything else reads it.
  const element =
    (p.type === 'subscript_expression' && p.childForFieldName('argument')?.id === cur.id) ||
    (p.type === 'pointer_expression' && p.child(0)?.type === '*') ||
    (p.type === 'field_expression' && p.childForFieldName('argument')?.id === cur.id && p.text.slice(cur.endIndex - p.startIndex).trimStart().startsWith('->') && !(p.parent?.type === 'call_expression' && p.parent.childForFieldName('function')?.id === p.id));
  if (element) {
    const q = p.parent;
    if (q?.type === 'pointer_expression' && q.child(0)?.type === '&') return 'none';
    if (q?.type === 'assignment_expression' && q.childForFieldName('left')?.id === p.id) return q.childForFieldName('operator')?.type === '=' ? 'write' : 'read';
    return 'read';
  }
  if (p.type === 'pointer_expression') return 'none'; // `&h`
  if (p.type === 'field_expression' && p.childForFieldName('argument')?.id === cur.id) {
    const call = p.parent?.type === 'call_expression' && p.parent.childForFieldName('function')?.id === p.id ? p.parent : null;
    const field = p.childForFieldName('field')?.text ?? '';
    if (call && CPP_NO_READ_METHODS.test(field)) return field === 'data' || field === 'get' ? cppHostAccess(call) : 'none';
    if (call && /^(assign|fill)$/.test(field)) return 'write';
    return 'read';
  }
  switch (p.type) {
    case 'assignment_expression':
      if (p.childForFieldName('left')?.id === cur.id) return 'rebind';
      return 'none';
    case 'init_declarator': {
      const decl = p.childForFieldName('declarator');
      // `float* p = h;` / `auto& r = hv;` alias the buffer; `auto copy = hv;` reads it.
      return decl && (decl.type === 'pointer_declarator' || decl.type === 'reference_declarator') ? 'none' : 'read';
    }
    case 'for_range_loop':
      return p.childForFieldName('right')?.id === cur.id ? 'read' : 'none';
    case 'return_statement':
    case 'sizeof_expression':
    case 'delete_expression':
    case 'condition_clause':
    case 'unary_expression':
      return 'none';
    case 'binary_expression':
      return /^(==|!=|&&|\|\|)$/.test(p.childForFieldName('operator')?.type ?? '') ? 'none' : 'read';
    case 'argument_list': {
      const call = p.parent;
      if (call?.type !== 'call_expression') return 'read';
      if (call.namedChildren.some((c) => c.type === 'kernel_call_syntax')) return 'device';
      const path = calleePath(call.childForFieldName('function')) ?? '';
      const name = lastName(path) ?? path;
      if (/^(cuda|cu[A-Z]|nvtx|cub::|thrust::cuda)/.test(path) || /^(free|cudaFreeHost|std::free|operator delete)$/.test(name)) return 'device';
      const first = p.namedChildren[0]?.id === cur.id;
      if (CPP_WRITE_CALLS.test(path) && first) return 'write';
      if (/^(memcpy|std::memcpy|memmove|std::copy|std::copy_n)$/.test(path)) return first && /memcpy|memmove/.test(path) ? 'write' : 'read';
      if (CPP_CAST_CALL.test(path)) return cppHostAccess(call);
      // An all-caps wrapper (`CUDA_CHECK(cudaFree(h))`) passes the call through.
      return 'read';
    }
    default:
      return 'read';
  }
}

// ---------------------------------------------------------------------------------------------
// Host synchronization between two points.

/** Text of a stream or event for comparison: whitespace dropped, `this->` and subscripts' index kept. */
export function streamKey(t: string | null): string | null {
  return t === null ? null : t.replace(/\s+/g, '').replace(/^this->/, '');
}

const eventBase = (t: string) => streamKey(t)!.replace(/\[.*\]$/, '');

/**
 * Calls of functions defined in the same source whose body synchronizes unconditionally
 * (`def _sync(self): self.stream.synchronize()`, `void wait_all() { cudaDeviceSynchronize(); }`):
 * calling one is a host sync too.
 */
const helperMemo = new WeakMap<StreamFacts, SyntaxNode[]>();
/** The config and path stream facts were computed under, so helper lookups can consult the project index. */
const factsContext = new WeakMap<StreamFacts, { config: ResolvedConfig; path: string }>();
export function syncHelperCalls(root: SyntaxNode, facts: StreamFacts): SyntaxNode[] {
  const hit = helperMemo.get(facts);
  if (hit) return hit;
  const ctx = factsContext.get(facts);
  const found = findSyncHelperCalls(root, facts, ctx?.config, ctx?.path);
  helperMemo.set(facts, found);
  return found;
}

/**
 * Functions of the source whose body synchronizes unconditionally, with the sync that makes them do so.
 * The project index (src/index/) stores the same answer for the files a change imports or includes.
 */
export function syncingFunctions(root: SyntaxNode, facts: StreamFacts): Array<{ fn: SyntaxNode; name: string; sync: SyntaxNode }> {
  if (!facts.syncs.length && !facts.polls.length) return [];
  const python = root.type === 'module';
  const out: Array<{ fn: SyntaxNode; name: string; sync: SyntaxNode }> = [];
  for (const fn of root.descendantsOfType('function_definition')) {
    const body = fn.childForFieldName('body');
    if (!body) continue;
    const inner = [...facts.syncs, ...facts.polls].filter((s) => s.via !== 'cccl-default' && hostFunctionOf(s.node)?.id === fn.id && unconditionalWithin(s.node, body));
    if (!inner.length) continue;
    let d = python ? null : fn.childForFieldName('declarator');
    while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
    const name = python ? fn.childForFieldName('name')?.text : d?.childForFieldName('declarator')?.text.split('::').pop();
    if (name) out.push({ fn, name, sync: inner[0].node });
  }
  return out;
}

function findSyncHelperCalls(root: SyntaxNode, facts: StreamFacts, config?: ResolvedConfig, path?: string): SyntaxNode[] {
  const python = root.type === 'module';
  const names = new Set(syncingFunctions(root, facts).map((f) => f.name));
  // Project index: a call of an imported / included function that synchronizes is a host sync too.
  const indexed = config && path && hasProjectFacts(config, path);
  if (!names.size && !indexed) return [];
  return root.descendantsOfType(python ? 'call' : 'call_expression').filter((c) => {
    const f = c.childForFieldName('function');
    const name = f?.type === 'identifier' ? f.text : f?.type === 'attribute' ? f.childForFieldName('attribute')?.text : f?.type === 'field_expression' ? f.childForFieldName('field')?.text : undefined;
    if (!!name && names.has(name)) return true;
    if (!indexed || !f) return false;
    const facts = python ? pyFunctionFacts(config, path, calleePath(f)) : f.type === 'identifier' || f.type === 'qualified_identifier' || f.type === 'template_function' ? includedFunction(config, path, (f.type === 'template_function' ? f.childForFieldName('name')?.text : f.text) ?? '') : null;
    return !!facts?.syncs;
  });
}

/**
 * The first host synchronization that runs on every path from `a` to `b` (same function) and
 * guarantees that work queued on `stream` before it has finished: a device-wide sync, a sync of that
 * stream, a sync of or spin on an event recorded on that stream after `a`, or one of `extra` (helper
 * calls, implicit syncs the caller knows about). `norm` maps a sync's target text to a stream.
 */
export function hostSyncBetween(
  facts: StreamFacts,
  a: SyntaxNode,
  b: SyntaxNode,
  stream: string | null,
  norm: (text: string, at: SyntaxNode) => string | null,
  extra: readonly SyntaxNode[] = [],
): SyntaxNode | null {
  const key = streamKey(stream);
  const covers = (s: SyncPoint): boolean => {
    if (s.scope === 'device') return true;
    if (s.scope === 'stream') return s.target !== null ? streamKey(norm(s.target, s.node)) === key : key === null;
    if (!s.target) return false;
    const ev = eventBase(s.target);
    // The event must be recorded on the stream after `a` (and before the sync) to cover `a`'s work.
    return facts.eventRecords.some((r) => eventBase(r.event) === ev && streamKey(r.stream) === key && r.node.startIndex >= a.endIndex && r.node.endIndex <= s.node.startIndex) ||
      facts.eventRecords.some((r) => eventBase(r.event) === ev && streamKey(r.stream) === key && onEveryPath(r.node, a, s.node));
  };
  const candidates: SyntaxNode[] = [...facts.syncs, ...facts.polls].filter(covers).map((s) => s.node).concat(extra);
  candidates.sort((x, y) => x.startIndex - y.startIndex);
  return candidates.find((s) => onEveryPath(s, a, b)) ?? null;
}

/**
 * The declaration of the stream `name` as seen from `at`: created in the same function, else in the
 * same class (members: `self.stream`, `stream_`), else at module scope. Names are per function, so a
 * `s` created non-blocking in one function says nothing about a `s` parameter of another.
 */
export function streamDeclAt(facts: StreamFacts, name: string | null, at: SyntaxNode): StreamDecl | undefined {
  if (name === null) return undefined;
  const key = streamKey(name);
  const fn = hostFunctionOf(at);
  const same = facts.streams.filter((d) => streamKey(d.name) === key);
  const local = same.find((d) => hostFunctionOf(d.node)?.id === fn?.id && fn !== null);
  if (local) return local;
  const cls = enclosingClass(at);
  const member = cls && same.find((d) => enclosingClass(d.node)?.id === cls.id);
  if (member) return member;
  return same.find((d) => hostFunctionOf(d.node) === null);
}

const CONTAINER_STORES = /^(append|extend|insert|add|put|put_nowait|appendleft|setdefault|push_back|emplace_back|push|emplace)$/;

/**
 * A stream handle at `occ` is stored into a container, so it outlives the statement (and a loop
 * iteration): `pool.append(s)`, `streams[i] = s`, `v.push_back(s)`, `jobs.append((s, d_out))`.
 */
export function storedInContainer(occ: SyntaxNode): boolean {
  let cur = occ;
  for (let p = occ.parent; p; cur = p, p = p.parent) {
    if (['tuple', 'list', 'dictionary', 'pair', 'parenthesized_expression', 'keyword_argument', 'initializer_list'].includes(p.type)) continue;
    if (p.type === 'argument_list') {
      const fn = p.parent?.childForFieldName('function');
      const method = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : fn?.type === 'field_expression' ? fn.childForFieldName('field')?.text : undefined;
      return !!method && CONTAINER_STORES.test(method);
    }
    if (p.type === 'assignment' || p.type === 'assignment_expression') {
      const left = p.childForFieldName('left');
      return p.childForFieldName('right')?.id === cur.id && (left?.type === 'subscript' || left?.type === 'subscript_expression');
    }
    return false;
  }
  return false;
}

/** How messages name a stream (null = the legacy default stream). */
export function streamLabel(s: string | null): string {
  return s === null ? 'the default stream' : `stream \`${s}\``;
}

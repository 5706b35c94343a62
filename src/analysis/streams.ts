import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../engine/types.js';
import { cudaModel } from './cuda.js';
import { pythonModel } from './python.js';
import { calleePath, lastName, matchesVocab, pyArgs, unparen } from './syntax.js';

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

export interface StreamUse {
  node: SyntaxNode;
  /** Stream text passed to the operation; null = default (legacy null) stream. */
  stream: string | null;
  kind: 'launch' | 'copy' | 'memset' | 'alloc' | 'free' | 'cccl' | 'other';
}

export interface StreamFacts {
  syncs: SyncPoint[];
  streams: StreamDecl[];
  uses: StreamUse[];
  /** `cudaEventRecord(e, s)` / `e.record(s)` and `cudaStreamWaitEvent(s, e)` / `s.wait_event(e)`. */
  eventRecords: Array<{ node: SyntaxNode; event: string; stream: string | null }>;
  eventWaits: Array<{ node: SyntaxNode; stream: string | null; event: string }>;
}

const PY_STREAM_CTORS = /(^|\.)(Stream|ExternalStream|from_external|cudaStreamCreate\w*|cuStreamCreate\w*|create_stream|stream)$/;
const NULL_STREAM = /^(0|nullptr|NULL|cudaStreamLegacy|cudaStreamPerThread|cp\.cuda\.Stream\.null|cupy\.cuda\.Stream\.null|Stream\.null)$/;

export const streamFacts: Analysis<StreamFacts> = {
  name: 'stream-facts',
  compute(source, config) {
    const facts: StreamFacts = { syncs: [], streams: [], uses: [], eventRecords: [], eventWaits: [] };
    const vocab = config.vocab;
    if (source.language === 'python') {
      const m = pythonModel.compute(source, config);
      for (const call of source.root.descendantsOfType('call')) {
        const fn = call.childForFieldName('function');
        const path = calleePath(fn);
        const name = lastName(path) ?? '';
        const args = pyArgs(call);
        if (name === 'synchronize' || matchesVocab(path, vocab.sync_calls)) {
          const obj = fn?.type === 'attribute' ? unparen(fn.childForFieldName('object')) : null;
          const device = /deviceSynchronize|cudaDeviceSynchronize|cuCtxSynchronize|torch\.cuda\.synchronize|(^|\.)runtime\.synchronize$|Device\.synchronize$/.test(path ?? '');
          const target = device ? null : name === 'synchronize' ? (obj?.text ?? null) : (args.positional[0]?.text ?? null);
          facts.syncs.push({ node: call, scope: device ? 'device' : /Event/.test(path ?? '') ? 'event' : 'stream', target, via: name === 'synchronize' ? 'method' : 'call' });
          continue;
        }
        if (name && vocab.cccl_calls.includes(name) && m.isGpuOpNode(call)) {
          const sync = args.keywords.get('synchronize');
          // CCCL helpers of 003 §2.3 synchronize unless told not to.
          if (!sync || !/^False$/.test(sync.text)) facts.syncs.push({ node: call, scope: 'device', target: null, via: 'cccl-default' });
          facts.uses.push({ node: call, stream: args.keywords.get('stream')?.text ?? null, kind: 'cccl' });
          continue;
        }
        if (path && PY_STREAM_CTORS.test(path) && /cuda|cupy|cp\.|cudart|driver|runtime/.test(path)) {
          const parent = call.parent;
          const left = parent?.type === 'assignment' ? parent.childForFieldName('left')?.text : undefined;
          if (left) {
            facts.streams.push({
              node: call,
              name: left,
              nonBlocking: /non_blocking\s*=\s*True|cudaStreamNonBlocking/.test(call.text),
              priority: args.keywords.get('priority') ?? null,
              inLoop: m.inLoop(call),
            });
          }
          continue;
        }
        if (name === 'record' && fn?.type === 'attribute') {
          facts.eventRecords.push({ node: call, event: fn.childForFieldName('object')?.text ?? '', stream: args.positional[0]?.text ?? args.keywords.get('stream')?.text ?? null });
        } else if (name === 'wait_event' && fn?.type === 'attribute') {
          facts.eventWaits.push({ node: call, stream: fn.childForFieldName('object')?.text ?? null, event: args.positional[0]?.text ?? '' });
        }
        if (m.isGpuOpNode(call)) {
          facts.uses.push({ node: call, stream: args.keywords.get('stream')?.text ?? null, kind: /launch/.test(path ?? '') ? 'launch' : /copy/.test(path ?? '') ? 'copy' : 'other' });
        }
      }
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
      } else if (n === 'cudaEventRecord' || n === 'cuEventRecord') facts.eventRecords.push({ node: c.node, event: c.args[0]?.text ?? '', stream: streamText(c.args[1] ?? null) });
      else if (n === 'cudaStreamWaitEvent' || n === 'cuStreamWaitEvent') facts.eventWaits.push({ node: c.node, stream: streamText(c.args[0] ?? null), event: c.args[1]?.text ?? '' });
      else if (/^cudaMemcpy\w*Async$/.test(n)) facts.uses.push({ node: c.node, stream: streamText(c.args[n === 'cudaMemcpyAsync' ? 4 : c.args.length - 1] ?? null), kind: 'copy' });
      else if (/^cudaMemset\w*Async$/.test(n)) facts.uses.push({ node: c.node, stream: streamText(c.args[c.args.length - 1] ?? null), kind: 'memset' });
      else if (n === 'cudaMallocAsync') facts.uses.push({ node: c.node, stream: streamText(c.args[2] ?? null), kind: 'alloc' });
      else if (n === 'cudaFreeAsync') facts.uses.push({ node: c.node, stream: streamText(c.args[1] ?? null), kind: 'free' });
    }
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

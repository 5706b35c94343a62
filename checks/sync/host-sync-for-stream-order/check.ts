import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { pythonModel, runsAtImport } from '../../../src/analysis/python.js';
import { cppFlowsTo, cppStatement } from '../../../src/analysis/flow.js';
import { cppHostTouches, cudaOps, fenceMarked, fnFacts, mentionsSyncCall, traceGated, type FnFacts, type Op } from '../../../src/analysis/hostsync.js';
import { isNullStream, pyIsStreamExpr, pyStreamOf, pyWithItems, streamFacts, streamKey, streamLabel, type StreamFacts, type SyncPoint } from '../../../src/analysis/streams.js';
import { calleePath, contains, lastName, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { REDUNDANT_SYNC } from '../../../src/config/costs.js';

const CUDA_FIX =
  'Order the streams on the device: `cudaEventRecord(ev, producer)` after its work and `cudaStreamWaitEvent(consumer, ev, 0)` before the dependent work; the host keeps queuing while both streams run.';
const PY_FIX =
  'Order the streams on the device: `consumer.wait_stream(producer)` (or `ev.record(producer)` + `consumer.wait_event(ev)`; CuPy `consumer.wait_event(ev)`) before the dependent work, instead of blocking the host.';

// Functions that run once to set things up: a wait there costs nothing per step.
const SETUP_FN = /^(__init__|__post_init__|setup\w*|_?init\w*|warm_?up\w*|build\w*|load\w*|create\w*|allocate\w*)$/i;
// Allocation hosts whose memory the host can read directly once the producer finished.
const HOST_VISIBLE_ALLOC = /^(cudaMallocManaged|cudaMallocHost|cudaHostAlloc|cuMemAllocManaged|cuMemAllocHost|cuMemHostAlloc)$/;

// ---------------------------------------------------------------------------------------------
// CUDA C++ host code

function cuda(ctx: CheckContext): void {
  const cm = ctx.get(cudaModel);
  if (cm.testOrBench) return;
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  if (!facts.syncs.some((s) => s.scope === 'stream' || s.scope === 'device')) return;
  const ops = cudaOps(cm, facts.uses, new Set(facts.streams.map((s) => s.name)));
  const cache = new Map<number, FnFacts>();
  for (const s of facts.syncs) {
    if (s.scope !== 'stream' && s.scope !== 'device') continue;
    const f = cm.functionOf(s.node);
    if (!f || !f.isHost || cm.debugGated(s.node) || (f.body && traceGated(s.node, f.body)) || SETUP_FN.test(f.name ?? '')) continue;
    if (fenceMarked(cppStatement(s.node), vocab.sync_fence_markers)) continue;
    const b = ops.find((o) => contains(f.node, o.node) && o.node.startIndex >= s.node.endIndex && cppFlowsTo(s.node, o.node));
    if (!b || !(s.scope === 'stream' ? crossStreamOrder(cm, facts, f.node, s, b, ops) : deviceHandOff(facts, f.node, s, b, ops))) continue;
    let ff = cache.get(f.node.id);
    if (!ff) cache.set(f.node.id, (ff = fnFacts(cm, f.node)));
    // Memory both sides can read (managed, pinned) that the host touches later may hold the synced stream's results.
    const shared = new Set(ff.calls.filter((c) => HOST_VISIBLE_ALLOC.test(c.name)).map((c) => /[A-Za-z_]\w*/.exec(c.args[0]?.text.replace(/^\s*\([^()]*\)\s*/, '') ?? '')?.[0]));
    if (f.node.descendantsOfType('identifier').some((i) => i.startIndex >= s.node.endIndex && shared.has(i.text))) continue;
    // The host touches nothing between the sync and the consumer's work (no read, copy, free, timer, file write).
    if (cppHostTouches(cm, ff, s.node, s.node, b.node, vocab.timing_calls)) continue;
    const from = s.scope === 'stream' ? streamLabel(s.target) : `the whole device (last work on ${streamLabel(lastBefore(ops, f.node, s.node)?.stream ?? null)})`;
    ctx.report({ node: s.node, messageId: 'cuda', data: { code: quote(s.node), from, to: streamLabel(b.stream) }, fix: { description: CUDA_FIX } });
  }
}

/**
 * `cudaStreamSynchronize(a)` whose next stream-ordered operation runs on another named stream `b`,
 * in a function that reads nothing back from `a` (no async device-to-host copy on it) and that puts
 * work on `a`: the host blocks only to start `b`'s work after `a`'s, which an event wait does on the device.
 */
function crossStreamOrder(cm: CudaModel, facts: StreamFacts, fn: SyntaxNode, s: SyncPoint, b: Op, ops: Op[]): boolean {
  const from = streamKey(s.target);
  const to = streamKey(b.stream);
  if (!from || !to || from === to || isNullStream(s.target) || to === 'cudaStreamPerThread') return false;
  if (facts.asyncD2H.some((d) => contains(fn, d.node) && streamKey(d.stream) === from)) return false;
  // Work on the synced stream itself: some op of the function runs on it, it is handed in, or it is a
  // member of an object (`cfg.comm_stream`) that the function hands to a helper before the sync.
  if (ops.some((o) => contains(fn, o.node) && streamKey(o.stream) === from)) return true;
  if (cm.functionOf(fn.childForFieldName('body') ?? fn)?.params.some((p) => p.text.includes(from))) return true;
  const owner = /^(.+?)(\.|->)\w+$/.exec(from)?.[1];
  // Before the sync, or anywhere in a loop around it (the previous iteration's call).
  const loop = cm.loopOf(s.node);
  const before = (c: SyntaxNode) => c.endIndex <= s.node.startIndex || (!!loop && contains(loop, c));
  return !!owner && cm.calls.some((c) => contains(fn, c.node) && before(c.node) && c.args.some((a) => a.text.replace(/\s+/g, '').replace(/^&/, '') === owner));
}

function lastBefore(ops: Op[], fn: SyntaxNode, sync: SyntaxNode): Op | undefined {
  let last: Op | undefined;
  for (const o of ops) if (contains(fn, o.node) && o.node.endIndex <= sync.startIndex && cppFlowsTo(o.node, sync)) last = o;
  return last;
}

/**
 * `cudaDeviceSynchronize()` between work on named stream `a` (the last operation before it) and the next
 * operation, on another named stream `b`, in a function that copies nothing back asynchronously: the whole
 * device drains only so that `b` starts after `a`.
 */
function deviceHandOff(facts: StreamFacts, fn: SyntaxNode, s: SyncPoint, b: Op, ops: Op[]): boolean {
  const a = lastBefore(ops, fn, s.node);
  const from = streamKey(a?.stream ?? null);
  const to = streamKey(b.stream);
  if (!from || !to || from === to || to === 'cudaStreamPerThread' || from === 'cudaStreamPerThread') return false;
  return !facts.asyncD2H.some((d) => contains(fn, d.node));
}

// ---------------------------------------------------------------------------------------------
// Python (PyTorch, CuPy, DeepSpeed-style accelerator streams)

const CURRENT_OR_DEFAULT = /(current_stream|default_stream|get_current_stream)\(\s*\)$|(^|\.)Stream\.null$|^None$/;

function python(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  if (m.testOrBench) return;
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  const names = new Set(facts.streams.map((s) => s.name));

  /** The stream a `with` item makes current: `torch.cuda.stream(X)` / `accel.stream(X)` → X, or a stream object itself. */
  const withStream = (item: SyntaxNode): string | null => {
    const u = unparen(item);
    if (!u) return null;
    if (u.type === 'call' && lastName(calleePath(u.childForFieldName('function'))) === 'stream') {
      const arg = pyArgs(u).positional[0] ?? pyArgs(u).keywords.get('stream');
      return arg && !CURRENT_OR_DEFAULT.test(arg.text) ? arg.text : null;
    }
    if (!pyIsStreamExpr(u, names) || CURRENT_OR_DEFAULT.test(u.text)) return null;
    return pyStreamOf(u.text, u, names);
  };

  for (const s of facts.syncs) {
    if (s.scope === 'event' || s.via === 'cccl-default') continue;
    // `torch.cuda.synchronize()` / `cp.cuda.Device().synchronize()` (device) or `producer.synchronize()` (stream).
    const target = s.scope === 'device' ? null : s.target && !CURRENT_OR_DEFAULT.test(s.target) ? pyStreamOf(s.target, s.node, names) : undefined;
    if (target === undefined || (s.scope === 'stream' && target === null)) continue;
    const scope = m.scopeOf(s.node);
    if (scope.type !== 'function_definition' || runsAtImport(s.node) || SETUP_FN.test(scope.childForFieldName('name')?.text ?? '')) continue;
    if (m.debugGated(s.node) || traceGated(s.node, scope) || m.inCpuFallback(s.node)) continue;
    // The sync is a statement of its own (not `ok = s.synchronize() or ...`).
    const stmt = s.node.parent;
    if (stmt?.type !== 'expression_statement' || stmt.parent?.type !== 'block') continue;
    if (fenceMarked(stmt, vocab.sync_fence_markers)) continue;
    // The consumer: the next statement that does something is `with <other stream>:` holding a call;
    // only stream look-ups (`s = self.reduce_stream`, `s = accel.current_stream()`) may come between.
    let next = stmt.nextNamedSibling;
    while (next && (next.type === 'comment' || (next.type === 'expression_statement' && streamLookup(next)))) next = next.nextNamedSibling;
    if (next?.type !== 'with_statement') continue;
    const consumer = pyWithItems(next).map(withStream).find((x): x is string => !!x);
    if (!consumer || consumer === target) continue;
    const body = next.childForFieldName('body');
    // Work queued there: a call, or tensor arithmetic (`out = x * 2` launches a kernel).
    if (!body || !body.descendantsOfType(['call', 'binary_operator', 'augmented_assignment']).length) continue;
    // Work on the producer before the sync: device-wide, any GPU operation or call earlier in the function;
    // for a stream, the stream is named earlier in the function (queued on, passed along) or handed in.
    const earlier = (n: SyntaxNode) => n.endIndex <= s.node.startIndex && m.scopeOf(n).id === scope.id;
    const work =
      target === null
        ? m.gpuOps.some((o) => earlier(o.node)) || scope.childForFieldName('body')!.descendantsOfType('call').some((c) => earlier(c) && !contains(c, s.node))
        : scope.childForFieldName('body')!.descendantsOfType(['identifier', 'attribute']).some((u) => u.text === target && earlier(u)) || (scope.childForFieldName('parameters')?.text ?? '').includes(target);
    if (!work) continue;
    // Nothing the host reads back after the sync in this function: that read is what the wait would protect.
    if (m.d2h.some((d) => d.node.startIndex >= s.node.endIndex && m.scopeOf(d.node).id === scope.id)) continue;
    ctx.report({
      node: s.node,
      messageId: 'python',
      data: { code: quote(s.node), from: target === null ? 'the whole device' : streamLabel(target), to: streamLabel(consumer) },
      fix: { description: PY_FIX },
    });
  }

  /** `s = self.comm_stream` / `s = accel.current_stream()`: a statement that only fetches a stream. */
  function streamLookup(st: SyntaxNode): boolean {
    const a = st.namedChildren[0];
    if (a?.type !== 'assignment') return false;
    const right = a.childForFieldName('right');
    if (!right) return false;
    const calls = right.type === 'call' ? [right, ...right.descendantsOfType('call').filter((c) => c.id !== right.id)] : right.descendantsOfType('call');
    return calls.every((c) => /stream/i.test(lastName(calleePath(c.childForFieldName('function'))) ?? '') || /^(get_accelerator|torch\.cuda\.current_device)$/.test(calleePath(c.childForFieldName('function')) ?? '')) && /stream/i.test(a.text);
  }
}

export default defineCheck({
  id: 'sync/host-sync-for-stream-order',
  pass: 2,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation:
    'derived from real fixes (corpus rows cccl-07, llmc-08, ds-02, lmd-01, xgb-06, faiss-06); 003 §2.3 Synchronization Pitfalls (over-synchronization); 003 §8.1 Implicit Synchronization',
  summary: 'A host synchronization whose only effect is to start work on one stream after work on another.',
  why:
    'The host blocks until the producer stream drains and only then queues the consumer work, so it stops feeding the GPU (' +
    REDUNDANT_SYNC +
    ' per sync, plus the lost overlap); an event recorded on the producer and waited for by the consumer gives the same order on the device (003 §2.3, §8.1).',
  messages: {
    cuda: 'Host synchronization `{{code}}` waits for {{from}} only to order the next work, on {{to}}: the host stalls and stops queuing; an event recorded on the first stream and waited for by the second orders them on the device.',
    python:
      'Host synchronization `{{code}}` waits for {{from}} only so that the work under {{to}} starts after it, and nothing is read back: the host stalls; make the consumer stream wait on the producer (`wait_stream` / `wait_event`) instead.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (!mentionsSyncCall(ctx.source.text, ctx.config.vocab.sync_calls)) return;
        if (ctx.source.language === 'python') python(ctx);
        else if (ctx.source.language === 'cuda') cuda(ctx);
      },
    };
  },
});

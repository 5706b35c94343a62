import { cudaModel } from '../../../src/analysis/cuda.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { cppFlowsTo, cppStatement } from '../../../src/analysis/flow.js';
import { streamFacts, streamLabel, type SyncPoint } from '../../../src/analysis/streams.js';
import { cppHostTouches, cudaOps, fenceMarked, findLast, fnFacts, mentionsSyncCall, traceGated, withItems, type FnFacts } from '../../../src/analysis/hostsync.js';
import { calleePath, commentsAround, contains, lastName, matchesVocab, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { REDUNDANT_SYNC } from '../../../src/config/costs.js';

const ID = 'sync/redundant-stream-sync';

// Python expressions that name the legacy default stream (CuPy's `Stream.null`, `stream=None`, `0`).
const PY_NULL_STREAM = /^(None|0|(cp|cupy)\.cuda\.Stream\.null|Stream\.null|(cp|cupy)\.cuda\.Stream\.null\.ptr)$/;
const CURRENT_STREAM = /get_current_stream\(\s*\)$/;
// A `with` block that measures or traces what it encloses: the sync before its exit bounds the measurement.
const MEASURE_CONTEXT = /tim(e|er|ing)|profil|trace|tracing|nvtx|annotate|range|span|stage|bench|measure|stopwatch/i;
const DEVICE_SWITCH = /(^|\.)(setDevice|cudaSetDevice|cuCtxSetCurrent|cuCtxPushCurrent|cuCtxPopCurrent|use)$/;

/** Whole source lines that hold only this statement (and comments): deleting them removes nothing else. */
function ownLines(ctx: CheckContext, stmt: SyntaxNode): boolean {
  const text = ctx.linesOf(stmt);
  const start = text.split('\n')[0].slice(0, stmt.startPosition.column);
  const rest = text.slice(start.length + stmt.text.length);
  return /^\s*$/.test(start) && /^\s*;?\s*((#|\/\/).*)?$/.test(rest.split('\n')[0]) && !rest.includes('\n');
}

function deletion(ctx: CheckContext, stmt: SyntaxNode, sync: SyntaxNode, python: boolean): FixSpec {
  const description = 'Delete the synchronization: stream order already runs the next operation after the previous one; sync once, right before the host reads device data.';
  // Only a statement that is nothing but the sync (or an error-check macro around it) can go; `err = sync()`
  // or `if (sync() != cudaSuccess)` carry other logic.
  let expr = stmt.type === 'expression_statement' ? unparen(stmt.namedChildren[0]) : null;
  if (expr && expr.id !== sync.id && !python && expr.type === 'call_expression') {
    const args = expr.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
    if (args.length === 1 && args[0].id === sync.id) expr = sync;
  }
  if (expr?.id !== sync.id || !ownLines(ctx, stmt)) return { description };
  // Python needs a statement left in the block; C++ accepts an empty one.
  if (python && stmt.parent?.type === 'block' && stmt.parent.namedChildren.filter((c) => c.type !== 'comment').length < 2) return { description };
  return { description, replace: { from: stmt, text: '' } };
}

function pyStatement(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && cur.parent.type !== 'block' && cur.parent.type !== 'module') cur = cur.parent;
  return cur;
}





// ---------------------------------------------------------------------------------------------
// Python (CuPy, cuda-python, vibeSpatial runtime)


function python(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  if (m.testOrBench) return;
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  const root = ctx.source.root;
  const streamNames = new Set(facts.streams.map((s) => s.name));
  const isStreamExpr = (e: SyntaxNode) =>
    streamNames.has(e.text) || /(^|\.|_)stream(s?\[.*\])?$|^s\d*$/i.test(e.text) || /(^|\.)(Stream|ExternalStream|from_external|get_current_stream)$/.test(calleePath(e) ?? '');

  /** Stream a node's work is queued on: `stream=` argument, else the innermost `with <stream>:`, else default. */
  const contextStream = (n: SyntaxNode): string | null => {
    const scope = m.scopeOf(n);
    for (let p = n.parent; p && p.id !== scope.id; p = p.parent) {
      if (p.type !== 'with_statement') continue;
      const s = withItems(p).find((e) => isStreamExpr(e) && !CURRENT_STREAM.test(e.text));
      if (s) return PY_NULL_STREAM.test(s.text) ? null : s.text;
    }
    return null;
  };
  const norm = (t: string, at: SyntaxNode): string | null => (PY_NULL_STREAM.test(t) ? null : CURRENT_STREAM.test(t) ? contextStream(at) : t);
  const opStream = (n: SyntaxNode): string | null => {
    const kw = n.type === 'call' ? pyArgs(n).keywords.get('stream') : undefined;
    return kw ? norm(kw.text, n) : contextStream(n);
  };
  const deviceContext = (n: SyntaxNode): string => {
    const out: number[] = [];
    for (let p = n.parent; p && p.type !== 'function_definition'; p = p.parent) {
      if (p.type === 'with_statement' && withItems(p).some((e) => /(^|\.)Device$/.test(calleePath(e) ?? ''))) out.push(p.id);
    }
    return out.join('/');
  };

  const isEvent = (s: SyncPoint) => s.scope === 'event' || /(^|\.|_)(ev|evt|event|events)(\d*|\[.*\])$|Event/.test(s.target ?? '');
  const direct = facts.syncs.filter((s) => s.via !== 'cccl-default' && !isEvent(s));
  // Every sync this rule can report is, or sits inside a helper around, one of these.
  if (!direct.length) return;

  // Host buffers the device reads or writes asynchronously: async copy endpoints and pinned memory.
  const hostBuffers = new Set<string>();
  for (const call of /async|pinned/i.test(ctx.source.text) ? root.descendantsOfType('call') : []) {
    const p = m.callPath(call);
    if (matchesVocab(p, vocab.d2h_async_calls) || (matchesVocab(p, vocab.h2d_calls) && /async/i.test(p ?? ''))) {
      const { positional, keywords } = pyArgs(call);
      for (const a of [...positional, ...keywords.values()]) {
        const u = unparen(a);
        if (u?.type === 'identifier' && !m.isDevice(u) && !/stream|^s\d*$/i.test(u.text)) hostBuffers.add(u.text);
      }
    }
    if (p && /pinned/i.test(p) && call.parent?.type === 'assignment') {
      const left = call.parent.childForFieldName('left');
      if (left?.type === 'identifier') hostBuffers.add(left.text);
    }
  }

  // Syncs: the shared sync points (the CCCL `synchronize=` default belongs to sync/cccl-implicit-synchronize),
  // plus calls of helpers in this file whose body always synchronizes.
  type PySync = { node: SyntaxNode; device: boolean; target: string | null; helper?: string };
  const syncs: PySync[] = [];
  for (const s of direct) {
    const device = s.scope === 'device';
    // A bare `synchronize()` (a bound method fetched earlier) names no stream we can compare.
    if (!device && s.target === null) continue;
    syncs.push({ node: s.node, device, target: device ? null : norm(s.target!, s.node) });
  }
  const helpers = new Map<string, string>();
  const helperDefs: SyntaxNode[] = [];
  const withWork = new Set(m.gpuOps.map((o) => m.scopeOf(o.node).id));
  const syncScopes = new Set(direct.map((s) => m.scopeOf(s.node).id));
  for (const fn of root.descendantsOfType('function_definition')) {
    if (!syncScopes.has(fn.id) || withWork.has(fn.id)) continue;
    const name = fn.childForFieldName('name')?.text;
    const body = fn.childForFieldName('body');
    if (!name || !body) continue;
    const inner = direct.find((s) => m.scopeOf(s.node).id === fn.id && alwaysRuns(s.node, body));
    if (inner) {
      helpers.set(name, quote(inner.node));
      helperDefs.push(fn);
    }
  }
  if (helpers.size) {
    const seen = new Set(syncs.map((s) => s.node.id));
    for (const call of root.descendantsOfType('call')) {
      const fn = call.childForFieldName('function');
      const name = fn?.type === 'identifier' ? fn.text : fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : undefined;
      if (!name || !helpers.has(name) || seen.has(call.id) || helperDefs.some((d) => contains(d, call))) continue;
      syncs.push({ node: call, device: true, target: null, helper: name });
    }
  }

  const opsByScope = new Map<number, SyntaxNode[]>();
  const opsIn = (scope: SyntaxNode): SyntaxNode[] => {
    let list = opsByScope.get(scope.id);
    if (!list) opsByScope.set(scope.id, (list = m.gpuOps.filter((o) => m.scopeOf(o.node).id === scope.id).map((o) => o.node)));
    return list;
  };
  const streamMemo = new Map<number, string | null>();
  const streamOf = (n: SyntaxNode): string | null => {
    if (!streamMemo.has(n.id)) streamMemo.set(n.id, opStream(n));
    return streamMemo.get(n.id)!;
  };
  for (const s of syncs) {
    const scope = m.scopeOf(s.node);
    if (m.debugGated(s.node) || traceGated(s.node, scope) || m.inCpuFallback(s.node)) continue;
    const stmt = pyStatement(s.node);
    if (fenceMarked(stmt, vocab.sync_fence_markers)) continue;
    const ops = opsIn(scope);
    const prior = ops.filter((o) => o.endIndex <= s.node.startIndex);
    const a = findLast(prior, (o) => m.flowsTo(o, s.node));
    const b = ops.find((o) => o.startIndex >= s.node.endIndex && m.flowsTo(s.node, o));
    if (!a || !b || streamOf(a) !== streamOf(b)) continue;
    const sb = streamOf(b);
    // A device-wide sync after work on another stream joins the streams; that is a dependency, not waste.
    if (s.device ? prior.some((o) => streamOf(o) !== sb && m.flowsTo(o, s.node)) : s.target !== sb) continue;
    if (deviceContext(a) !== deviceContext(b) || deviceContext(s.node) !== deviceContext(b)) continue;
    if (pyHostTouches(s.node, a, b)) continue;
    ctx.report({
      node: s.node,
      messageId: s.helper ? 'helper' : 'redundant',
      data: { code: quote(s.node), stream: streamLabel(sb), inner: helpers.get(s.helper ?? '') ?? '' },
      fix: deletion(ctx, stmt, s.node, true),
    });
  }

  /** Between the sync and the next operation the host reads results, measures time, frees memory or changes device. */
  function pyHostTouches(sync: SyntaxNode, a: SyntaxNode, b: SyntaxNode): boolean {
    const scope = m.scopeOf(sync);
    // Arguments of `b` are evaluated before it is queued, so a read inside them follows the sync too.
    const after = (n: SyntaxNode) => n.startIndex >= sync.endIndex && n.startIndex < b.endIndex && m.scopeOf(n).id === scope.id;
    if (m.d2h.some((d) => after(d.node))) return true;
    for (const call of scope.descendantsOfType('call')) {
      if (!(call.startIndex >= a.endIndex && call.startIndex < b.startIndex) || m.scopeOf(call).id !== scope.id) continue;
      const p = m.callPath(call);
      if (DEVICE_SWITCH.test(p ?? '') && /Device|device|runtime/.test(p ?? '')) return true;
      if (!after(call) || contains(call, b)) continue;
      if (matchesVocab(p, vocab.count_scatter_calls) || matchesVocab(p, vocab.d2h_calls) || matchesVocab(p, vocab.timing_calls)) return true;
      if (/(^|\.)(free|free_all_blocks|free_all_free|release|close|write|save|savez|tofile|dump|flush)$/.test(p ?? '')) return true;
      // Device data handed to code that is not a GPU operation (HOST_READ, catalog §1.4): it may read it on the
      // host, or, given a raw pointer, on a stream of its own.
      if (!m.isGpuOpNode(call) && !isGpuApi(p) && (m.deviceArgsOf(call).length || rawPointerArg(call))) return true;
    }
    for (const n of scope.descendantsOfType(['delete_statement', 'yield', 'await'])) if (after(n)) return true;
    for (const name of hostBuffers) if (m.usesOf(name, scope).some((u) => after(u) && !contains(b, u))) return true;
    // The sync closes a timed or traced `with` block that the next operation is outside of.
    for (let p = sync.parent; p && p.id !== scope.id; p = p.parent) {
      if (p.type === 'with_statement' && !contains(p, b) && withItems(p).some((e) => MEASURE_CONTEXT.test(e.text))) return true;
    }
    return false;
  }

  function rawPointerArg(call: SyntaxNode): boolean {
    const args = call.childForFieldName('arguments');
    if (!args) return false;
    if (/\.data\.ptr\b|__cuda_array_interface__|__dlpack__/.test(args.text)) return true;
    return args.descendantsOfType('call').some((c) => matchesVocab(m.callPath(c), vocab.pointer_calls));
  }

  function isGpuApi(p: string | null): boolean {
    if (!p) return false;
    if (vocab.device_modules.some((mod) => p.startsWith(mod + '.'))) return true;
    if (['len', 'isinstance', 'id', 'type', 'getattr', 'hasattr', 'print', 'str', 'repr', 'tuple', 'range'].includes(p)) return true;
    return [vocab.launch_calls, vocab.device_helpers, vocab.alloc_calls, vocab.pool_alloc_calls, vocab.pointer_calls, vocab.sized_alloc_calls, vocab.vibespatial_helpers].some((v) => matchesVocab(p, v));
  }
}

/** The sync runs on every call of its function: no branch, loop or earlier `return` can skip it. */
function alwaysRuns(sync: SyntaxNode, body: SyntaxNode): boolean {
  for (let p = sync.parent; p && p.id !== body.id; p = p.parent) {
    if (!['expression_statement', 'block', 'with_statement', 'with_clause', 'try_statement', 'finally_clause', 'call', 'argument_list'].includes(p.type)) return false;
  }
  return !body.descendantsOfType(['return_statement', 'raise_statement']).some((r) => r.startIndex < sync.startIndex);
}

// ---------------------------------------------------------------------------------------------
// CUDA C++ host code


function cuda(ctx: CheckContext): void {
  const cm = ctx.get(cudaModel);
  if (cm.testOrBench) return;
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  if (!facts.syncs.some((s) => s.scope !== 'event')) return;
  const streamNames = new Set(facts.streams.map((s) => s.name));
  const touchCache = new Map<number, FnFacts>();

  const ops = cudaOps(cm, facts.uses, streamNames);

  for (const s of facts.syncs) {
    if (s.scope === 'event') continue;
    const f = cm.functionOf(s.node);
    if (!f || !f.isHost || cm.debugGated(s.node) || (f.body && traceGated(s.node, f.body))) continue;
    const stmt = cppStatement(s.node);
    if (fenceMarked(stmt, vocab.sync_fence_markers)) continue;
    const mine = ops.filter((o) => contains(f.node, o.node));
    const prior = mine.filter((o) => o.node.endIndex <= s.node.startIndex);
    const a = findLast(prior, (o) => cppFlowsTo(o.node, s.node));
    const b = mine.find((o) => o.node.startIndex >= s.node.endIndex && cppFlowsTo(s.node, o.node));
    if (!a || !b || a.stream !== b.stream) continue;
    if (s.scope === 'device' ? prior.some((o) => o.stream !== b.stream && cppFlowsTo(o.node, s.node)) : s.target !== b.stream) continue;
    let ff = touchCache.get(f.node.id);
    if (!ff) touchCache.set(f.node.id, (ff = fnFacts(cm, f.node)));
    if (cppHostTouches(cm, ff, s.node, a.node, b.node, vocab.timing_calls)) continue;
    ctx.report({
      node: s.node,
      messageId: 'redundant',
      data: { code: quote(s.node), stream: streamLabel(b.stream) },
      fix: deletion(ctx, stmt, s.node, false),
    });
  }
}






export default defineCheck({
  id: ID,
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation:
    '003 §2.3 Synchronization Pitfalls (over-synchronization); 003 §8.1 Implicit Synchronization; 003 §9 Pass 2 bullets 1 and 3; 004 §H1.9 Optimizing the Kernel ("remove any unnecessary cudaDeviceSynchronize()")',
  summary: 'Synchronization between two operations on the same stream, with no host read in between.',
  why: 'The sync drains the whole queue, so the GPU idles while the host wakes up and issues the next launch (' + REDUNDANT_SYNC + '), and the stream would have run the two operations in order anyway (003 §2.3, §8.1 HIGH, §8.4).',
  messages: {
    redundant:
      'Synchronization `{{code}}` between two operations on the same stream ({{stream}}): stream order already guarantees they run in sequence, so this only stalls the pipeline.',
    helper:
      '`{{code}}` synchronizes (it calls `{{inner}}`) between two operations on the same stream ({{stream}}): stream order already guarantees they run in sequence, so this only stalls the pipeline.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        // Every sync this rule reports names a `sync_calls` entry in the text; skip the stream analysis otherwise.
        if (!mentionsSyncCall(ctx.source.text, ctx.config.vocab.sync_calls)) return;
        if (ctx.source.language === 'python') python(ctx);
        else if (ctx.source.language === 'cuda') cuda(ctx);
      },
    };
  },
});

import { cudaModel } from '../../../src/analysis/cuda.js';
import { hostFunctionOf } from '../../../src/analysis/flow.js';
import { onceGuarded } from '../../../src/analysis/once.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { pyContextStream, storedInContainer, streamDeclAt, streamFacts, streamKey, type StreamCreation, type StreamFacts } from '../../../src/analysis/streams.js';
import { contains, quote } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

// Host threads each driving their own stream overlap with one another: a per-call stream is how they do it.
const THREADED = /\bimport\s+threading\b|\bfrom\s+threading\b|ThreadPoolExecutor|concurrent\.futures|\bstd::thread\b|\bstd::async\b|\bstd::jthread\b|#\s*pragma\s+omp\b|\bpthread_create\b/;

interface Op {
  node: SyntaxNode;
  /** Normalized stream key; null = the legacy default stream. */
  stream: string | null;
}

interface Lang {
  loopOf(n: SyntaxNode): SyntaxNode | null;
  /** GPU operations of a function (or the module), with the stream each is queued on. */
  opsIn(scope: SyntaxNode): Op[];
  /** Stream key of a creation: its local name, or the call itself for `with cp.cuda.Stream():`. Null for members and stored handles. */
  localKey(c: StreamCreation): string | null;
  /** Mentions of the local stream name in `scope`, besides the creation's own binding. */
  mentions(c: StreamCreation, scope: SyntaxNode): SyntaxNode[];
  /** `cudaStreamDestroy(s)`, `with s:`: a mention that neither runs work nor hands the stream on. */
  inert(occ: SyntaxNode): boolean;
  functionName(fn: SyntaxNode): string;
}

type Report = { node: SyntaxNode; messageId: string; data: Record<string, string | number> };

function within(a: SyntaxNode, n: SyntaxNode): boolean {
  return a.startIndex <= n.startIndex && n.endIndex <= a.endIndex;
}

/** Every mention of the stream is its creation, work queued on it, a sync, an event, or inert: it stays in the function. */
function staysLocal(facts: StreamFacts, lang: Lang, c: StreamCreation, scope: SyntaxNode, ops: Op[]): boolean {
  const benign = [c.node, ...ops.map((o) => o.node), ...facts.syncs.map((s) => s.node), ...facts.polls.map((s) => s.node), ...facts.eventRecords.map((r) => r.node), ...facts.eventWaits.map((w) => w.node)];
  for (const occ of lang.mentions(c, scope)) {
    if (benign.some((b) => within(b, occ)) || lang.inert(occ)) continue;
    return false;
  }
  return true;
}

function analyze(ctx: CheckContext, facts: StreamFacts, lang: Lang): Report[] {
  const out: Report[] = [];
  const root = ctx.source.root;
  const threaded = THREADED.test(ctx.source.text);
  for (const c of facts.creations) {
    // Latency-priority streams (003 §2.5) exist to jump ahead of other work, not to overlap it.
    if (c.priority && c.priority.text.trim() !== '0') continue;
    if (onceGuarded(c.node)) continue;
    const key = lang.localKey(c);
    if (!key) continue;
    const fn = hostFunctionOf(c.node);
    const scope = fn ?? root;
    const ops = lang.opsIn(scope);
    const loop = lang.loopOf(c.node);
    if (loop) {
      // (a) A stream per iteration for a single operation, dropped or destroyed in the same iteration.
      const inLoop = ops.filter((o) => within(loop, o.node));
      const mine = inLoop.filter((o) => o.stream === key && o.node.startIndex >= c.node.endIndex);
      if (mine.length !== 1 || inLoop.some((o) => o.stream !== key)) continue;
      const mentions = lang.mentions(c, scope);
      if (mentions.some((m) => m.startIndex >= loop.endIndex || (within(loop, m) && storedInContainer(m)))) continue;
      if (!staysLocal(facts, lang, c, loop, inLoop)) continue;
      out.push({ node: c.node, messageId: 'perIteration', data: { code: quote(c.node), op: quote(mine[0].node) } });
      continue;
    }
    // (b) A function whose only GPU operation runs on the one stream it creates: nothing overlaps. A
    // chain of several operations on one stream is same-stream ordering, which 003 §2.1 recommends;
    // only the creation is wasted there, and flagging every such wrapper would bury the real cases.
    if (!fn || threaded || c.nonBlocking || ctx.config.setupFunctions.test(lang.functionName(fn))) continue;
    if (facts.creations.some((o) => o !== c && hostFunctionOf(o.node)?.id === fn.id)) continue;
    const mine = ops.filter((o) => o.stream === key);
    if (mine.length !== 1 || ops.length !== 1) continue;
    if (!staysLocal(facts, lang, c, fn, ops)) continue;
    out.push({
      node: c.node,
      messageId: 'singleStream',
      data: { code: quote(c.node), fn: lang.functionName(fn), op: quote(mine[0].node) },
    });
  }
  // (c) A consumer stream waits by event for a producer stream that does nothing else.
  for (const w of facts.eventWaits) {
    const consumer = streamKey(w.stream);
    if (!consumer || lang.loopOf(w.node)) continue;
    const fn = hostFunctionOf(w.node);
    if (!fn) continue;
    const base = (t: string) => streamKey(t)!.replace(/\[.*\]$/, '');
    const rec = facts.eventRecords.filter((r) => base(r.event) === base(w.event) && r.node.endIndex <= w.node.startIndex && hostFunctionOf(r.node)?.id === fn.id).pop();
    const producer = rec ? streamKey(rec.stream) : null;
    if (!rec || !producer || producer === consumer || lang.loopOf(rec.node)) continue;
    const decl = streamDeclAt(facts, rec.stream, rec.node);
    if (!decl || decl.priority) continue;
    const ops = lang.opsIn(fn);
    const prod = ops.filter((o) => o.stream === producer);
    const cons = ops.filter((o) => o.stream === consumer);
    if (!prod.length || !cons.length) continue;
    if (prod.some((o) => o.node.startIndex > rec.node.startIndex) || cons.some((o) => o.node.startIndex < w.node.startIndex)) continue;
    // Work of any third stream (or the default stream) in the window could overlap the producer.
    if (ops.some((o) => o.stream !== producer && o.stream !== consumer && o.node.startIndex < w.node.startIndex)) continue;
    // A producer that is not a local of this function (a member) must do nothing anywhere else either.
    const local = hostFunctionOf(decl.node)?.id === fn.id && lang.localKey(decl) !== null;
    const elsewhere = !local && facts.uses.some((u) => streamKey(u.stream) === producer && !contains(fn, u.node));
    if (elsewhere) continue;
    out.push({ node: w.node, messageId: 'eventChain', data: { code: quote(w.node), consumer: w.stream ?? '', producer: rec.stream ?? '' } });
  }
  return out;
}

function checkPython(ctx: CheckContext): Report[] {
  const m = ctx.get(pythonModel);
  if (m.testOrBench) return [];
  const facts = ctx.get(streamFacts);
  if (!facts.creations.length) return [];
  const names = new Set(facts.streams.map((d) => d.name));
  const opsMemo = new Map<number, Op[]>();
  return analyze(ctx, facts, {
    loopOf: (n) => m.loopOf(n),
    opsIn(scope) {
      let ops = opsMemo.get(scope.id);
      if (ops) return ops;
      const byId = new Map<number, Op>();
      const mine = (n: SyntaxNode) => m.scopeOf(n).id === scope.id;
      for (const u of facts.uses) if (mine(u.node)) byId.set(u.node.id, { node: u.node, stream: streamKey(u.stream) });
      for (const o of m.gpuOps) if (mine(o.node) && !byId.has(o.node.id)) byId.set(o.node.id, { node: o.node, stream: streamKey(pyContextStream(o.node, names)) });
      ops = [...byId.values()].sort((a, b) => a.node.startIndex - b.node.startIndex);
      opsMemo.set(scope.id, ops);
      return ops;
    },
    localKey(c) {
      if (c.name === null) return c.node.parent?.type === 'with_item' ? streamKey(c.node.text) : null;
      return /^\w+$/.test(c.name) ? c.name : null;
    },
    mentions(c, scope) {
      if (!c.name) return [];
      return m.usesOf(c.name, m.scopeOf(c.node)).filter((u) => within(scope, u));
    },
    inert(occ) {
      const p = occ.parent;
      if (p?.type === 'with_item' || p?.parent?.type === 'with_item' || p?.type === 'delete_statement') return true;
      const call = p?.type === 'argument_list' ? p.parent : null;
      return !!call && /(^|\.)(cudaStreamDestroy|cuStreamDestroy|streamDestroy)$/.test(call.childForFieldName('function')?.text ?? '');
    },
    functionName: (fn) => fn.childForFieldName('name')?.text ?? '',
  });
}

function checkCuda(ctx: CheckContext): Report[] {
  const m = ctx.get(cudaModel);
  if (m.testOrBench) return [];
  const facts = ctx.get(streamFacts);
  const opsByFn = new Map<number, Op[]>();
  for (const u of facts.uses) {
    if (m.inDeviceCode(u.node)) continue;
    const fn = m.functionOf(u.node)?.node.id ?? -1;
    const list = opsByFn.get(fn) ?? [];
    list.push({ node: u.node, stream: streamKey(u.stream) });
    opsByFn.set(fn, list);
  }
  const creations = facts.creations.filter((c) => !m.inDeviceCode(c.node));
  const declaredIn = (fn: SyntaxNode, name: string) =>
    fn.descendantsOfType('declaration').some((d) => d.childrenForFieldName('declarator').some((x) => (x.type === 'init_declarator' ? x.childForFieldName('declarator') : x)?.text === name));
  return analyze(ctx, { ...facts, creations }, {
    loopOf: (n) => m.loopOf(n),
    opsIn: (scope) => opsByFn.get(scope.type === 'function_definition' ? scope.id : -1) ?? [],
    localKey(c) {
      const fn = hostFunctionOf(c.node);
      return c.name && /^\w+$/.test(c.name) && fn && declaredIn(fn, c.name) ? c.name : null;
    },
    mentions(c, scope) {
      return scope.descendantsOfType('identifier').filter((i) => i.text === c.name && !within(c.node, i) && !['declaration', 'init_declarator'].includes(i.parent?.type ?? ''));
    },
    inert(occ) {
      const call = occ.parent?.type === 'argument_list' ? occ.parent.parent : null;
      return !!call && /(^|::)(cudaStreamDestroy|cuStreamDestroy(_v2)?)$/.test(call.childForFieldName('function')?.text ?? '');
    },
    functionName: (fn) => m.functions.find((f) => f.node.id === fn.id)?.name ?? '',
  });
}

export default defineCheck({
  id: 'sync/stream-for-dependent-or-tiny-work',
  pass: 2,
  severity: 'low',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['cuda', 'python'],
  citation: '003 §2.1 When Streams Actually Help ("Do NOT use streams when": sequential dependency, tiny transfers (stream creation ~1–2 µs), single-kernel operations)',
  summary: 'A stream created for work that cannot overlap anything: one op per loop iteration, a function whose whole chain runs on it, or a producer stream whose only consumer waits for it.',
  why: 'Creating a stream costs ~1–2 µs, more than a tiny transfer takes, and a dependent chain or a single kernel has nothing to overlap with, while same-stream ordering costs nothing (003 §2.1).',
  messages: {
    perIteration: 'A new stream is created for work that has nothing to overlap with: `{{code}}` runs in a loop for a single operation (`{{op}}`) and is then dropped, paying ~1–2 µs of creation per iteration; same-stream ordering is free.',
    singleStream: 'A new stream is created for work that has nothing to overlap with: `{{fn}}` creates `{{code}}` for its single GPU operation (`{{op}}`), paying ~1–2 µs of creation per call; same-stream ordering is free.',
    eventChain: 'A new stream is created for work that has nothing to overlap with: `{{code}}` makes `{{consumer}}` wait for `{{producer}}`, which does nothing else (a sequential dependency); same-stream ordering is free.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const reports = ctx.source.language === 'cuda' ? checkCuda(ctx) : ctx.source.language === 'python' ? checkPython(ctx) : [];
        for (const r of reports) {
          ctx.report({ ...r, fix: { description: 'Issue the operations in order on the existing stream, and create streams once at setup (reuse them across calls and iterations).' } });
        }
      },
    };
  },
});

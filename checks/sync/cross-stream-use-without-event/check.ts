import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { cppFlowsTo, hostFunctionOf, sameFunction } from '../../../src/analysis/flow.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { bufferKey, cppBufferBase, hostSyncBetween, pyBoundName, pyBufferBase, pyContextStream, pyStreamOf, streamDeclAt, streamFacts, type StreamFacts, streamKey, streamLabel, streamText, syncHelperCalls } from '../../../src/analysis/streams.js';
import { lastName, matchesVocab, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** A stream-ordered operation and the buffers it writes (or allocates) and touches. */
interface Op {
  node: SyntaxNode;
  stream: string | null;
  writes: Set<string>;
  uses: Set<string>;
}

// Argument names that by convention receive a kernel's results.
const OUTPUT_NAME = /(^|_)(out|outs|output|outputs|dst|dest|result|results|res)(_|\d|$)|Out$/i;

interface Lang {
  flowsTo(a: SyntaxNode, b: SyntaxNode): boolean;
  norm(text: string, at: SyntaxNode): string | null;
  implicitSyncs(stream: string | null, at: SyntaxNode): SyntaxNode[];
}

/**
 * Cross-stream ordering: an event recorded on `from` after the producer that `to` waits on before the
 * consumer, a host sync of `from` (or of the device) in between, or the legacy default stream's
 * implicit synchronization with blocking streams.
 */
function ordered(facts: StreamFacts, lang: Lang, p: Op, c: Op): boolean {
  const base = (t: string) => streamKey(t)!.replace(/\[.*\]$/, '');
  const toKey = streamKey(c.stream);
  for (const r of facts.eventRecords) {
    if (streamKey(r.stream) !== streamKey(p.stream) || r.node.startIndex < p.node.endIndex || r.node.startIndex > c.node.startIndex || !sameFunction(r.node, c.node)) continue;
    const waited = facts.eventWaits.some(
      (w) =>
        base(w.event) === base(r.event) &&
        w.node.endIndex >= r.node.endIndex &&
        w.node.endIndex <= c.node.startIndex &&
        streamKey(w.stream === null ? null : lang.norm(w.stream, w.node)) === toKey,
    );
    if (waited) return true;
  }
  if (hostSyncBetween(facts, p.node, c.node, p.stream, lang.norm, lang.implicitSyncs(p.stream, c.node))) return true;
  // Legacy default stream <-> blocking stream: each waits for the other's earlier work (003 §2.3).
  const blocking = (op: Op) => op.stream !== null && !streamDeclAt(facts, op.stream, op.node)?.nonBlocking;
  if ((p.stream === null && blocking(c)) || (c.stream === null && blocking(p))) return true;
  return false;
}

function analyze(ctx: CheckContext, facts: StreamFacts, ops: Op[], lang: Lang): void {
  ops.sort((a, b) => a.node.startIndex - b.node.startIndex);
  // Writers per function and buffer, in document order.
  const writers = new Map<string, Op[]>();
  const fnId = new Map<Op, number>();
  for (const op of ops) {
    const id = hostFunctionOf(op.node)?.id ?? -1;
    fnId.set(op, id);
    for (const w of op.writes) {
      const k = `${id}\0${w}`;
      const list = writers.get(k) ?? [];
      list.push(op);
      writers.set(k, list);
    }
  }
  for (const c of ops) {
    for (const buf of c.uses) {
      // The last write of the buffer that reaches this operation decides which stream it must follow.
      const list = writers.get(`${fnId.get(c)}\0${buf}`) ?? [];
      let producer: Op | undefined;
      for (let i = list.length - 1; i >= 0 && !producer; i--) {
        const p = list[i];
        if (p !== c && p.node.endIndex <= c.node.startIndex && lang.flowsTo(p.node, c.node)) producer = p;
      }
      if (!producer || streamKey(producer.stream) === streamKey(c.stream)) continue;
      if (ordered(facts, lang, producer, c)) continue;
      ctx.report({
        node: c.node,
        messageId: 'crossStream',
        data: { buf, from: streamLabel(producer.stream), producer: quote(producer.node), to: streamLabel(c.stream), code: quote(c.node) },
        fix: { description: `Record an event on ${streamLabel(producer.stream)} after \`${quote(producer.node)}\` and make ${streamLabel(c.stream)} wait on it before this operation (\`cudaEventRecord(e, s1); cudaStreamWaitEvent(s2, e, 0);\` / \`e = s1.record(); s2.wait_event(e)\`).` },
      });
      break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// CUDA C++

/** Which parameters of each kernel (declared or defined in this file) may be written: non-const pointers. */
function kernelWrites(root: SyntaxNode, launched: ReadonlySet<string>): Map<string, boolean[]> {
  const out = new Map<string, boolean[]>();
  for (const d of root.descendantsOfType('function_declarator')) {
    const name = d.childForFieldName('declarator')?.text;
    if (!name || !launched.has(name) || out.has(name)) continue;
    const params = d.childForFieldName('parameters')?.namedChildren.filter((p) => p.type === 'parameter_declaration') ?? [];
    out.set(
      name,
      params.map((p) => {
        const ptr = p.descendantsOfType(['pointer_declarator', 'reference_declarator']).length > 0 || /\*/.test(p.childForFieldName('type')?.text ?? '');
        const constPointee = p.children.some((c) => c.type === 'type_qualifier' && c.text === 'const');
        return ptr && !constPointee;
      }),
    );
  }
  return out;
}

function cuda(ctx: CheckContext): void {
  const cm: CudaModel = ctx.get(cudaModel);
  const facts = ctx.get(streamFacts);
  const root = ctx.source.root;
  const key = (n: SyntaxNode | undefined) => {
    const b = cppBufferBase(n);
    return b ? bufferKey(b.text) : null;
  };
  // Device pointers of a function: pointer parameters and locals, and what the stream-ordered allocators fill.
  const ptrMemo = new Map<number, Set<string>>();
  const pointerNames = (fn: SyntaxNode) => {
    let r = ptrMemo.get(fn.id);
    if (!r) ptrMemo.set(fn.id, (r = new Set(fn.descendantsOfType('pointer_declarator').map((d) => d.descendantsOfType('identifier')[0]?.text).filter((x): x is string => !!x))));
    return r;
  };
  const ops: Op[] = [];
  const byNode = new Map(facts.uses.map((u) => [u.node.id, u.stream]));
  const signatures = kernelWrites(root, new Set(cm.launches.map((l) => l.kernel ?? '')));
  for (const l of cm.launches) {
    if (!byNode.has(l.node.id) || cm.inDeviceCode(l.node)) continue;
    const fn = hostFunctionOf(l.node);
    const ptrs = fn ? pointerNames(fn) : new Set<string>();
    const writable = (l.kernel && signatures.get(l.kernel)) || null;
    const op: Op = { node: l.node, stream: byNode.get(l.node.id) ?? null, writes: new Set(), uses: new Set() };
    const bufs = l.args.map((a) => ({ a, k: key(a) })).filter((x): x is { a: SyntaxNode; k: string } => !!x.k && (writable !== null || ptrs.has(x.k) || /^d_/.test(x.k)));
    bufs.forEach(({ a, k }) => {
      const i = l.args.indexOf(a);
      op.uses.add(k);
      // Unknown kernel: its only buffer argument, or one named like an output, is what it writes.
      if (writable ? writable[i] : bufs.length === 1 || OUTPUT_NAME.test(k)) op.writes.add(k);
    });
    ops.push(op);
  }
  const callById = new Map(cm.calls.map((c) => [c.node.id, c]));
  for (const u of facts.uses) {
    const call = callById.get(u.node.id);
    if (!call || cm.inDeviceCode(u.node)) continue;
    const n = call.name.replace(/_v2$/, '');
    const op: Op = { node: u.node, stream: u.stream, writes: new Set(), uses: new Set() };
    const first = key(call.args[0]);
    if (/Memcpy/.test(n)) {
      // (dst, [dpitch,] src, ...): the destination is written, the source read.
      const src = key(call.args[/2D/.test(n) ? 2 : 1]);
      if (first) op.writes.add(first);
      for (const k of [first, src]) if (k) op.uses.add(k);
    } else if (/Memset|Malloc|MemAlloc/.test(n)) {
      if (first) {
        op.writes.add(first);
        op.uses.add(first);
      }
    } else if (first) op.uses.add(first);
    ops.push(op);
  }
  const helpers = syncHelperCalls(root, facts);
  analyze(ctx, facts, ops, {
    flowsTo: cppFlowsTo,
    norm: (t) => streamText({ text: t } as SyntaxNode),
    implicitSyncs: (stream, at) => {
      // A blocking host transfer runs on the legacy stream, which waits for every blocking stream.
      const blocking = stream === null || !streamDeclAt(facts, stream, at)?.nonBlocking;
      return [...helpers, ...(blocking ? cm.calls.filter((c) => /^(cudaMemcpy|cudaMemcpy2D|cudaMemcpyToSymbol|cudaMemcpyFromSymbol)$/.test(c.name) && !/DeviceToDevice/.test(c.node.text)).map((c) => c.node) : [])];
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Python

function python(ctx: CheckContext): void {
  const m: PyModel = ctx.get(pythonModel);
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  const names = new Set(facts.streams.map((d) => d.name));
  const used = new Map(facts.uses.map((u) => [u.node.id, u.stream]));
  const devKey = (e: SyntaxNode | null | undefined): string | null => {
    const b = pyBufferBase(e);
    return b && (m.isDevice(b) || /^d_|\.d_/.test(b.text)) ? bufferKey(b.text) : null;
  };
  const deviceNames = (e: SyntaxNode | null | undefined): string[] => {
    if (!e) return [];
    const out = new Set<string>();
    for (const n of [e, ...e.descendantsOfType(['identifier', 'attribute'])]) {
      if (n.type === 'identifier' && n.parent?.type === 'attribute' && n.parent.childForFieldName('object')?.id !== n.id) continue;
      if (n.type === 'identifier' && n.parent?.type === 'keyword_argument' && n.parent.childForFieldName('name')?.id === n.id) continue;
      if ((n.type === 'identifier' || n.type === 'attribute') && m.isDevice(n) && !(n.parent?.type === 'attribute' && vocab.metadata_attributes.includes(n.parent.childForFieldName('attribute')?.text ?? ''))) out.add(bufferKey(n.text));
    }
    return [...out];
  };
  const streamAt = (n: SyntaxNode): string | null => {
    if (used.has(n.id)) return used.get(n.id)!;
    const kw = n.type === 'call' ? pyArgs(n).keywords.get('stream') : undefined;
    return kw ? pyStreamOf(kw.text, n, names) : pyContextStream(n, names);
  };
  const ops: Op[] = [];
  const seen = new Set<number>();
  const add = (op: Op) => {
    if (!op.uses.size && !op.writes.size) return;
    ops.push(op);
    seen.add(op.node.id);
  };
  // Explicit stream APIs: launches with `args=`, cuda-python copies and allocations, `d.set(h, stream=s)`.
  for (const call of ctx.source.root.descendantsOfType('call')) {
    const path = m.callPath(call) ?? '';
    const fn = call.childForFieldName('function');
    const name = lastName(path) ?? fn?.childForFieldName('attribute')?.text ?? '';
    if (!/launch|[Mm]emcpy|[Aa]lloc|^set$|^get$|async/i.test(name)) continue;
    const { positional, keywords } = pyArgs(call);
    const op: Op = { node: call, stream: null, writes: new Set(), uses: new Set() };
    if (matchesVocab(path, vocab.launch_calls) && /launch/i.test(name)) {
      const args = unparen(keywords.get('args') ?? positional[3] ?? null);
      const bufs = args?.type === 'tuple' || args?.type === 'list' ? args.namedChildren.map(devKey).filter((k): k is string => !!k) : [];
      for (const k of bufs) {
        op.uses.add(k);
        if (bufs.length === 1 || OUTPUT_NAME.test(k.replace(/^self\./, ''))) op.writes.add(k);
      }
    } else if (/^(cudaMemcpyAsync|memcpyAsync|cuMemcpy\w*Async)$/.test(name)) {
      const dst = devKey(positional[0]);
      const src = devKey(positional[1]);
      if (dst) op.writes.add(dst);
      for (const k of [dst, src]) if (k) op.uses.add(k);
    } else if (m.callMatches(call, vocab.async_alloc_calls)) {
      const bound = pyBoundName(call);
      if (bound) {
        op.writes.add(bufferKey(bound));
        op.uses.add(bufferKey(bound));
      }
    } else if (fn?.type === 'attribute' && name === 'set' && keywords.has('stream')) {
      const k = devKey(fn.childForFieldName('object'));
      if (k) {
        op.writes.add(k);
        op.uses.add(k);
      }
    } else if (matchesVocab(path, vocab.d2h_async_calls) || (name === 'get' && keywords.has('stream'))) {
      const k = devKey(name === 'get' ? fn?.childForFieldName('object') : positional[0]);
      if (k) op.uses.add(k);
    } else continue;
    op.stream = streamAt(call);
    add(op);
  }
  // CuPy work: assignments write their target, and every device array they mention is read.
  for (const o of m.gpuOps) {
    let stmt: SyntaxNode = o.node;
    while (stmt.parent && !['expression_statement', 'block', 'module'].includes(stmt.parent.type) && !['assignment', 'augmented_assignment'].includes(stmt.type)) stmt = stmt.parent;
    if (seen.has(o.node.id) || seen.has(stmt.id)) continue;
    const op: Op = { node: stmt, stream: streamAt(o.node), writes: new Set(), uses: new Set() };
    if (o.kind === 'kernel-call' && stmt.id === o.node.id) {
      // `kernel((grid,), (block,), (d_in, d_out, n))`: as for launches, the sole buffer or an output-named one is written.
      const args = unparen(pyArgs(o.node).positional[2] ?? null);
      const bufs = args?.type === 'tuple' || args?.type === 'list' ? args.namedChildren.map(devKey).filter((k): k is string => !!k) : [];
      for (const k of bufs) {
        op.uses.add(k);
        if (bufs.length === 1 || OUTPUT_NAME.test(k.replace(/^self\./, ''))) op.writes.add(k);
      }
    } else if (stmt.type === 'assignment' || stmt.type === 'augmented_assignment') {
      const left = stmt.childForFieldName('left');
      const target = left?.type === 'subscript' ? left.childForFieldName('value') : left;
      if (target && (target.type === 'identifier' || target.type === 'attribute')) op.writes.add(bufferKey(target.text));
      for (const k of deviceNames(stmt.childForFieldName('right'))) op.uses.add(k);
      if (stmt.type === 'augmented_assignment' || left?.type === 'subscript') for (const k of op.writes) op.uses.add(k);
    } else {
      for (const k of deviceNames(o.node)) op.uses.add(k);
      const out = o.node.type === 'call' ? devKey(pyArgs(o.node).keywords.get('out')) : null;
      if (out) op.writes.add(out);
    }
    add(op);
  }
  const helpers = syncHelperCalls(ctx.source.root, facts);
  const asyncNodes = new Set(facts.asyncD2H.map((d) => d.node.id));
  analyze(ctx, facts, ops, {
    flowsTo: (a, b) => m.flowsTo(a, b),
    norm: (t, at) => pyStreamOf(t, at, names),
    implicitSyncs: (stream, at) => {
      // A blocking read (`.get()`, `int(d)`) syncs CuPy's current stream; the legacy stream also waits for blocking streams.
      const blocking = stream === null || !streamDeclAt(facts, stream, at)?.nonBlocking;
      const reads = m.d2h.filter((d) => !asyncNodes.has(d.node.id)).filter((d) => {
        const on = pyContextStream(d.node, names);
        return streamKey(on) === streamKey(stream) || (on === null && blocking);
      });
      return [...helpers, ...reads.map((d) => d.node)];
    },
  });
}

export default defineCheck({
  id: 'sync/cross-stream-use-without-event',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['cuda', 'python'],
  citation: '003 §2.2 Stream-Ordered Memory Allocation ("Cross-stream reuse works when dependency established via cudaEventRecord/cudaStreamWaitEvent")',
  summary: 'Buffer written or allocated on one stream and used on another with no event dependency or sync between.',
  why: '003 §2.2: cross-stream reuse "works when dependency established via cudaEventRecord/cudaStreamWaitEvent"; without one the two streams run in any order, so the consumer can read the buffer before the producer wrote it (or before its stream-ordered allocation exists).',
  messages: {
    crossStream: 'Buffer `{{buf}}` produced or allocated on {{from}} (`{{producer}}`) is used on {{to}} by `{{code}}` without an event dependency.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'python') python(ctx);
        else if (ctx.source.language === 'cuda') cuda(ctx);
      },
    };
  },
});

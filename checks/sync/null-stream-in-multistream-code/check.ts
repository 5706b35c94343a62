import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { cppFlowsTo, enclosingClass, functionName, hostFunctionOf, loopsAround, pyStatement, unconditionalWithin } from '../../../src/analysis/flow.js';
import { pythonModel } from '../../../src/analysis/python.js';
import {
  bufferUsedOnlyOnStream,
  hostSyncBetween,
  pyContextStream,
  pyStreamOf,
  streamDeclAt,
  streamFacts,
  streamKey,
  streamText,
  syncHelperCalls,
  type StreamFacts,
} from '../../../src/analysis/streams.js';
import { contains, lastName, pyArgs, quote } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

interface Op {
  node: SyntaxNode;
  /** null = legacy default stream. */
  stream: string | null;
}

interface Lang {
  flowsTo(a: SyntaxNode, b: SyntaxNode): boolean;
  norm(text: string, at: SyntaxNode): string | null;
  helpers: SyntaxNode[];
  /** Statement-level de-duplication key (one finding per Python statement). */
  statement(n: SyntaxNode): SyntaxNode;
  fix(op: Op, fnOps: Op[]): FixSpec;
  /** The stream a function is handed by contract (a stream-typed parameter), if any. */
  givenStream?(fn: SyntaxNode): string | null;
  /** `Cls` for an out-of-line member `Cls::f` whose class is not defined in the file. */
  memberScope?(fn: SyntaxNode): string | null;
  /** Free functions of the file share one stream convention. */
  fileScope?: boolean;
}

const label = (streams: string[]) => (streams.length === 1 ? `stream \`${streams[0]}\`` : `streams ${streams.map((s) => `\`${s}\``).join(', ')}`);

/**
 * Work on the legacy default stream waits for all earlier work of every blocking stream, and later
 * blocking-stream work waits for it (003 §2.3 "Default stream serialization"). It costs overlap only
 * when work on another stream can be in flight at the same time: not separated by a host sync.
 */
function concurrent(facts: StreamFacts, lang: Lang, x: Op, y: Op): boolean {
  if (y.node.startIndex < x.node.startIndex) {
    if (lang.flowsTo(y.node, x.node) && !hostSyncBetween(facts, y.node, x.node, y.stream, lang.norm, lang.helpers)) return true;
  } else if (lang.flowsTo(x.node, y.node) && !hostSyncBetween(facts, x.node, y.node, null, lang.norm, lang.helpers)) return true;
  // Round a loop: the other stream's work of one iteration overlaps this operation in the next.
  const loop = loopsAround(x.node).find((l) => contains(l, y.node));
  if (loop && y.node.startIndex > x.node.startIndex && !hostSyncBetween(facts, y.node, x.node, y.stream, lang.norm, lang.helpers)) return true;
  return false;
}

function analyze(ctx: CheckContext, facts: StreamFacts, ops: Op[], lang: Lang): void {
  const setup = ctx.config.setupFunctions;
  const nonBlocking = (op: Op) => !!streamDeclAt(facts, op.stream, op.node)?.nonBlocking;
  const byFn = new Map<number, Op[]>();
  const fnOf = (n: SyntaxNode) => hostFunctionOf(n);
  for (const op of ops) {
    const fn = fnOf(op.node);
    if (!fn) continue;
    const list = byFn.get(fn.id) ?? [];
    list.push(op);
    byFn.set(fn.id, list);
  }
  const seen = new Set<number>();
  for (const op of ops) {
    if (op.stream !== null) continue;
    const fn = fnOf(op.node);
    if (!fn) continue;
    const mine = byFn.get(fn.id) ?? [];
    let others = mine.filter((o) => o.stream !== null);
    const outside = others.length === 0;
    let classScope = false;
    let inFlight: Op[];
    if (!outside) {
      inFlight = others.filter((y) => concurrent(facts, lang, op, y));
    } else {
      if (setup.test(functionName(fn))) continue;
      const given = lang.givenStream?.(fn) ?? null;
      const cls = enclosingClass(fn);
      const scope = cls ? null : lang.memberScope?.(fn) ?? null;
      if (given) {
        // The function is handed a stream and queues this work on the legacy stream instead.
        others = [{ node: fn, stream: given }];
      } else if (cls) {
        // A member function on the default stream while other members of the class queue work on a stream.
        others = ops.filter((o) => o.stream !== null && enclosingClass(o.node)?.id === cls.id);
        classScope = true;
      } else if (scope) {
        // An out-of-line member whose class is declared elsewhere: the other members defined here.
        others = ops.filter((o) => o.stream !== null && lang.memberScope?.(fnOf(o.node)!) === scope);
      } else if (lang.fileScope && functionName(fn) !== 'main') {
        // A free launcher of a library whose other launchers all take the caller's stream.
        others = ops.filter((o) => o.stream !== null && !lang.memberScope?.(fnOf(o.node)!) && !enclosingClass(o.node) && functionName(fnOf(o.node)!) !== 'main');
      } else continue;
      const body = fn.childForFieldName('body');
      const drained = body && [...facts.syncs, ...facts.polls].some((s) => s.scope === 'device' && fnOf(s.node)?.id === fn.id && s.node.endIndex <= op.node.startIndex && unconditionalWithin(s.node, body));
      inFlight = drained ? [] : others;
    }
    // The legacy stream does not synchronize with streams created cudaStreamNonBlocking / non_blocking=True.
    inFlight = inFlight.filter((y) => !nonBlocking(y));
    if (!inFlight.length) continue;
    // One finding per statement; for a member function that only inherits the class's streams, one per
    // function (the fix, queuing the function's work on the class's stream, is the same for all of it).
    const stmt = classScope ? fn : lang.statement(op.node);
    if (seen.has(stmt.id)) continue;
    seen.add(stmt.id);
    const streams = [...new Set(inFlight.map((o) => o.stream!))];
    ctx.report({
      node: op.node,
      messageId: 'nullStream',
      data: { code: quote(op.node), streams: label(streams) },
      fix: lang.fix(op, mine),
    });
  }
}

// ---------------------------------------------------------------------------------------------
// CUDA C++

const PER_THREAD_BUILD = /CUDA_API_PER_THREAD_DEFAULT_STREAM|--default-stream[= ]per-thread/;

function cuda(ctx: CheckContext): void {
  if (PER_THREAD_BUILD.test(ctx.source.text)) return;
  const cm = ctx.get(cudaModel);
  if (cm.testOrBench) return;
  const facts = ctx.get(streamFacts);
  const ops: Op[] = facts.uses.filter((u) => !cm.inDeviceCode(u.node)).map((u) => ({ node: u.node, stream: u.stream }));
  const seen = new Set(ops.map((o) => o.node.id));
  for (const c of cm.calls) {
    if (seen.has(c.node.id) || !/^thrust::/.test(c.path) || cm.inDeviceCode(c.node)) continue;
    // `thrust::sort(thrust::device, ...)` runs on the default stream; `thrust::cuda::par.on(s)` on `s`.
    const policy = c.args[0]?.text.replace(/\s+/g, '') ?? '';
    const on = /\.on\((.+)\)$/.exec(policy);
    if (on) ops.push({ node: c.node, stream: streamText({ text: on[1] } as SyntaxNode) });
    else if (/^thrust::(device|cuda::par|cuda::par_nosync)$/.test(policy)) ops.push({ node: c.node, stream: null });
  }
  ops.sort((a, b) => a.node.startIndex - b.node.startIndex);
  analyze(ctx, facts, ops, {
    flowsTo: cppFlowsTo,
    norm: (t) => streamText({ text: t } as SyntaxNode),
    helpers: syncHelperCalls(ctx.source.root, facts),
    statement: (n) => n,
    fix: (op, fnOps) => cppFix(ctx, cm, facts, op, fnOps),
    givenStream: (fn) => {
      const f = cm.functionOf(fn.childForFieldName('body') ?? fn);
      if (!f || f.node.id !== fn.id || cm.streamContract(f) !== 'param') return null;
      const names = cm.streamNames(f);
      const p = f.params.map((x) => x.childForFieldName('declarator')?.text.replace(/^[&*\s]+/, '') ?? '').find((n) => names.has(n));
      return p ?? null;
    },
    memberScope: (fn) => {
      let d = fn.childForFieldName('declarator');
      while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren.find((c) => c.type.endsWith('declarator')) ?? null;
      const name = d?.childForFieldName('declarator');
      return name?.type === 'qualified_identifier' ? (name.childForFieldName('scope')?.text ?? null) : null;
    },
    fileScope: true,
  });
}

const DESCRIPTION = 'Queue it on the working stream (`<<<g, b, smem, stream>>>`, `cudaMemcpyAsync(..., stream)`, `with stream:`), or order it with an event.';

/**
 * `k<<<g, b>>>(...)` → `k<<<g, b, 0, s>>>(...)` (catalog: a launch with 2 or 3 configuration
 * arguments, with a stream variable in scope). Made strict: the function works on exactly one stream,
 * and the kernel's pointer arguments are used elsewhere in the function only on that stream.
 */
function cppFix(ctx: CheckContext, cm: CudaModel, facts: StreamFacts, op: Op, fnOps: Op[]): FixSpec {
  const launch = cm.launches.find((l) => l.node.id === op.node.id && l.kind === 'chevron');
  const chevron = op.node.namedChildren.find((c) => c.type === 'kernel_call_syntax');
  const fn = cm.functionOf(op.node);
  if (!launch || !chevron || !fn || launch.stream || !launch.block) return { description: DESCRIPTION };
  const candidates = new Set<string>();
  for (const o of fnOps) if (o.stream !== null) candidates.add(streamKey(o.stream)!);
  for (const d of facts.streams) if (contains(fn.node, d.node)) candidates.add(streamKey(d.name)!);
  for (const p of fn.params) if (/\bcudaStream_t\b|\bCUstream\b/.test(p.text)) candidates.add(p.childForFieldName('declarator')?.text ?? '');
  const cls = candidates.size ? null : enclosingClass(fn.node);
  // A member function of a class that keeps one stream member works on that stream.
  for (const f of cls?.childForFieldName('body')?.namedChildren ?? []) {
    if (f.type === 'field_declaration' && /\bcudaStream_t\b|\bCUstream\b/.test(f.childForFieldName('type')?.text ?? '')) for (const id of f.descendantsOfType('field_identifier')) candidates.add(id.text);
  }
  if (candidates.size !== 1) return { description: DESCRIPTION };
  const s = [...candidates][0];
  if (!/^[A-Za-z_]\w*$/.test(s) || s === 'cudaStreamPerThread') return { description: DESCRIPTION };
  for (const a of launch.args) {
    const id = a.type === 'identifier' ? a.text : null;
    if (!id) continue;
    const elsewhere = fn.node.descendantsOfType('identifier').some((i) => i.text === id && !contains(op.node, i) && !fn.params.some((p) => contains(p, i)));
    if (elsewhere && !bufferUsedOnlyOnStream(cm, fn.node, id, s, [op.node])) return { description: DESCRIPTION };
  }
  const cfg = chevron.namedChildren.filter((c) => c.type !== 'comment');
  const last = cfg[cfg.length - 1];
  const lines = ctx.linesOf(op.node, chevron);
  const base = op.node.startIndex - op.node.startPosition.column;
  const at = last.endIndex - base;
  if (lines.slice(last.startIndex - base, at) !== last.text) return { description: DESCRIPTION };
  const text = lines.slice(0, at) + (cfg.length === 2 ? `, 0, ${s}` : `, ${s}`) + lines.slice(at);
  return { description: DESCRIPTION, replace: { from: op.node, to: chevron, text } };
}

// ---------------------------------------------------------------------------------------------
// Python (CuPy, cuda-python, vibeSpatial runtime)

// CuPy creators that run a kernel or a copy on the current stream (`cp.empty` only reserves memory).
const KERNEL_ALLOCS = /^(zeros|ones|full|arange|linspace|zeros_like|ones_like|full_like|asarray|array|ascontiguousarray|copy)$/;

function python(ctx: CheckContext): void {
  if (/CUPY_CUDA_PER_THREAD_DEFAULT_STREAM/.test(ctx.source.text)) return;
  const m = ctx.get(pythonModel);
  if (m.testOrBench) return;
  const facts = ctx.get(streamFacts);
  const names = new Set(facts.streams.map((d) => d.name));
  const used = new Map(facts.uses.map((u) => [u.node.id, u.stream]));
  const vocab = ctx.config.vocab;
  const nodes = [
    ...m.gpuOps.map((o) => o.node),
    ...m.allocs.filter((a) => KERNEL_ALLOCS.test(lastName(m.callPath(a)) ?? '') && vocab.device_modules.some((d) => (m.callPath(a) ?? '').startsWith(d + '.'))),
  ];
  const ops: Op[] = [];
  const seen = new Set<number>();
  for (const n of nodes) {
    if (seen.has(n.id) || m.debugGated(n)) continue;
    seen.add(n.id);
    let stream: string | null;
    if (used.has(n.id)) stream = used.get(n.id)!;
    else {
      const kw = n.type === 'call' ? pyArgs(n).keywords.get('stream') : undefined;
      stream = kw ? pyStreamOf(kw.text, n, names) : pyContextStream(n, names);
    }
    // CuPy's per-thread default stream is not the legacy stream.
    if (stream === 'ptds') continue;
    ops.push({ node: n, stream });
  }
  // A call we cannot classify (a kernel passed in as an argument) that takes device arrays inside
  // `with stream:` is work queued on that stream.
  for (const call of ctx.source.root.descendantsOfType('call')) {
    if (seen.has(call.id) || !m.deviceArgsOf(call).length) continue;
    const stream = pyContextStream(call, names);
    if (stream !== null && stream !== 'ptds') ops.push({ node: call, stream });
  }
  ops.sort((a, b) => a.node.startIndex - b.node.startIndex);
  analyze(ctx, facts, ops, {
    flowsTo: (a, b) => m.flowsTo(a, b),
    norm: (t, at) => pyStreamOf(t, at, names),
    helpers: syncHelperCalls(ctx.source.root, facts),
    statement: pyStatement,
    fix: () => ({ description: DESCRIPTION }),
  });
}

export default defineCheck({
  id: 'sync/null-stream-in-multistream-code',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  citation: '003 §2.3 (Default stream serialization); 003 §2.4 (row "Any operation on the null/default stream: Serializes all streams")',
  summary: 'Operation on the legacy default stream while work on other streams can be in flight.',
  why: '003 §2.3: any operation on the null stream "blocks until ALL operations on ALL other streams complete, and no subsequent operation on any stream begins until it finishes", which undoes the overlap the streams were created for (003 §2.4: "Serializes all streams").',
  messages: {
    nullStream: 'Operation `{{code}}` on the legacy default stream in code that also uses {{streams}}: it waits for and blocks every stream.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'python') python(ctx);
        else if (ctx.source.language === 'cuda') cuda(ctx);
      },
    };
  },
});

import { hostFunctionOf, pyStatement } from '../../../src/analysis/flow.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { hostSyncBetween, pyContextStream, pyStreamOf, pyWithItems, streamDeclAt, streamFacts, syncHelperCalls } from '../../../src/analysis/streams.js';
import { calleePath, lastName, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

// CuPy's wrappers for a stream it did not create: `cp.cuda.ExternalStream(ptr)` (CuPy < 14) and
// `cp.cuda.Stream.from_external(obj)` (CuPy >= 14; catalog §6 I-22).
const EXTERNAL_WRAPPER = /(^|\.)(ExternalStream|from_external)$/;
// Streams CuPy owns: CuPy ops belong inside `with s:`, which `sync/null-stream-in-multistream-code` covers.
const CUPY_STREAM = /(^|\.)(cp|cupy)\.cuda\.Stream$|(^|\.)(ExternalStream|from_external)$/;
// Array helpers that read only shape and dtype of their argument, never its data.
const METADATA_ONLY = /^(empty|empty_like|zeros_like|ones_like|full_like|shape|size|ndim|result_type|get_array_module)$/;
const NO_DATA_ATTRS = new Set(['shape', 'size', 'ndim', 'dtype', 'nbytes', 'strides', 'itemsize', 'flags']);

interface Launch {
  node: SyntaxNode;
  stream: string;
  streamText: string;
  arrays: Set<string>;
}

/** Device arrays an expression hands to a kernel or touches: `d_e`, `d_e.data.ptr`, `self.d_buf`. */
function arraysIn(m: PyModel, e: SyntaxNode | null | undefined, scope: SyntaxNode | null, depth = 0): Set<string> {
  const out = new Set<string>();
  if (!e) return out;
  for (const n of [e, ...e.descendantsOfType(['identifier', 'attribute'])]) {
    if (n.type !== 'identifier' && n.type !== 'attribute') continue;
    const parent = n.parent;
    if (n.type === 'identifier' && parent?.type === 'attribute' && parent.childForFieldName('object')?.id !== n.id) continue;
    if (n.type === 'identifier' && parent?.type === 'keyword_argument' && parent.childForFieldName('name')?.id === n.id) continue;
    if (parent?.type === 'attribute' && NO_DATA_ATTRS.has(parent.childForFieldName('attribute')?.text ?? '')) continue;
    if (n.type === 'attribute' && !/^self\.\w+$/.test(n.text)) continue;
    if (m.isDevice(n) || /^d_|^self\.d_/.test(n.text)) out.add(n.text);
  }
  // `params = (d_e.data.ptr, n)`; `args = (params, types)` built before `cuLaunchKernel(..., args, 0)`.
  if (scope && depth < 3) {
    for (const id of [e, ...e.descendantsOfType('identifier')]) {
      if (id.type !== 'identifier' || out.has(id.text)) continue;
      const last = m.assignmentsIn(scope).get(id.text)?.filter((a) => a.node.startIndex < id.startIndex).pop();
      if (last && last.value.type !== 'assignment') for (const a of arraysIn(m, last.value, scope, depth + 1)) out.add(a);
    }
  }
  return out;
}

function check(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const facts = ctx.get(streamFacts);
  const names = new Set(facts.streams.map((d) => d.name));
  const helpers = syncHelperCalls(ctx.source.root, facts);
  const norm = (t: string, at: SyntaxNode) => pyStreamOf(t, at, names);

  /** Names (in the launch's function) that a `with X:` or `X.use()` treats as a CuPy stream object. */
  const cupyStreamsIn = (fn: SyntaxNode | null): Set<string> => {
    const out = new Set<string>();
    if (!fn) return out;
    for (const w of fn.descendantsOfType('with_statement')) for (const item of pyWithItems(w)) if (item.type === 'identifier' || item.type === 'attribute') out.add(item.text);
    for (const c of fn.descendantsOfType('call')) {
      const f = c.childForFieldName('function');
      const obj = f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'use' ? f.childForFieldName('object') : null;
      if (obj) out.add(obj.text);
    }
    return out;
  };

  // Launches and copies queued by cuda-python / the runtime on an explicit stream CuPy does not own.
  const launches: Launch[] = [];
  for (const u of facts.uses) {
    if (u.stream === null || u.kind === 'alloc' || u.kind === 'free' || u.node.type !== 'call') continue;
    const { positional, keywords } = pyArgs(u.node);
    const name = lastName(m.callPath(u.node)) ?? '';
    const streamArg = keywords.get('stream') ?? keywords.get('hStream') ?? (name === 'cuLaunchKernel' || name === 'cuLaunchCooperativeKernel' ? positional[8] : /^cuda/.test(name) ? positional[positional.length - 1] : undefined);
    if (!streamArg) continue; // queued on CuPy's current stream (`with s:`), not on an external one
    // `stream=s.ptr` names a CuPy stream's handle.
    if (/\.ptr$/.test(streamArg.text)) continue;
    const decl = streamDeclAt(facts, u.stream, u.node);
    const declPath = decl ? (calleePath(decl.node.childForFieldName('function')) ?? '') : '';
    if (CUPY_STREAM.test(declPath)) continue;
    const fn = hostFunctionOf(u.node);
    if (!decl && cupyStreamsIn(fn).has(u.stream)) continue;
    const arrays = new Set<string>();
    for (const a of [...positional.slice(1), ...keywords.values()]) if (a.id !== streamArg.id) for (const x of arraysIn(m, unparen(a), fn)) arrays.add(x);
    if (arrays.size) launches.push({ node: u.node, stream: u.stream, streamText: streamArg.text, arrays });
  }
  if (!launches.length) return;

  /** `with cp.cuda.Stream.from_external(s):` / `with xs:` where `xs = cp.cuda.ExternalStream(ptr)`, or after `xs.use()`. */
  const external = (n: SyntaxNode): boolean => {
    const s = pyContextStream(n, names);
    if (s === null) return false;
    const fn = hostFunctionOf(n);
    const call = (t: string) => /^[\w.]+\(/.test(t) && EXTERNAL_WRAPPER.test(t.slice(0, t.indexOf('(')));
    if (call(s)) return true;
    const bound = fn ? m.assignmentsIn(fn).get(s) : undefined;
    if (bound?.some((a) => a.value.type === 'call' && EXTERNAL_WRAPPER.test(m.callPath(a.value) ?? ''))) return true;
    const decl = streamDeclAt(facts, s, n);
    return !!decl && EXTERNAL_WRAPPER.test(calleePath(decl.node.childForFieldName('function')) ?? '');
  };

  // CuPy operations (kernels, operators, in-place updates, reads back to the host) on CuPy's current stream.
  const launchIds = new Set(launches.map((l) => l.node.id));
  const candidates: Array<{ node: SyntaxNode; arrays: Set<string> }> = [];
  for (const o of m.gpuOps) {
    if (launchIds.has(o.node.id) || !['cupy', 'operator', 'method', 'kernel-call'].includes(o.kind)) continue;
    if (o.node.type === 'call' && (METADATA_ONLY.test(lastName(m.callPath(o.node)) ?? '') || pyArgs(o.node).keywords.has('stream'))) continue;
    const left = o.node.type === 'assignment' || o.node.type === 'augmented_assignment' ? o.node.childForFieldName('left') : null;
    const arrays = arraysIn(m, o.node, null);
    if (left) for (const a of arraysIn(m, left, null)) arrays.add(a);
    candidates.push({ node: o.node, arrays });
  }
  for (const d of m.d2h) {
    if (d.node.type !== 'call' || pyArgs(d.node).keywords.has('stream')) continue;
    candidates.push({ node: d.node, arrays: arraysIn(m, d.target, null) });
  }
  candidates.sort((a, b) => a.node.startIndex - b.node.startIndex);

  const reported = new Set<number>();
  for (const c of candidates) {
    if (external(c.node)) continue;
    const fn = hostFunctionOf(c.node);
    const hit = launches.find((l) => {
      if (hostFunctionOf(l.node)?.id !== fn?.id || ![...l.arrays].some((a) => c.arrays.has(a))) return false;
      // A host sync between them drains the earlier one: no overlap, no reordering left to fix.
      if (l.node.endIndex <= c.node.startIndex) return m.flowsTo(l.node, c.node) && !hostSyncBetween(facts, l.node, c.node, l.stream, norm, helpers);
      return m.flowsTo(c.node, l.node) && !hostSyncBetween(facts, c.node, l.node, pyContextStream(c.node, names), norm, helpers);
    });
    if (!hit) continue;
    const stmt = pyStatement(c.node);
    if (reported.has(stmt.id)) continue;
    reported.add(stmt.id);
    ctx.report({
      node: c.node,
      messageId: 'outside',
      data: { code: quote(c.node), launch: quote(hit.node), stream: hit.streamText },
      fix: { description: `Wrap the CuPy code in \`with cp.cuda.Stream.from_external(${hit.streamText}):\` (CuPy >= 14) or \`with cp.cuda.ExternalStream(int(${hit.streamText})):\` (older CuPy), so it is queued on the same stream as the launch.` },
    });
  }
}

export default defineCheck({
  id: 'sync/cupy-ops-outside-external-stream',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['python'],
  citation: '003 §8.3 Unnecessary Copies Between CuPy and cuda-python ("Stream interop: Use cupy.cuda.Stream.from_external() when mixing CuPy and cuda-python stream contexts")',
  summary: 'CuPy operations on arrays that cuda-python launches use on another stream, outside an external-stream wrapper.',
  why: '003 §8.3 asks for cupy.cuda.Stream.from_external() when CuPy and cuda-python share data: CuPy queues on its own current stream, so against the launch stream its work is either serialized through the legacy default stream or, with a non-blocking stream, unordered (a race).',
  messages: {
    outside: 'CuPy operation `{{code}}` runs on CuPy\'s current stream while the surrounding cuda-python launch `{{launch}}` uses stream `{{stream}}`; wrap the stream for CuPy.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'python') check(ctx);
      },
    };
  },
});

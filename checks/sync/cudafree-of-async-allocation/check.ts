import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { cppFlowsTo, enclosingClass, hostFunctionOf, loopsAround, unconditionalWithin } from '../../../src/analysis/flow.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { bufferKey, bufferUsedOnlyOnStream, cppBufferBase, hostSyncBetween, pyBoundName, pyStreamOf, streamFacts, type StreamFacts, streamKey, streamLabel, streamText, syncHelperCalls } from '../../../src/analysis/streams.js';
import { calleePath, contains, lastName, matchesVocab, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

interface Alloc {
  node: SyntaxNode;
  key: string;
  /** Stream argument as written (kept verbatim for the suggested `cudaFreeAsync`). */
  streamNode: SyntaxNode | null;
  stream: string | null;
  async: boolean;
}

interface Free {
  node: SyntaxNode;
  key: string;
  arg: SyntaxNode;
}

/** `cudaFree` → `cudaFreeAsync`, `cuMemFree` → `cuMemFreeAsync`, CuPy `runtime.free` → `runtime.freeAsync`. */
function asyncName(path: string): string {
  const name = lastName(path) ?? path;
  const head = path.slice(0, path.length - name.length);
  const base = name.replace(/_v2$/, '');
  return head + (base === 'free' ? 'freeAsync' : `${base}Async`);
}

/** Replace the free call inside its line(s), keeping wrappers (`CUDA_CHECK(...)`) and trailing comments. */
function rewrite(ctx: CheckContext, free: Free, stream: string): FixSpec {
  const description = `Free it in stream order: \`${asyncName(calleePath(free.node.childForFieldName('function')) ?? 'cudaFree')}(${free.arg.text}, ${stream})\`, or synchronize the allocation's stream first.`;
  const lines = ctx.linesOf(free.node);
  const col = free.node.startPosition.column;
  if (lines.slice(col, col + free.node.text.length) !== free.node.text) return { description };
  const path = calleePath(free.node.childForFieldName('function')) ?? '';
  const call = `${asyncName(free.node.childForFieldName('function')?.text ?? path)}(${free.arg.text}, ${stream})`;
  return { description, replace: { from: free.node, text: lines.slice(0, col) + call + lines.slice(col + free.node.text.length) } };
}

function report(ctx: CheckContext, free: Free, alloc: Alloc, fixStream: string | null): void {
  ctx.report({
    node: free.node,
    messageId: 'unsyncedFree',
    data: { code: quote(free.node), alloc: quote(alloc.node), stream: streamLabel(alloc.stream) },
    fix: fixStream
      ? rewrite(ctx, free, fixStream)
      : { description: `Free it in stream order with the ${/cuMem/.test(free.node.text) ? 'cuMemFreeAsync' : 'cudaFreeAsync'} of the allocation's stream, or synchronize that stream before the free.` },
  });
}

/**
 * Pair each free with the allocation of the same pointer that reaches it: the last allocation before
 * it in the same function; else, for a class member, a stream-ordered allocation in another method.
 */
function pairs(
  allocs: Alloc[],
  frees: Free[],
  flowsTo: (a: SyntaxNode, b: SyntaxNode) => boolean,
  classOf: (n: SyntaxNode) => SyntaxNode | null,
  isMember: (key: string, cls: SyntaxNode) => boolean,
  outlives: (key: string, fn: SyntaxNode) => boolean = () => false,
) {
  const out: Array<{ free: Free; alloc: Alloc; sameFunction: boolean }> = [];
  for (const free of frees) {
    const fn = hostFunctionOf(free.node);
    const local = allocs.filter((a) => a.key === free.key && hostFunctionOf(a.node)?.id === fn?.id && flowsTo(a.node, free.node));
    if (local.length) {
      const last = local[local.length - 1];
      if (last.async) out.push({ free, alloc: last, sameFunction: true });
      continue;
    }
    // Re-entry: `if (buf_) free(buf_); allocAsync(&buf_, n, s);` frees what an earlier call of this
    // function allocated in stream order, when the pointer outlives the call (a member, a global).
    const later = fn && outlives(free.key, fn) ? allocs.find((a) => a.async && a.key === free.key && hostFunctionOf(a.node)?.id === fn.id && a.node.startIndex > free.node.endIndex) : undefined;
    if (later) {
      out.push({ free, alloc: later, sameFunction: false });
      continue;
    }
    const cls = classOf(free.node);
    if (!cls || !isMember(free.key, cls)) continue;
    const member = allocs.find((a) => a.async && a.key === free.key && classOf(a.node)?.id === cls.id);
    if (member) out.push({ free, alloc: member, sameFunction: false });
  }
  return out;
}

/** Streams that work on the pointer runs on between allocation and free (any of their syncs drains that work). */
function streamsTouching(facts: StreamFacts, alloc: Alloc, free: Free, mentions: (n: SyntaxNode) => boolean): Array<string | null> {
  const out = new Set<string | null>([alloc.stream]);
  for (const u of facts.uses) if (u.node.startIndex > alloc.node.endIndex && u.node.endIndex < free.node.startIndex && mentions(u.node)) out.add(u.stream);
  return [...out];
}

/** A sync in the freeing function that always runs before the free (for frees in another method than the allocation). */
function syncedBeforeInFunction(facts: StreamFacts, free: Free, extra: SyntaxNode[]): boolean {
  const fn = hostFunctionOf(free.node);
  const body = fn?.childForFieldName('body');
  if (!fn || !body) return false;
  return [...facts.syncs.map((s) => s.node), ...facts.polls.map((s) => s.node), ...extra].some(
    (s) => hostFunctionOf(s)?.id === fn.id && s.endIndex <= free.node.startIndex && unconditionalWithin(s, body),
  );
}

// ---------------------------------------------------------------------------------------------
// CUDA C++

function cppMembers(cls: SyntaxNode): Set<string> {
  const out = new Set<string>();
  for (const f of cls.childForFieldName('body')?.namedChildren ?? []) {
    if (f.type !== 'field_declaration') continue;
    for (const id of f.descendantsOfType('field_identifier')) out.add(id.text);
  }
  return out;
}

function cuda(ctx: CheckContext): void {
  const cm = ctx.get(cudaModel);
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  const root = ctx.source.root;
  const allocs: Alloc[] = [];
  const frees: Free[] = [];
  for (const c of cm.calls) {
    if (cm.inDeviceCode(c.node)) continue;
    const asyncAlloc = matchesVocab(c.path, vocab.async_alloc_calls);
    if (asyncAlloc || (matchesVocab(c.path, vocab.alloc_calls) && /[Mm]alloc|MemAlloc/.test(c.name))) {
      const base = cppBufferBase(c.args[0]);
      if (!base) continue;
      const at = /FromPool/.test(c.name) ? 3 : 2;
      allocs.push({ node: c.node, key: bufferKey(base.text), streamNode: asyncAlloc ? (c.args[at] ?? null) : null, stream: asyncAlloc ? streamText(c.args[at] ?? null) : null, async: asyncAlloc });
    } else if (matchesVocab(c.path, vocab.raw_free_calls) && c.args[0]) {
      const base = cppBufferBase(c.args[0]);
      if (base) frees.push({ node: c.node, key: bufferKey(base.text), arg: c.args[0] });
    }
  }
  const helpers = syncHelperCalls(root, facts);
  const norm = (t: string) => streamText({ text: t } as SyntaxNode);
  for (const { free, alloc, sameFunction } of pairs(allocs, frees, cppFlowsTo, (n) => enclosingClass(n), (key, cls) => cppMembers(cls).has(key), (key, fn) => !declaredIn(fn, key))) {
    const mentions = (n: SyntaxNode) => n.descendantsOfType(['identifier', 'field_expression']).some((i) => bufferKey(i.text) === free.key);
    if (sameFunction) {
      const streams = streamsTouching(facts, alloc, free, mentions);
      if (streams.some((s) => hostSyncBetween(facts, alloc.node, free.node, s, norm, helpers))) continue;
    } else if (syncedBeforeInFunction(facts, free, helpers)) continue;
    report(ctx, free, alloc, cppFixStream(cm, alloc, free, sameFunction));
  }
}

/** `key` is a local or a parameter of C++ function `fn` (so it dies with the call). */
function declaredIn(fn: SyntaxNode, key: string): boolean {
  if (/[.>]/.test(key)) return false;
  return fn.descendantsOfType(['init_declarator', 'parameter_declaration', 'declaration']).some((d) => {
    const decl = d.type === 'init_declarator' ? d.childForFieldName('declarator') : d.childForFieldName('declarator');
    return !!decl && decl.descendantsOfType('identifier').concat(decl.type === 'identifier' ? [decl] : []).some((i) => i.text === key);
  });
}

/** The allocation's stream, when the suggested `cudaFreeAsync(p, s)` can name it and every use of `p` runs on it. */
function cppFixStream(cm: CudaModel, alloc: Alloc, free: Free, sameFunction: boolean): string | null {
  const s = alloc.streamNode?.text.replace(/\s+/g, '');
  if (!s || alloc.stream === null || !/^[\w.>-]+$/.test(s)) return null;
  const except = [alloc.node, free.node];
  const name = free.key.replace(/^.*(\.|->)/, '');
  if (sameFunction) {
    const fn = cm.functionOf(free.node);
    if (!fn || loopsAround(alloc.node)[0]?.id !== loopsAround(free.node)[0]?.id) return null;
    return bufferUsedOnlyOnStream(cm, fn.node, name, s, except) ? s : null;
  }
  // A member freed in another method: the stream must be a member too, and every method that uses the buffer uses it on that stream.
  const cls = enclosingClass(free.node);
  if (!cls || !cppMembers(cls).has(s.replace(/^this->/, ''))) return null;
  const methods = cm.functions.filter((f) => f.isHost && enclosingClass(f.body ?? f.node)?.id === cls.id && f.body && f.body.descendantsOfType(['identifier', 'field_identifier']).some((i) => i.text === name));
  return methods.every((f) => f.node.descendantsOfType('call_expression').every((c) => except.some((e) => e.id === c.id) || !c.text.includes(name)) || bufferUsedOnlyOnStream(cm, f.node, name, s, except)) ? s : null;
}

// ---------------------------------------------------------------------------------------------
// Python (cuda-python, CuPy runtime bindings)

function pyAllocName(call: SyntaxNode): string | null {
  // `err, p = cudart.cudaMallocAsync(n, s)`, `p = cudart.cudaMallocAsync(n, s)[1]`, `p = cp.cuda.runtime.mallocAsync(n, s)`
  const bound = pyBoundName(call);
  if (bound) return bound;
  const sub = call.parent;
  if (sub?.type === 'subscript' && sub.parent?.type === 'assignment' && sub.parent.childForFieldName('right')?.id === sub.id) return sub.parent.childForFieldName('left')?.text ?? null;
  return null;
}

function python(ctx: CheckContext): void {
  const m: PyModel = ctx.get(pythonModel);
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  const names = new Set(facts.streams.map((d) => d.name));
  const allocs: Alloc[] = [];
  const frees: Free[] = [];
  for (const call of ctx.source.root.descendantsOfType('call')) {
    const name = lastName(m.callPath(call)) ?? '';
    if (!/[Aa]lloc|[Ff]ree/.test(name)) continue;
    const asyncAlloc = m.callMatches(call, vocab.async_alloc_calls);
    const { positional, keywords } = pyArgs(call);
    if (asyncAlloc || (m.callMatches(call, vocab.alloc_calls) && /[Mm]alloc|MemAlloc/.test(name))) {
      const ptr = pyAllocName(call);
      if (!ptr) continue;
      const streamNode = asyncAlloc ? (keywords.get('stream') ?? keywords.get('hStream') ?? positional[/FromPool/.test(name) ? 2 : 1] ?? null) : null;
      allocs.push({ node: call, key: bufferKey(ptr), streamNode, stream: streamNode ? pyStreamOf(streamNode.text, call, names) : null, async: asyncAlloc });
    } else if (m.callMatches(call, vocab.raw_free_calls) && positional[0]) {
      const arg = unparen(positional[0]);
      if (arg && (arg.type === 'identifier' || arg.type === 'attribute')) frees.push({ node: call, key: bufferKey(arg.text), arg });
    }
  }
  const helpers = syncHelperCalls(ctx.source.root, facts);
  const norm = (t: string, at: SyntaxNode) => pyStreamOf(t, at, names);
  const classOf = (n: SyntaxNode) => {
    for (let p = n.parent; p; p = p.parent) if (p.type === 'class_definition') return p;
    return null;
  };
  for (const { free, alloc, sameFunction } of pairs(allocs, frees, m.flowsTo, classOf, (key) => key.startsWith('self.'))) {
    const mentions = (n: SyntaxNode) => n.descendantsOfType(['identifier', 'attribute']).some((i) => bufferKey(i.text) === free.key);
    if (sameFunction) {
      const streams = streamsTouching(facts, alloc, free, mentions);
      if (streams.some((s) => hostSyncBetween(facts, alloc.node, free.node, s, norm, helpers))) continue;
    } else if (syncedBeforeInFunction(facts, free, helpers)) continue;
    let fixStream: string | null = null;
    const s = alloc.streamNode?.text;
    if (sameFunction && s && alloc.stream !== null && /^[\w.]+$/.test(s) && m.loopOf(alloc.node)?.id === m.loopOf(free.node)?.id) {
      // Every stream-ordered use of the pointer between allocation and free runs on the allocation's stream.
      const between = facts.uses.filter((u) => u.node.startIndex > alloc.node.endIndex && u.node.endIndex < free.node.startIndex && mentions(u.node));
      if (between.every((u) => streamKey(u.stream) === streamKey(alloc.stream)) && !contains(free.node, alloc.node)) fixStream = s;
    }
    report(ctx, free, alloc, fixStream);
  }
}

export default defineCheck({
  id: 'sync/cudafree-of-async-allocation',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  citation: '003 §1.4 Async Memory Pools (cudaMallocAsync), "Interoperability gotcha"',
  summary: 'cudaFree() of cudaMallocAsync memory with no sync of its stream before it.',
  why: '003 §1.4: "cudaFree() can free cudaMallocAsync memory but does NOT implicitly synchronize in that case — you MUST sync first", so a kernel still queued on the stream can touch memory that is already back in the pool.',
  messages: {
    unsyncedFree: '`{{code}}` frees memory from `{{alloc}}` without a sync: cudaFree() on memory from cudaMallocAsync does not synchronize; pending work on {{stream}} may still use it.',
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

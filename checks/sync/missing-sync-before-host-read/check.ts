import { cudaModel } from '../../../src/analysis/cuda.js';
import { cppFlowsTo, cppStatement, hostFunctionOf, loopsAround, pyStatement, sameFunction } from '../../../src/analysis/flow.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { type AsyncD2H, bufferKey, bufferOccurrences, cppHostAccess, type HostAccess, hostSyncBetween, pyContextStream, pyHostAccess, pyStreamOf, streamDeclAt, streamFacts, type StreamFacts, streamKey, streamLabel, streamText, syncHelperCalls } from '../../../src/analysis/streams.js';
import { calleePath, contains, pyArgs, quote } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

interface Lang {
  python: boolean;
  access(occ: SyntaxNode): HostAccess;
  flowsTo(a: SyntaxNode, b: SyntaxNode): boolean;
  norm(text: string, at: SyntaxNode): string | null;
  /** Host syncs the shared facts do not list: same-file helpers that always sync, and blocking legacy-stream transfers. */
  implicitSyncs(copy: AsyncD2H, nonBlocking: boolean): SyntaxNode[];
}

/** The read an occurrence belongs to, for the report: `h[0]` rather than `h`. */
function readExpr(occ: SyntaxNode): SyntaxNode {
  let cur = occ;
  while (cur.parent && (cur.parent.type === 'subscript' || cur.parent.type === 'subscript_expression') && (cur.parent.childForFieldName('value') ?? cur.parent.childForFieldName('argument'))?.id === cur.id) cur = cur.parent;
  if (cur.parent?.type === 'pointer_expression') cur = cur.parent;
  // `h.sum()`, `np.sum(h)`, `std::accumulate(h, h + n, 0.0)`: quote the call that reads it.
  const p = cur.parent;
  if ((p?.type === 'attribute' || p?.type === 'field_expression') && p.parent && /^call/.test(p.parent.type) && p.parent.childForFieldName('function')?.id === p.id) {
    cur = p.parent;
    if (cur.parent?.type !== 'argument_list') return cur;
  }
  const q = cur.parent;
  if (q?.type === 'argument_list' && q.parent && /^call/.test(q.parent.type)) return q.parent;
  return cur;
}

/** Reads of the buffer that `copy` filled and that no later copy or rebinding replaced, in path order. */
function readsAfter(copy: AsyncD2H, copies: AsyncD2H[], lang: Lang): SyntaxNode[] {
  const scope = hostFunctionOf(copy.node) ?? copy.node.tree.rootNode;
  const key = bufferKey(copy.host);
  const occs = bufferOccurrences(scope, key).filter((o) => sameFunction(o, copy.node) && !contains(copy.node, o));
  const accesses = occs.map((o) => ({ node: o, access: lang.access(o) }));
  const others = copies.filter((c) => c !== copy && bufferKey(c.host) === key && sameFunction(c.node, copy.node)).map((c) => c.node);
  const resets = accesses.filter((a) => a.access === 'rebind').map((a) => a.node).concat(others);
  const forward: SyntaxNode[] = [];
  const carried: SyntaxNode[] = [];
  for (const { node, access } of accesses) {
    if (access !== 'read') continue;
    if (node.startIndex >= copy.node.endIndex) {
      if (!lang.flowsTo(copy.node, node)) continue;
      if (resets.some((r) => r.startIndex >= copy.node.endIndex && r.endIndex <= node.startIndex)) continue;
      forward.push(node);
    } else {
      // The next iteration reads what this iteration's copy wrote.
      const loop = loopsAround(node).find((l) => contains(l, copy.node));
      if (!loop) continue;
      if (resets.some((r) => contains(loop, r) && (r.startIndex >= copy.node.endIndex || r.endIndex <= node.startIndex))) continue;
      carried.push(node);
    }
  }
  return [...forward, ...carried];
}

function check(ctx: CheckContext, facts: StreamFacts, lang: Lang): void {
  const reported = new Set<number>();
  for (const copy of facts.asyncD2H) {
    const nonBlocking = !!streamDeclAt(facts, copy.stream, copy.node)?.nonBlocking;
    const extra = lang.implicitSyncs(copy, nonBlocking);
    for (const read of readsAfter(copy, facts.asyncD2H, lang)) {
      if (hostSyncBetween(facts, copy.node, read, copy.stream, lang.norm, extra)) continue;
      const expr = readExpr(read);
      if (!reported.has(expr.id)) {
        reported.add(expr.id);
        ctx.report({
          node: expr,
          messageId: 'race',
          data: { host: copy.host, code: quote(expr), copy: quote(copy.node), stream: streamLabel(copy.stream) },
          fix: lang.python ? pyFix(ctx, copy, expr, facts) : cppFix(ctx, copy, expr),
        });
      }
      break; // one finding per copy: the first unsynchronized read
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Fixes: one synchronization line inserted right before the statement that first reads the buffer.

const DESCRIPTION = 'Synchronize the copy\'s stream (or wait on an event recorded after the copy) before the host reads the buffer.';

/** The statement starts its own line: inserting a line before it keeps every other statement in place. */
function startsLine(ctx: CheckContext, stmt: SyntaxNode): boolean {
  return /^\s*$/.test(ctx.linesOf(stmt).split('\n')[0].slice(0, stmt.startPosition.column));
}

function insertBefore(ctx: CheckContext, stmt: SyntaxNode, line: string): FixSpec {
  const text = ctx.linesOf(stmt);
  const indent = /^\s*/.exec(text)![0];
  return { description: DESCRIPTION, replace: { from: stmt, text: `${indent}${line}\n${text}` } };
}

function pyFix(ctx: CheckContext, copy: AsyncD2H, read: SyntaxNode, facts: StreamFacts): FixSpec {
  const stmt = pyStatement(read);
  if (copy.stream === null || !/^[\w.]+$/.test(copy.stream) || contains(stmt, copy.node) || !startsLine(ctx, stmt)) return { description: DESCRIPTION };
  if (!['block', 'module'].includes(stmt.parent?.type ?? '')) return { description: DESCRIPTION };
  const path = calleePath(copy.node.childForFieldName('function')) ?? '';
  const decl = facts.streams.find((d) => d.name === copy.stream);
  const declPath = decl ? (calleePath(decl.node.childForFieldName('function')) ?? '') : '';
  // A raw cuda-python handle has no `.synchronize()`: call the API the copy itself was spelled with.
  const rt = /^(.*)\.(cudaMemcpy\w*Async|cudaStreamCreate\w*)$/.exec(/cudart|runtime\.cuda/.test(path) ? path : declPath);
  const drv = /^(.*)\.(cuMemcpy\w*Async\w*|cuStreamCreate\w*)$/.exec(/DtoH/.test(path) ? path : declPath);
  const cupyRt = /^(.*\.cuda\.runtime)\.memcpyAsync$/.exec(path);
  const line = cupyRt
    ? `${cupyRt[1]}.streamSynchronize(${copy.stream})`
    : rt && /cudaMemcpy|cudaStreamCreate/.test(rt[2])
      ? `${rt[1]}.cudaStreamSynchronize(${copy.stream})`
      : drv
        ? `${drv[1]}.cuStreamSynchronize(${copy.stream})`
        : `${copy.stream}.synchronize()`;
  return insertBefore(ctx, stmt, line);
}

function cppFix(ctx: CheckContext, copy: AsyncD2H, read: SyntaxNode): FixSpec {
  const stmt = cppStatement(read);
  if (contains(stmt, copy.node) || stmt.parent?.type !== 'compound_statement' || !startsLine(ctx, stmt)) return { description: DESCRIPTION };
  const s = copy.streamNode?.text.trim() ?? '0';
  // A stream picked per iteration (`streams[i]`) names another stream once the loop has moved on.
  if (!/^[\w.>-]+$/.test(s) && loopsAround(read)[0]?.id !== loopsAround(copy.node)[0]?.id) return { description: DESCRIPTION };
  if (!streamVisibleAt(copy, read)) return { description: DESCRIPTION };
  let call = /^cuMemcpy/.test(calleePath(copy.node.childForFieldName('function')) ?? '') ? `cuStreamSynchronize(${s})` : `cudaStreamSynchronize(${s})`;
  // Keep the project's error-checking wrapper: `CUDA_CHECK(cudaMemcpyAsync(...))` → `CUDA_CHECK(cudaStreamSynchronize(s))`.
  const wrapper = copy.node.parent?.type === 'argument_list' ? copy.node.parent.parent : null;
  const macro = wrapper?.type === 'call_expression' ? wrapper.childForFieldName('function')?.text : undefined;
  if (macro && /^[A-Z][A-Z0-9_]*$/.test(macro)) call = `${macro}(${call})`;
  return insertBefore(ctx, stmt, `${call};`);
}

/** A stream declared in a block around the copy is still in scope at the read. */
function streamVisibleAt(copy: AsyncD2H, read: SyntaxNode): boolean {
  const id = copy.streamNode?.type === 'identifier' ? copy.streamNode.text : null;
  if (!id) return true;
  const fn = hostFunctionOf(copy.node);
  if (!fn) return true;
  for (const d of fn.descendantsOfType('declaration')) {
    if (d.startIndex > copy.node.startIndex) break;
    const declares = d.namedChildren.some((c) => (c.type === 'identifier' && c.text === id) || (c.type === 'init_declarator' && c.childForFieldName('declarator')?.text === id));
    if (declares && d.parent && !contains(d.parent, read)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------

function python(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const facts = ctx.get(streamFacts);
  const names = new Set(facts.streams.map((d) => d.name));
  const helpers = syncHelperCalls(ctx.source.root, facts);
  const asyncNodes = new Set(facts.asyncD2H.map((c) => c.node.id));
  check(ctx, facts, {
    python: true,
    access: (o) => pyHostAccess(o, m, ctx.config.vocab),
    flowsTo: (a, b) => m.flowsTo(a, b),
    norm: (t, at) => pyStreamOf(t, at, names),
    implicitSyncs(copy, nonBlocking) {
      // A blocking read (`.get()`, `cp.asnumpy`, `int(d)`) synchronizes CuPy's current stream; on the legacy
      // default stream that also waits for every blocking stream's earlier work.
      const reads = m.d2h
        .filter((d) => !asyncNodes.has(d.node.id))
        .filter((d) => {
          const kw = d.node.type === 'call' ? pyArgs(d.node).keywords.get('stream') : undefined;
          const on = kw ? pyStreamOf(kw.text, d.node, names) : pyContextStream(d.node, names);
          return streamKey(on) === streamKey(copy.stream) || (on === null && !nonBlocking);
        })
        .map((d) => d.node);
      return [...helpers, ...reads];
    },
  });
}

const BLOCKING_TRANSFER = /^(cudaMemcpy|cudaMemcpy2D|cudaMemcpy3D|cudaMemcpyFromSymbol|cudaMemcpyToSymbol|cuMemcpyDtoH|cuMemcpyHtoD|cuMemcpyDtoH_v2|cuMemcpyHtoD_v2)$/;

function cuda(ctx: CheckContext): void {
  const cm = ctx.get(cudaModel);
  const facts = ctx.get(streamFacts);
  const helpers = syncHelperCalls(ctx.source.root, facts);
  check(ctx, facts, {
    python: false,
    access: (o) => cppHostAccess(o),
    flowsTo: cppFlowsTo,
    norm: (t) => streamText({ text: t } as SyntaxNode),
    implicitSyncs(_copy, nonBlocking) {
      // Blocking copies to or from the host run on the legacy default stream and return when done; that
      // stream first waits for earlier work on every blocking stream (not for cudaStreamNonBlocking ones).
      const blocking = nonBlocking ? [] : cm.calls.filter((c) => BLOCKING_TRANSFER.test(c.name) && !/DeviceToDevice/.test(c.node.text)).map((c) => c.node);
      return [...helpers, ...blocking];
    },
  });
}

export default defineCheck({
  id: 'sync/missing-sync-before-host-read',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation: '003 §2.3 Synchronization Pitfalls (under-synchronization: "async copy without sync before use")',
  summary: 'Host buffer read before the asynchronous device-to-host copy into it is known to be complete.',
  why: '003 §2.3 calls an async copy read without a sync "DANGEROUS … causes data races": the copy only completes when its stream reaches it, so until a sync of that stream the host may read stale or partial data.',
  messages: {
    race: 'Host buffer `{{host}}` read (`{{code}}`) before the asynchronous device→host copy into it (`{{copy}}` on {{stream}}) is known to be complete (race).',
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

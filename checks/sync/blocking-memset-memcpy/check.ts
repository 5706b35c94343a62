import { cudaModel, type ApiCall, type CudaModel } from '../../../src/analysis/cuda.js';
import { onceGuarded } from '../../../src/analysis/once.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { bufferUsedOnlyOnStream, soleStreamOf, streamFacts } from '../../../src/analysis/streams.js';
import { lastName, pyArgs, unparen, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';


type Direction = 'memset' | 'h2d' | 'd2h' | 'd2d' | 'unknown';

/** Direction from the API name (`cuMemcpyDtoH`, `cudaMemcpyFromSymbol`) or the kind argument. */
function directionOf(name: string, argsText: string): Direction {
  if (/[Mm]emset/.test(name)) return 'memset';
  if (/DtoD/.test(name) || /DeviceToDevice/.test(argsText)) return 'd2d';
  if (/DtoH/.test(name) || /DeviceToHost/.test(argsText)) return 'd2h';
  if (/HtoD/.test(name) || /HostToDevice/.test(argsText) || /ToSymbol/.test(name)) return 'h2d';
  // cudaMemcpyFromSymbol's kind defaults to cudaMemcpyDeviceToHost.
  if (/FromSymbol/.test(name)) return 'd2h';
  return 'unknown';
}

const asyncName = (name: string) => name.replace(/_v2$/, '') + 'Async';

/** The buffer a pointer argument names: `d_flags`, `d_out + off`, `&d_out[off]`. */
function bufferName(arg: SyntaxNode | undefined): string | null {
  let a = unparen(arg);
  while (a && (a.type === 'binary_expression' || a.type === 'pointer_expression' || a.type === 'subscript_expression' || a.type === 'cast_expression')) {
    a = unparen(a.type === 'binary_expression' ? a.childForFieldName('left') : a.type === 'cast_expression' ? a.childForFieldName('value') : a.childForFieldName('argument') ?? a.namedChildren[0]);
  }
  return a?.type === 'identifier' ? a.text : null;
}

/**
 * `safe-one-line` as the catalog allows it ("when a stream variable is in scope"), made strict:
 * only cudaMemset and device-to-device cudaMemcpy, whose operands all live on the device (an async
 * H2D/D2H copy can race with host code that reuses or reads the host buffer), in a function whose
 * stream-ordered work all runs on one stream that every other use of the buffers also runs on.
 */
function asyncFix(ctx: CheckContext, m: CudaModel, c: ApiCall, dir: Direction): FixSpec | null {
  const name = c.path.replace(/^::/, '');
  if (c.node.startPosition.row !== c.node.endPosition.row) return null;
  if (!((name === 'cudaMemset' && c.args.length === 3) || (name === 'cudaMemcpy' && c.args.length === 4 && dir === 'd2d'))) return null;
  const fn = m.functionOf(c.node);
  if (!fn) return null;
  const stream = soleStreamOf(ctx.get(streamFacts), m, fn.node);
  if (!stream) return null;
  const buffers = (name === 'cudaMemset' ? [c.args[0]] : [c.args[0], c.args[1]]).map(bufferName);
  if (buffers.some((b) => !b || !bufferUsedOnlyOnStream(m, fn.node, b, stream, [c.node]))) return null;
  const text = `${name}Async(${c.args.map((a) => a.text).join(', ')}, ${stream})`;
  const line = ctx.linesOf(c.node);
  const col = c.node.startPosition.column;
  return {
    description: `Issue it on the working stream: \`${text}\`.`,
    replace: { from: c.node, text: line.slice(0, col) + text + line.slice(col + c.node.text.length) },
  };
}

function judgment(name: string, dir: Direction): string {
  const a = asyncName(name);
  if (dir === 'h2d') return `Use \`${a}\` on the working stream from a pinned staging buffer (pageable memory cannot overlap), and keep the host buffer untouched until the copy completes.`;
  if (dir === 'd2h') return `Defer the read to the end of the pipeline, or use \`${a}\` into a pinned buffer on the working stream and synchronize that stream once before the host reads it.`;
  return `Use \`${a}\` on the working stream.`;
}

function checkCuda(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const ops = [...m.launches.map((l) => l.node), ...m.calls.filter((c) => m.isGpuOp(c.node)).map((c) => c.node)];
  for (const c of m.callsMatching(ctx.config.vocab.blocking_memcpy_calls)) {
    if (m.debugGated(c.node) || onceGuarded(c.node)) continue;
    const fn = m.functionOf(c.node);
    if (!fn || !fn.isHost) continue;
    const dir = directionOf(c.name, c.args.map((a) => a.text).join(' '));
    const inFn = (n: SyntaxNode) => m.functionOf(n)?.node.id === fn.node.id;
    let messageId = 'blocking';
    let stream = '';
    // Stream-ordered code by contract: the function takes (or fetches) a stream, or its class keeps one.
    const contract = ctx.config.setupFunctions.test(fn.name) || !fn.node.childForFieldName('type') ? null : m.streamContract(fn);
    const facts = ctx.get(streamFacts);
    const workStream = () => facts.uses.find((u) => u.stream !== null && inFn(u.node) && u.node.startIndex < c.node.startIndex)?.stream ?? [...m.streamNames(fn)][0] ?? null;
    if (!m.hotPath(c.node)) {
      // A same-device copy on the legacy stream waits for every other stream: flagged wherever one is active.
      const other = dir === 'd2d' ? facts.uses.find((u) => u.stream !== null && inFn(u.node))?.stream ?? facts.streams.find((s) => inFn(s.node))?.name : undefined;
      if (other) {
        messageId = 'd2dWithStreams';
        stream = other;
      } else if (contract && (contract === 'member' || facts.uses.some((u) => u.stream !== null && inFn(u.node) && u.node.startIndex < c.node.startIndex))) {
        // In stream-ordered code even a final read-back belongs on the stream: the legacy-stream copy
        // waits for every blocking stream, and does not wait for a non-blocking one.
        messageId = 'legacyInStreamCode';
        stream = workStream() ?? 'the working stream';
      } else continue;
    } else if (dir === 'd2h') {
      // Pipeline end: no GPU work after the copy, nor in a loop around it (the next iteration's work).
      const loops = m.loopsOf(c.node);
      const end = fn.node.endIndex;
      const later = ops.some((o) => o.endIndex <= end && (o.startIndex > c.node.endIndex || loops.some((l) => l.startIndex <= o.startIndex && o.endIndex <= l.endIndex)) && inFn(o));
      if (!later && !contract) continue;
      if (!later) {
        messageId = 'legacyInStreamCode';
        stream = workStream() ?? 'the working stream';
      }
    }
    const fix = asyncFix(ctx, m, c, dir) ?? { description: judgment(c.name, dir) };
    ctx.report({ node: c.node, messageId, data: { call: oneLine(c.node.text), async: asyncName(c.name), stream }, fix });
  }
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  for (const call of ctx.source.root.descendantsOfType('call')) {
    if (!m.callMatches(call, ctx.config.vocab.blocking_memcpy_calls)) continue;
    if (m.debugGated(call) || onceGuarded(call)) continue;
    const name = lastName(m.callPath(call)) ?? '';
    const { positional, keywords } = pyArgs(call);
    const scope = m.scopeOf(call);
    // `D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost` at module or function level: read the kind through the name.
    const kindText = (a: SyntaxNode) => {
      if (a.type !== 'identifier') return a.text;
      const bound = m.assignmentsIn(scope).get(a.text) ?? m.assignmentsIn(ctx.source.root).get(a.text);
      return bound?.length === 1 ? `${a.text} ${bound[0].value.text}` : a.text;
    };
    const dir = directionOf(name, [...positional, ...keywords.values()].map(kindText).join(' '));
    const inScope = (n: SyntaxNode) => m.scopeOf(n).id === scope.id;
    let messageId = 'blocking';
    let stream = '';
    if (!m.hotPath(call)) {
      const facts = dir === 'd2d' && scope.type === 'function_definition' ? ctx.get(streamFacts) : null;
      const other = facts ? facts.uses.find((u) => u.stream !== null && inScope(u.node))?.stream ?? facts.streams.find((s) => inScope(s.node))?.name : undefined;
      if (!other) continue;
      messageId = 'd2dWithStreams';
      stream = other;
    } else if (dir === 'd2h') {
      // The outermost loop around the copy re-runs every GPU op inside it after the copy.
      let loop: SyntaxNode | null = null;
      for (let l = m.loopOf(call); l; l = m.loopOf(l)) loop = l;
      const later = m.gpuOps.some((o) => (o.node.startIndex > call.endIndex || (loop && loop.startIndex <= o.node.startIndex && o.node.endIndex <= loop.endIndex)) && inScope(o.node));
      if (!later) continue;
    }
    ctx.report({ node: call, messageId, data: { call: oneLine(call.text), async: asyncName(name), stream }, fix: { description: judgment(name, dir) } });
  }
}

export default defineCheck({
  id: 'sync/blocking-memset-memcpy',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'python'],
  citation: '003 §2.4 Operations That Cause Implicit Synchronization (rows cudaMemset non-async, cudaMemcpy non-async, device-to-same-device copy)',
  summary: 'Non-async cudaMemset/cudaMemcpy (and driver/cuda-python/CuPy spellings) on a hot path.',
  why: 'A non-async memset or copy runs on the legacy default stream, which waits for all earlier work on every blocking stream and holds back later work until it finishes: a device-wide sync for cudaMemset and same-device copies, a blocking round trip for host copies (003 §2.3, §2.4).',
  messages: {
    blocking: 'Blocking `{{call}}` serializes the pipeline; use the Async variant (`{{async}}`) on the working stream.',
    legacyInStreamCode:
      'Blocking `{{call}}` runs on the legacy default stream in stream-ordered code (`{{stream}}`): it waits for every blocking stream, yet not for a non-blocking one; use `{{async}}` on `{{stream}}` and synchronize that stream before the host reads the result.',
    d2dWithStreams:
      'Blocking device-to-device `{{call}}` while stream `{{stream}}` is in use: it runs on the legacy default stream and serializes against every stream; use `{{async}}` on the working stream.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'cuda') checkCuda(ctx);
        else if (ctx.source.language === 'python') checkPython(ctx);
      },
    };
  },
});

import { type D2H, type PyModel, pythonModel } from '../../../src/analysis/python.js';
import { pyContextStream, pyStreamOf, streamFacts, streamKey } from '../../../src/analysis/streams.js';
import { pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { CUPY_READS, READ_STALL } from '../../../src/config/costs.js';

/** `for name, d_arr in (("a", d_a), ("b", d_b)):` — a host list of distinct device arrays. */
function iteratesHostListOfArrays(loop: SyntaxNode, target: SyntaxNode): boolean {
  if (loop.type !== 'for_statement') return false;
  const right = unparen(loop.childForFieldName('right'));
  if (!right) return false;
  const literal = right.type === 'tuple' || right.type === 'list' || (right.type === 'call' && /\.items$|^zip$|^enumerate$/.test(right.childForFieldName('function')?.text ?? ''));
  if (!literal) return false;
  let base = unparen(target);
  while (base && (base.type === 'subscript' || base.type === 'attribute')) base = base.namedChildren[0] ?? null;
  if (base?.type !== 'identifier') return false;
  const left = loop.childForFieldName('left');
  return !!left && left.descendantsOfType('identifier').some((i) => i.text === base!.text);
}

/**
 * A staged copy on its own stream, off the compute stream: `with copy_stream: d_rec[k % 2].get(out=h_pinned)`
 * or `d.get(stream=s, out=h)` in a double-buffered conveyor, or a non-blocking `d.get(..., blocking=False)`.
 * `.get()` waits only for the stream it copies on (CuPy syncs that stream, not the device), so when every
 * launch in the loop is queued on other streams the GPU keeps computing while the host waits for the copy:
 * the overlap 003 §2.3 recommends, not a ping-pong.
 */
function offStreamCopy(m: PyModel, d: D2H, loop: SyntaxNode, names: ReadonlySet<string>): boolean {
  if (d.node.type !== 'call' || (d.kind !== 'get' && d.kind !== 'asnumpy')) return false;
  const { keywords } = pyArgs(d.node);
  if (d.kind === 'get' && keywords.get('blocking')?.text === 'False') return true;
  const streamAt = (n: SyntaxNode): string | null => {
    const kw = n.type === 'call' ? pyArgs(n).keywords.get('stream') : undefined;
    return streamKey(kw ? pyStreamOf(kw.text, n, names) : pyContextStream(n, names));
  };
  const copy = streamAt(d.node);
  if (copy === null) return false;
  const work = m.gpuWorkIn(m.scopeOf(d.node)).filter((w) => w.startIndex >= loop.startIndex && w.endIndex <= loop.endIndex && w.id !== d.node.id);
  // Work on the legacy default stream (null) would be waited for too: a blocking stream's copy is ordered after it.
  return work.length > 0 && work.every((w) => {
    const s = streamAt(w);
    return s !== null && s !== copy;
  });
}

/**
 * A helper that only reads back (`_offsets(arrays)`: a loop of `.numpy()` and host arithmetic) is still a
 * ping-pong when a same-file caller queues GPU work after calling it: the reads stall that pipeline.
 */
function callerWorksAfter(m: PyModel, fn: SyntaxNode, root: SyntaxNode): boolean {
  if (fn.type !== 'function_definition') return false;
  return root.descendantsOfType('call').some((call) => {
    if (m.calleeDef(call)?.id !== fn.id) return false;
    const outer = m.scopeOf(call);
    return outer.id !== fn.id && m.gpuWorkIn(outer).some((w) => w.startIndex >= call.endIndex && m.flowsTo(call, w));
  });
}

export default defineCheck({
  id: 'host-device/get-in-loop',
  pass: 1,
  severity: 'critical',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §8.2 Host-Device Ping-Pong; 003 §9 Pass 1; 003 §2.4 Operations That Cause Implicit Synchronization',
  summary: 'Device-to-host read inside a host loop that also does GPU work (ping-pong).',
  why: 'Each read stalls the pipeline until the GPU drains, and the next launch restarts it: ' + READ_STALL + ', once per iteration; ' + CUPY_READS + ' (003 §8.2, §3.5).',
  messages: {
    d2hInLoop: 'Device→host read `{{code}}` inside a loop: every iteration stalls the GPU and round-trips through the host (ping-pong).',
  },
  fix: 'judgment',
  group: 'loop',
  supersedes: ['sync/scalar-conversion-of-device-value', 'host-device/d2h-mid-pipeline'],
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        let names: ReadonlySet<string> | null = null;
        const streamNames = () => (names ??= new Set(ctx.get(streamFacts).streams.map((s) => s.name)));
        for (const d of m.d2h) {
          const loop = m.loopOf(d.node);
          if (!loop || m.debugGated(d.node) || m.inCpuFallback(d.node)) continue;
          const scope = m.scopeOf(d.node);
          // GPU work anywhere in the loop runs again after this read; work after the loop consumes it.
          // An enclosing loop counts too: its next iteration runs its GPU work after this inner loop's reads.
          const loops: SyntaxNode[] = [];
          for (let l: SyntaxNode | null = loop; l; l = m.loopOf(l)) loops.push(l);
          const work = m.gpuWorkIn(scope).some((w) => w.id !== d.node.id && (w.startIndex >= loop.endIndex || loops.some((l) => w.startIndex >= l.startIndex && w.endIndex <= l.endIndex)));
          if (!work && !callerWorksAfter(m, scope, ctx.source.root)) continue;
          if (iteratesHostListOfArrays(loop, d.target)) continue;
          if (offStreamCopy(m, d, loop, streamNames())) continue;
          ctx.report({
            node: d.node,
            messageId: 'd2hInLoop',
            data: { code: d.node.text.length > 60 ? d.node.text.slice(0, 57) + '...' : d.node.text },
            fix: {
              description: ctx.projectVocabulary
                ? 'Batch the loop: compute per-item counts on the device, `exclusive_sum(..., synchronize=False)`, take one total with `count_scatter_total(...)`, allocate once and launch once over all items.'
                : 'Batch the loop: compute the per-item values for all items on the device (offsets with `cp.cumsum`, one kernel or vectorised CuPy call over all items), then read the results back once after the loop with a single `.get()`.',
            },
          });
        }
      },
    };
  },
});

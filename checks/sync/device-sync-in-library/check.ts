import { cudaModel } from '../../../src/analysis/cuda.js';
import { cudaOps, fenceMarked, traceGated } from '../../../src/analysis/hostsync.js';
import { streamFacts } from '../../../src/analysis/streams.js';
import { calleePath, contains, lastName, matchesVocab, quote } from '../../../src/analysis/syntax.js';
import type { CudaModel } from '../../../src/analysis/cuda.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const ID = 'sync/device-sync-in-library';
/** Sample and tutorial trees: programs, not libraries (tests, benchmarks and examples are the CUDA model's `testOrBench`). */
const PROGRAM_PATH = /(^|\/)(samples?|demos?|tutorials?|apps?|tools)\//i;
/** Teardown and error paths: draining the device before a free, a reset or an abort is what they are for. */
const TEARDOWN_NAME = /^~|(^|_)(free|release|destroy|reset|cleanup|clean_up|shutdown|finali[sz]e|teardown|dispose|close)|(Free|Release|Destroy|Reset|Cleanup|Shutdown|Finali[sz]e|Teardown|Dispose|Close)/;
const DEVICE_SYNC = /^(cudaDeviceSynchronize|cuCtxSynchronize)$/;

/** The statement that holds `n` (through an error-check macro around the call). */
function statementOf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && !/statement$|^declaration$/.test(cur.type)) cur = cur.parent;
  return cur;
}

/**
 * Names of this file's host functions that queue GPU work, directly (a launch, an async copy, a CUB or
 * Thrust call, a launch helper) or through another such function of the file (`this->BuildHist(nidx)`).
 */
function workingFunctions(m: CudaModel): Set<string> {
  const work = new Set<string>();
  const host = m.functions.filter((f) => f.isHost && f.body);
  for (const f of host) if (m.launches.some((l) => contains(f.body!, l.node)) || m.calls.some((c) => m.isGpuOp(c.node) && contains(f.body!, c.node))) work.add(f.name);
  for (let changed = true; changed; ) {
    changed = false;
    for (const f of host) {
      if (work.has(f.name)) continue;
      if (m.calls.some((c) => contains(f.body!, c.node) && work.has(lastName(c.path) ?? c.path))) {
        work.add(f.name);
        changed = true;
      }
    }
  }
  return work;
}

export default defineCheck({
  id: ID,
  pass: 2,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda'],
  status: 'preview',
  citation: '003 §2.3 (Synchronization scope: device vs stream vs event); 003 §2.4 (row "cudaDeviceSynchronize(): Device-wide")',
  summary: 'cudaDeviceSynchronize() in library host code after its own GPU work: it waits for every stream of the device, not only the work the function queued.',
  why: 'A device-wide synchronization waits for all work of all streams of the device (003 §2.3, §2.4): in a library that is the caller\'s other streams, other threads\' work and other libraries\' kernels, and the host stalls until all of it drains. The function only needs its own work done (a sync of the stream it queued on, or an event), and often not even that, when its results stay on the device and later work is stream-ordered.',
  messages: {
    deviceSync:
      '`{{call}}` in library code waits for every stream of the device, not only the work this function queued{{after}}: synchronize the stream the work went to (`cudaStreamSynchronize(stream)`, or an event), or drop it when the results stay on the device for stream-ordered work.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language !== 'cuda') return;
        const m = ctx.get(cudaModel);
        if (m.testOrBench || PROGRAM_PATH.test(ctx.source.path)) return;
        // An executable owns the device: its device-wide syncs wait for its own work only.
        if (m.functions.some((f) => f.name === 'main' && f.isHost)) return;
        const facts = ctx.get(streamFacts);
        const vocab = ctx.config.vocab;
        let working: Set<string> | null = null;
        for (const s of facts.syncs) {
          if (s.scope !== 'device' || s.via !== 'call' || !DEVICE_SYNC.test(calleePath(s.node.childForFieldName('function')) ?? '')) continue;
          const fn = m.functionOf(s.node);
          if (!fn || !fn.isHost || !fn.body || m.inDeviceCode(s.node)) continue;
          if (ctx.config.setupFunctions.test(fn.name) || TEARDOWN_NAME.test(fn.name) || m.debugGated(s.node) || traceGated(s.node, fn.node)) continue;
          if (fenceMarked(statementOf(s.node), vocab.sync_fence_markers)) continue;
          const calls = m.calls.filter((c) => contains(fn.node, c.node));
          // A sync next to a clock or an event record is a measurement.
          if (calls.some((c) => matchesVocab(c.path, vocab.timing_calls))) continue;
          // A sync before a device switch, a peer copy or a reset serves the whole device.
          if (calls.some((c) => /^(cudaSetDevice|cudaDeviceReset|cuCtxSetCurrent|cuCtxPushCurrent|cuCtxPopCurrent|cudaMemcpyPeer\w*|cudaDeviceEnablePeerAccess)$/.test(c.name))) continue;
          // The work it waits for: the function's own GPU operations before it (in a loop, any of the loop's).
          const loop = m.loopOf(s.node);
          const ops = cudaOps(m, facts.uses, m.streamNames(fn)).filter((o) => contains(fn.node, o.node) && !m.inDeviceCode(o.node) && (o.node.startIndex < s.node.startIndex || (loop && contains(loop, o.node))));
          const helperWork = m.helperOps.filter((h) => contains(fn.node, h.node) && (h.node.startIndex < s.node.startIndex || (loop && contains(loop, h.node))));
          working ??= workingFunctions(m);
          const w = working;
          const ownHelpers = calls.filter((c) => w.has(lastName(c.path) ?? c.path) && lastName(c.path) !== fn.name && (c.node.startIndex < s.node.startIndex || (loop && contains(loop, c.node))));
          if (!ops.length && !helperWork.length && !ownHelpers.length) continue;
          // Work spread over several named streams: a device-wide sync is one way to join them all.
          const named = new Set([...ops.map((o) => o.stream), ...helperWork.map((h) => h.stream)].filter((x): x is string => x !== null));
          if (named.size > 1) continue;
          const after = loop ? ' (once per iteration of the loop around it)' : '';
          ctx.report({
            node: s.node,
            messageId: 'deviceSync',
            data: { call: quote(s.node), after },
            fix: { description: 'Replace the device-wide sync by `cudaStreamSynchronize(stream)` on the stream this function queued its work on (or record an event and wait on it); remove it when nothing on the host reads the results before later stream-ordered work.' },
          });
        }
      },
    };
  },
});

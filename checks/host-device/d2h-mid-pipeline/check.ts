import { pythonModel } from '../../../src/analysis/python.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { READ_STALL } from '../../../src/config/costs.js';

const WHOLE_ARRAY_KINDS = new Set(['get', 'asnumpy', 'copy-to-host', 'tolist']);

const quote = (n: SyntaxNode) => (n.text.length > 60 ? n.text.slice(0, 57) + '...' : n.text).replace(/\s*\n\s*/g, ' ');

/** `return d_out.get()`: handing the result to the caller is the pipeline end of this function. */
function inReturn(n: SyntaxNode): boolean {
  for (let p = n.parent; p && p.type !== 'function_definition' && p.type !== 'block' && p.type !== 'module'; p = p.parent) {
    if (p.type === 'return_statement') return true;
  }
  return false;
}

export default defineCheck({
  id: 'host-device/d2h-mid-pipeline',
  pass: 1,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation:
    '003 §8.1 Implicit Synchronization (rows "cp.asnumpy(arr) in middle of pipeline", "ndarray.get() between kernel launches"); 003 §9 Pass 1 bullets 2 and 4',
  summary: 'Whole-array device-to-host copy between two pieces of GPU work in the same function.',
  why: 'A .get()/cp.asnumpy() between launches waits for every queued kernel to drain and copies the array over PCIe, then the next launch starts an idle GPU and pays the launch latency again (' + READ_STALL + ') (003 §8.1 HIGH, §2.4, §8.4).',
  messages: {
    midPipeline: 'Device→host copy `{{code}}` in the middle of the GPU pipeline (GPU work follows it); defer all D2H to the end.',
    asyncWaited:
      'Device→host copy `{{code}}` is waited for by `{{sync}}` in the middle of the GPU pipeline (GPU work follows it); defer all D2H to the end.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const skip = (n: SyntaxNode) => m.debugGated(n) || m.inCpuFallback(n);
        const isAsyncD2H = (n: SyntaxNode) => m.isCall(n, vocab.d2h_async_calls);
        // Another D2H copy after this one is part of collecting results, not GPU work that waits on the host.
        const workMemo = new Map<number, SyntaxNode[]>();
        const work = (scope: SyntaxNode) => {
          let ops = workMemo.get(scope.id);
          if (!ops) workMemo.set(scope.id, (ops = m.gpuOps.filter((o) => m.scopeOf(o.node).id === scope.id && !isAsyncD2H(o.node)).map((o) => o.node)));
          return ops;
        };
        /** GPU work reaches `first`, and more GPU work runs after `last`. */
        const midPipeline = (first: SyntaxNode, last: SyntaxNode) => {
          const ops = work(m.scopeOf(first));
          return ops.some((g) => m.flowsTo(g, first)) && ops.some((g) => m.flowsTo(last, g));
        };
        const fix = {
          description:
            'Move the device→host copy after the last GPU operation of the function, or keep the intermediate on the device and pass the device array to the next stage.',
        };

        for (const d of m.d2h) {
          if (!WHOLE_ARRAY_KINDS.has(d.kind) || d.scalar) continue;
          if (skip(d.node) || inReturn(d.node)) continue;
          if (!midPipeline(d.node, d.node)) continue;
          ctx.report({ node: d.node, messageId: 'midPipeline', data: { code: quote(d.node) }, fix });
        }

        // An async copy only stalls where the host waits for it: flag it when that wait sits mid-pipeline.
        for (const call of ctx.source.root.descendantsOfType('call')) {
          if (!isAsyncD2H(call) || skip(call)) continue;
          const scope = m.scopeOf(call);
          const sync = scope
            .descendantsOfType('call')
            .find((s) => m.isCall(s, vocab.sync_calls) && m.scopeOf(s).id === scope.id && m.flowsTo(call, s));
          if (!sync || !midPipeline(call, sync)) continue;
          ctx.report({ node: call, messageId: 'asyncWaited', data: { code: quote(call), sync: quote(sync) }, fix });
        }
      },
    };
  },
});

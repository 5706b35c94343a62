import { cudaModel } from '../../../src/analysis/cuda.js';
import { hostFunctionOf } from '../../../src/analysis/flow.js';
import { NO_HOST_RESULT, thrustModel } from '../../../src/analysis/thrust.js';
import { contains, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/engine/types.js';

function outerFunction(n: SyntaxNode): SyntaxNode | null {
  let fn = hostFunctionOf(n);
  while (fn && fn.type !== 'function_definition') fn = hostFunctionOf(fn);
  return fn;
}

export default defineCheck({
  id: 'sync/thrust-default-policy',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda'],
  citation: '003 §2.3 Synchronization Pitfalls (default stream serialization; implicit synchronization)',
  summary: 'Thrust/CUB algorithm issued on the legacy default stream or with a synchronizing policy in code that works on a stream.',
  why: 'Thrust under `thrust::device` / `thrust::cuda::par(alloc)` runs on the legacy default stream, which waits for every blocking stream, and blocks the host after the algorithm; `.on(s)` keeps the sync. Bound to the working stream with `par_nosync` the work stays queued behind the rest of the pipeline (003 §2.3; 003 §9 Pass 2 rates over-synchronization HIGH).',
  messages: {
    defaultStream:
      '`thrust::{{algo}}` runs under `{{policy}}`, i.e. on the legacy default stream with a host sync after it, while this {{where}} works on {{stream}}; bind it to the stream (`thrust::cuda::par_nosync(alloc).on(stream)`, or the project\'s stream policy).',
    syncOn:
      '`thrust::{{algo}}` under `{{policy}}` synchronizes `{{stream}}` after the algorithm although it returns nothing the host waits for{{reason}}; use `thrust::cuda::par_nosync(...).on({{stream}})`.',
    syncFactory:
      'This helper hands out `{{policy}}`, a policy that synchronizes the stream after every Thrust algorithm issued with it; return a `par_nosync` policy bound to the stream (and keep the sync only where a host read needs it).',
    cubDefault:
      '`{{path}}` is called without its stream argument, so it runs on the legacy default stream while this {{where}} works on {{stream}}; pass the stream as the last argument.',
  },
  fix: 'judgment',
  create(ctx: CheckContext) {
    return {
      'source:exit'() {
        if (!/thrust|cub::/.test(ctx.source.text)) return;
        const m = ctx.get(cudaModel);
        if (m.testOrBench) return;
        const t = ctx.get(thrustModel);
        const where = (w: 'function' | 'file') => (w === 'function' ? 'function' : 'file');
        const label = (s: string) => (/^the stream of|^a stream$/.test(s) ? s : `\`${oneLine(s, 40)}\``);
        const gpuOps = [...m.launches.map((l) => l.node), ...m.calls.filter((c) => m.isGpuOp(c.node)).map((c) => c.node), ...t.calls.map((c) => c.node), ...t.cub.filter((c) => !c.sizeQuery).map((c) => c.node)];
        for (const c of t.calls) {
          if (m.debugGated(c.node)) continue;
          const policy = oneLine(c.policy.node.text, 50);
          if (c.policy.kind === 'default-stream') {
            const sc = t.streamContext(c.node);
            if (!sc) continue;
            ctx.report({ node: c.arg, messageId: 'defaultStream', data: { algo: c.algorithm, policy, where: where(sc.where), stream: label(sc.stream) } });
          } else if (c.policy.kind === 'sync-on' && NO_HOST_RESULT.has(c.algorithm)) {
            const stream = c.policy.stream?.text ?? '';
            const fn = outerFunction(c.node);
            // Mature stream code issues `par.on(s)` everywhere and accepts one sync per algorithm; the cost
            // becomes a hazard when it repeats: once per iteration of a loop that keeps issuing GPU work.
            const loop = fn ? m.loopsOf(c.node).find((l) => contains(fn, l)) : undefined;
            const next = loop ? gpuOps.find((o) => o.id !== c.node.id && contains(loop, o) && !contains(o, c.node)) : undefined;
            if (!next) continue;
            const reason = ` and it runs once per loop iteration next to \`${oneLine(next.text, 40)}\``;
            ctx.report({ node: c.arg, messageId: 'syncOn', data: { algo: c.algorithm, policy, stream: oneLine(stream, 40), reason } });
          }
        }
        if (!t.hasNoSync) {
          for (const r of t.returned) {
            if (r.policy.kind !== 'sync-on' || m.debugGated(r.node)) continue;
            ctx.report({ node: r.node, messageId: 'syncFactory', data: { policy: oneLine(r.node.text, 50) } });
          }
        }
        for (const c of t.cub) {
          if (c.stream || c.sizeQuery || m.debugGated(c.node)) continue;
          const sc = t.streamContext(c.node);
          if (!sc) continue;
          ctx.report({ node: c.node, messageId: 'cubDefault', data: { path: c.path, where: where(sc.where), stream: label(sc.stream) } });
        }
      },
    };
  },
});

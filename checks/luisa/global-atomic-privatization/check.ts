import { luisaModel, selectsFewThreads } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';


export default defineCheck({
  id: 'luisa/global-atomic-privatization',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §4.3 Block-Local Atomic Privatization → One Global Atomic; 000 §7 rule 10; 000 §5.7 (histogram row: "global wins ≤ 256; shared wins 512–1024 … Below ~256 threads/block it is a pessimization")',
  summary: 'Per-thread global atomic on a block-uniform address in a kernel with blocks of 512+ threads.',
  why: 'With 512–1,024-thread blocks, privatizing the counter in Shared<T> and issuing one global atomic per block measured 1.3–1.7× faster in the 000 §5.7 histogram case, while below ~256 threads it was a pessimization (8× slower at 64).',
  messages: {
    perThread: '`{{code}}`: every thread issues a global atomic on a shared counter; privatize per block in Shared<T> and issue one global atomic per block (pays off only for blocks ≥ 512 threads; this kernel uses {{threads}}).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (m.testOrBench) return;
        for (const c of m.callsNamed('atomic')) {
          if (!c.receiver) continue;
          const k = m.kernelOf(c.node);
          const threads = k?.blockSize?.product ?? null;
          // Measured: global atomics win at ≤ 256 threads per block (000 §5.7, catalog §6 I-31).
          if (!k || k.kind === 'Callable' || threads === null || threads < 512) continue;
          // Shared<T> atomics are the privatized form already.
          const recv = c.receiver.text.replace(/^[(*\s]+|[)\s]+$/g, '').replace(/^.*(->|\.)/, '');
          if (m.shared.some((s) => s.name === recv && (!s.body || m.kernelOf(s.body.body) === k))) continue;
          const fe = c.node.parent;
          const opName = fe?.type === 'field_expression' && fe.parent?.type === 'call_expression' ? fe.childForFieldName('field')?.text ?? '' : '';
          if (!/^fetch_/.test(opName)) continue;
          // Scattered per-thread addresses (histogram bins) do not contend on one counter.
          if (m.laneDependent(c.args[0])) continue;
          if (m.deviceBranchesAround(c.node).some((b) => !b.inElse && selectsFewThreads(m, b.condition))) continue;
          const call = fe!.parent!;
          ctx.report({
            node: call,
            messageId: 'perThread',
            data: { code: quote(call), threads },
            fix: { description: 'Privatize (000 §4.3): a Shared<uint> counter zeroed by thread 0 and `sync_block()`; each thread `idx = s.atomic(0u).fetch_add(1u)`; `sync_block()`; thread 0 does `base = g->atomic(0u).fetch_add(count)` and publishes it in shared; `sync_block()`; each thread writes to `base + idx`.' },
          });
        }
      },
    };
  },
});

import { luisaModel, selectsFewThreads } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';


/** `tile` of `tile[i]`, `tile`, `(*tile)[i]`. */
function baseName(n: SyntaxNode | null): string | null {
  let cur = unparen(n);
  while (cur && (cur.type === 'subscript_expression' || cur.type === 'pointer_expression')) cur = unparen(cur.type === 'subscript_expression' ? cur.childForFieldName('argument') : cur.namedChildren[0]);
  return cur?.type === 'identifier' ? cur.text : null;
}

const STEPS = ['pipeline_commit', 'pipeline_wait_prior', 'sync_block'] as const;

export default defineCheck({
  id: 'luisa/async-copy-incomplete',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §4.6 Shared as Staging / Scratch ("every thread issues its own copy (thread 0 alone would leave the rest unfilled), then pipeline_commit(), pipeline_wait_prior(0u) and sync_block() before consumers read")',
  summary: 'async_copy into Shared<T> issued by one thread, or read before pipeline_commit → pipeline_wait_prior → sync_block.',
  why: 'async_copy moves only the calling thread\'s elements and completes asynchronously, so a copy issued by thread 0 leaves the rest of the tile unfilled, and a read before pipeline_commit(), pipeline_wait_prior(0u) and sync_block() sees uninitialized shared memory (000 §4.6, test_async_copy.cpp:53-57).',
  messages: {
    single: '`{{code}}`: async_copy into shared memory is issued by one thread only (`{{cond}}`); every thread must issue its own copy, then `pipeline_commit(); pipeline_wait_prior(0u); sync_block();` before consumers read.',
    unsynced: '`{{code}}`: `{{shared}}` is read (`{{read}}`) before pipeline_commit → pipeline_wait_prior → sync_block (missing {{missing}}); insert `pipeline_commit(); pipeline_wait_prior(0u); sync_block();` after the copies.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const copies = m.callsNamed('async_copy').filter((c) => !c.receiver && m.inDeviceCode(c.node));
        for (const c of copies) {
          const code = quote(c.node);
          const guard = m.deviceBranchesAround(c.node).find((b) => !b.inElse && selectsFewThreads(m, b.condition));
          if (guard) {
            ctx.report({ node: c.node, messageId: 'single', data: { code, cond: quote(guard.condition!) }, fix: { description: 'Issue the copy from every thread (`async_copy(scope, tile[thread_x()], src + thread_x() * 4u, 4u, 1u, 4u, ev)`), then `pipeline_commit(); pipeline_wait_prior(0u); sync_block();`.' } });
            continue;
          }
          const name = baseName(c.args[1] ?? null);
          const k = m.kernelOf(c.node);
          const decl = name ? m.shared.find((s) => s.name === name && (!s.body || m.kernelOf(s.body.body) === k)) : undefined;
          if (!decl) continue;
          const read = m.sharedAccesses(decl).find((a) => a.kind === 'read' && a.node.startIndex >= c.node.endIndex && !copies.some((o) => o.node.startIndex <= a.node.startIndex && a.node.endIndex <= o.node.endIndex));
          if (!read) continue;
          // The three steps must come in order between the copy and the first read.
          const scope = m.bodyOf(c.node)?.body ?? m.generatorOf(c.node);
          if (!scope) continue;
          let at = c.node.endIndex;
          const missing: string[] = [];
          for (const step of STEPS) {
            const hit = m.callsIn(scope, step).find((x) => !x.receiver && x.node.startIndex >= at && x.node.endIndex <= read.node.startIndex);
            if (hit) at = hit.node.endIndex;
            else missing.push(`${step}()`);
          }
          if (!missing.length) continue;
          ctx.report({ node: c.node, messageId: 'unsynced', data: { code, shared: name!, read: quote(read.node), missing: missing.join(', ') }, fix: { description: 'After the copies: `pipeline_commit(); pipeline_wait_prior(0u); sync_block();`, then read the tile.' } });
        }
      },
    };
  },
});

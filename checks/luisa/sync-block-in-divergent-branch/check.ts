import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const BLOCKS = new Set(['compound_statement']);

export default defineCheck({
  id: 'luisa/sync-block-in-divergent-branch',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §10.7 Barriers in generated code ("never inside a thread_id-divergent branch"); 000 §1.5 (sync_block: "All threads in the block must reach it")',
  summary: 'sync_block() reachable only by some threads of the block.',
  why: 'sync_block() is a full block barrier that every thread of the block must reach (000 §1.5), so under a thread-dependent $if it hangs the block or lets the other threads read a half-written tile (000 §10.7).',
  messages: {
    branch: '`{{call}}` inside a thread-divergent `{{kw}}` (`{{cond}}`): not all threads of the block reach the barrier. Move `sync_block()` after the `$if` and keep only the guarded work inside it.',
    loop: '`{{call}}` inside a device loop whose trip count differs between threads (`{{cond}}`): not all threads of the block reach the barrier. Give the loop a block-uniform bound and guard the per-thread work with `$if` inside it.',
    early: '`{{call}}` after a thread-divergent `$return` (`{{cond}}`): not all threads of the block reach the barrier. Replace the early `$return` with an `$if` around the guarded work so every thread reaches `sync_block()`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const cond = (n: SyntaxNode | null): string => {
          const t = (n?.text ?? '').replace(/\s*\n\s*/g, ' ').replace(/^\((.*)\)$/s, '$1');
          return t.length > 50 ? t.slice(0, 47) + '...' : t;
        };
        for (const c of m.callsNamed('sync_block')) {
          if (c.receiver || !m.inDeviceCode(c.node)) continue;
          const call = quote(c.node);
          const br = m.deviceBranchesAround(c.node).find((b) => m.laneDependent(b.condition));
          if (br) {
            ctx.report({ node: c.node, messageId: 'branch', data: { call, kw: br.inElse ? '$else' : '$if', cond: cond(br.condition) }, fix: { description: 'Move `sync_block()` out of the `$if` so every thread of the block reaches it.' } });
            continue;
          }
          const loop = m.deviceLoopsAround(c.node).find((l) => {
            const parts = m.loopParts(l);
            if (parts) return m.laneDependent(parts.start) || m.laneDependent(parts.end) || m.laneDependent(parts.step);
            return m.laneDependent(m.conditionOf(l));
          });
          if (loop) {
            const parts = m.loopParts(loop);
            const shown = parts ? [parts.start, parts.end, parts.step].find((p) => m.laneDependent(p)) ?? null : m.conditionOf(loop);
            ctx.report({ node: c.node, messageId: 'loop', data: { call, cond: cond(shown) }, fix: { description: 'Loop over a block-uniform bound and guard the per-thread work inside the loop.' } });
            continue;
          }
          // `$if (dispatch_x() >= n) { $return(); };` earlier in the kernel: those threads never arrive.
          const top = m.bodyOf(c.node)?.body ?? m.generatorOf(c.node);
          let early: SyntaxNode | null = null;
          for (let cur: SyntaxNode = c.node; cur.parent && (!top || cur.id !== top.id) && !early; cur = cur.parent) {
            if (!BLOCKS.has(cur.parent.type)) continue;
            for (let s = cur.previousNamedSibling; s && !early; s = s.previousNamedSibling) {
              if (s.type !== 'if_statement' || !m.isDeviceBranch(s) || !m.laneDependent(m.conditionOf(s))) continue;
              const ret = m.callsIn(s, '$return')[0];
              if (ret && m.deviceLoopsAround(ret.node).every((l) => l.startIndex < s.startIndex)) early = s;
            }
          }
          if (early) ctx.report({ node: c.node, messageId: 'early', data: { call, cond: cond(m.conditionOf(early)) }, fix: { description: 'Replace the early `$return` with an `$if` around the guarded work.' } });
        }
      },
    };
  },
});

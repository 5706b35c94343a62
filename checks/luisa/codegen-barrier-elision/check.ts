import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** `sync_block()` or a generator helper that emits it. */
const BARRIER = /^(sync_block|emit_sync_block|emit_sync|emit_barrier|emit_block_barrier|emit_sync_threads)$/;
/** Conditions that switch the barrier off for speed rather than for a proven absence of hazards. */
const ELISION_SWITCH = /fast|skip|elid|omit|no_?(sync|barrier)|unsafe|aggressive|relax|(disable|without)_?(sync|barrier)|(sync|barrier)s?_?(off|disabled?|enabled?|on)\b|use_(sync|barrier)|emit_(sync|barrier)s?\b/i;
/** A single-warp gate (000 §10.7: barriers are nearly free there and warp collectives replace staging). */
const WARP_GATE = /warp|num_warps|n_warps|warps_per_block/i;
/** A hazard analysis decides the barrier. */
const HAZARD = /hazard|needs?_(barrier|sync)|conflict|raw_|war_|waw_|reads?_shared|writes?_shared|cross_thread|shared_(read|write|dirty)/i;

export default defineCheck({
  id: 'luisa/codegen-barrier-elision',
  pass: 3,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.7 Barriers in generated code ("Keep the conservative rule: sync_block() after shared stores before any cross-thread read … Elision is only safe with a precise hazard analysis … prefer correctness")',
  summary: 'Generator skips emitting `sync_block()` behind a speed switch in multi-warp kernels.',
  why: 'Without `sync_block()` between shared stores and cross-thread reads the other warps of a multi-warp block read stale tile data; 000 §10.7 keeps the conservative barrier unless a precise hazard analysis proves it redundant, because elision "yields ~nothing" even in single-warp blocks where barriers are nearly free.',
  messages: {
    elided: 'PR removes or conditionally skips emission of sync_block() between shared stores and cross-thread reads in multi-warp kernels (`{{code}}`{{block}}); elision needs a precise hazard analysis.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const call of m.callsNamed(BARRIER)) {
          if (call.receiver || !m.inDeviceCode(call.node) && !/^emit_/.test(call.name)) continue;
          // The barrier statement is the whole body of a native `if`.
          let stmt: SyntaxNode | null = call.node.parent;
          if (stmt?.type !== 'expression_statement') continue;
          let holder = stmt.parent;
          if (holder?.type === 'compound_statement') {
            if (holder.namedChildren.filter((c) => c.type !== 'comment').length !== 1) continue;
            stmt = holder;
            holder = holder.parent;
          }
          if (holder?.type !== 'if_statement' || holder.childForFieldName('consequence')?.id !== stmt.id) continue;
          if (m.isDeviceBranch(holder)) continue;
          const cond = m.conditionOf(holder);
          if (!cond || !ELISION_SWITCH.test(cond.text) || WARP_GATE.test(cond.text) || HAZARD.test(cond.text)) continue;
          // A hazard-analysis helper called right before the decision also makes it deliberate.
          const scope = m.bodyOf(holder)?.body ?? m.generatorOf(holder) ?? holder.parent;
          if (scope && m.callsIn(scope, HAZARD).length) continue;
          // Single-warp kernels: the block never exceeds one warp, so there is nothing to order.
          const kernel = m.kernelOf(holder);
          const block = kernel?.blockSize?.product ?? null;
          const warp = kernel?.warpSize?.value ?? 32;
          if (block !== null && block <= warp) continue;
          ctx.report({
            node: holder,
            messageId: 'elided',
            data: { code: quoteCode(ctx.source.text.slice(holder.startIndex, stmt.endIndex), 60), block: block !== null ? `; the kernel runs ${block}-thread blocks, ${Math.ceil(block / warp)} warps` : '' },
            fix: { description: 'Keep emitting the barrier unconditionally; skip it only where a hazard analysis proves no cross-thread shared read follows, or where the block is a single warp (000 §10.7).' },
          });
        }
      },
    };
  },
});

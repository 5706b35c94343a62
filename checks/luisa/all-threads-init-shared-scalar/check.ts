import { luisaModel, selectsFewThreads } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

export default defineCheck({
  id: 'luisa/all-threads-init-shared-scalar',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §4.3 Block-Local Atomic Privatization (the block counter is initialised under `$if (thread_x() == 0u)`); 000 §4.7 rule 2 (barrier after initializing shared)',
  summary: 'Every thread of the block writes the same value into the same Shared<T> slot (`counter.write(0u, 0u)`), where one thread would do.',
  why: 'All threads store one value to one shared slot: one store is needed, the rest are redundant writes racing on the same address (benign only because the values agree). The guide initialises a block-shared counter from one thread, `$if (thread_x() == 0u) { index.write(0u, 0u); };`, followed by `sync_block()` (000 §4.3, §4.7 rule 2).',
  messages: {
    all: '`{{code}}`: every thread of the block writes the same value into `{{name}}[{{slot}}]`; let one thread initialise it (`$if (thread_x() == 0u) { … };`) and keep the `sync_block()` before it is read.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const isConstant = (n: SyntaxNode | null): boolean => {
          const v = unparen(n);
          if (!v) return false;
          if (v.type === 'number_literal' || v.type === 'true' || v.type === 'false' || m.constValue(v) !== null) return true;
          if (v.type !== 'call_expression') return false;
          const f = v.childForFieldName('function');
          const name = f?.type === 'template_function' ? f.childForFieldName('name')?.text : f?.text;
          const args = v.childForFieldName('arguments')?.namedChildren ?? [];
          return !!name && /^(def|(luisa::)?make_\w+)$/.test(name) && args.every((x) => isConstant(x));
        };
        for (const decl of m.shared) {
          if (!decl.name) continue;
          for (const a of m.sharedAccesses(decl)) {
            if (a.kind !== 'write') continue;
            // One slot for the whole block: a constant index.
            if (m.constValue(a.index) === null) continue;
            let value: SyntaxNode | null = null;
            if (a.node.type === 'call_expression') value = a.node.childForFieldName('arguments')?.namedChildren[1] ?? null;
            else if (a.node.parent?.type === 'assignment_expression' && a.node.parent.childForFieldName('operator')?.text === '=') value = a.node.parent.childForFieldName('right');
            // The same value in every thread: a constant (not a per-thread or loaded value).
            const v = unparen(value);
            if (!isConstant(v)) continue;
            if (m.laneDependent(v)) continue;
            // Already from one thread (or one lane per warp), or in a branch only some threads take.
            const branches = m.deviceBranchesAround(a.node);
            if (branches.some((b) => (!b.inElse && selectsFewThreads(m, b.condition)) || m.laneDependent(b.condition))) continue;
            ctx.report({
              node: a.node.type === 'call_expression' ? a.node : a.node.parent ?? a.node,
              messageId: 'all',
              data: { code: quote(a.node.type === 'call_expression' ? a.node : a.node.parent ?? a.node), name: decl.name, slot: a.index?.text ?? '' },
            });
          }
        }
      },
    };
  },
});

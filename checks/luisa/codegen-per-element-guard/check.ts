import { luisaModel, type LocalDecl } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Host integer types: values the generator knows while it emits the kernel. */
const HOST_INT = /^(const\s+|constexpr\s+|static\s+)*(unsigned( int| long)?|int|long|uint|uint32_t|uint64_t|int32_t|int64_t|size_t|std::size_t|std::uint32_t|std::uint64_t|luisa::uint|unsigned long long)\s*&?$/;

export default defineCheck({
  id: 'luisa/codegen-per-element-guard',
  pass: 3,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.3 Full/tail loop splitting and guard elision',
  summary: 'Per-element `$if (idx < total)` guard in a strided device loop whose extents the host knows at emission time.',
  why: 'A bounds guard in a partitioned loop is false in at most the last iteration, yet every element pays for it; when total and stride are host values the generator can emit unguarded full chunks plus one uniform tail, or prove total % stride == 0 and drop the guard (000 §10.3).',
  messages: {
    guard: 'Per-element bounds guard `$if ({{cond}})` inside a partitioned loop whose extents are host-known (`{{total}}` and `{{stride}}` are host integers); emit unguarded full chunks plus one guarded tail, or drop the guard when {{total}} % {{stride}} == 0.',
  },
  fix: 'judgment',
  create(ctx) {
    const candidates: SyntaxNode[] = [];
    const collect = (n: SyntaxNode): void => void candidates.push(n);
    return {
      for_range_loop: collect,
      if_statement: collect,
      'source:exit'() {
        if (!candidates.length) return;
        const m = ctx.get(luisaModel);
        const hostInt = (n: SyntaxNode | null, at: SyntaxNode): boolean => {
          const e = unparen(n);
          if (!e) return false;
          if (m.constValue(e) !== null) return true;
          if (e.type !== 'identifier') return false;
          const d: LocalDecl | null = m.declOf(e.text, at);
          if (!d) return false;
          // A DSL parameter or local (`UInt n`, `Var<uint>`, `Expr<uint>`) is a runtime extent.
          if (d.param && m.bodies.some((b) => b.params.some((p) => p.id === d.node.id))) return false;
          return HOST_INT.test(d.type.trim());
        };
        for (const loop of candidates) {
          if (!m.isDeviceLoop(loop) || !m.inDeviceCode(loop)) continue;
          const parts = m.loopParts(loop);
          if (!parts?.step || !parts.variable) continue;
          if (!hostInt(parts.step, loop)) continue;
          const body = loop.type === 'for_range_loop' ? loop.childForFieldName('body') : loop.childForFieldName('consequence');
          if (body?.type !== 'compound_statement') continue;
          // The body starts with the guard (after declarations of the element index).
          const first = body.namedChildren.find((c) => c.type !== 'comment' && c.type !== 'declaration');
          if (first?.type !== 'if_statement' || m.dslKind(first) !== 'dsl-if') continue;
          const cond = unparen(m.conditionOf(first));
          if (cond?.type !== 'binary_expression') continue;
          const op = cond.childForFieldName('operator')?.type;
          const total = op === '<' ? cond.childForFieldName('right') : op === '>' ? cond.childForFieldName('left') : null;
          const idx = op === '<' ? cond.childForFieldName('left') : op === '>' ? cond.childForFieldName('right') : null;
          if (!total || !idx || total.type !== 'identifier' || m.constValue(total) !== null) continue;
          if (!hostInt(total, loop)) continue;
          ctx.report({
            node: first,
            messageId: 'guard',
            data: { cond: quoteCode(cond.text, 40), total: total.text, stride: quoteCode(parts.step.text, 30) },
            fix: { description: `At emission time, test ${total.text} % ${quoteCode(parts.step.text, 30)} on the host: when it is 0 emit the loop without the guard; otherwise emit the full chunks unguarded and one guarded tail chunk (000 §10.3).` },
          });
        }
      },
    };
  },
});

import { luisaModel } from '../../../src/analysis/luisa.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { dslKindAt } from '../../../src/sources/luisa.js';
import type { DslKind } from '../../../src/sources/types.js';

const HINT = /^(likely|unlikely)$/;
const KEYWORD: Record<DslKind, string> = {
  'dsl-if': '$if',
  'dsl-elif': '$elif',
  'dsl-else': '$else',
  'dsl-while': '$while',
  'dsl-for': '$for',
  'dsl-loop': '$loop',
  'dsl-switch': '$switch',
  'dsl-case': '$case',
  'dsl-default': '$default',
};

/** The DSL statement an attributed statement annotates: its own statement, or the branch or loop whose body it is. */
function dslTarget(attributed: SyntaxNode, dsl: Map<number, DslKind>): { kind: DslKind; stmt: SyntaxNode } | null {
  const own = attributed.namedChildren.find((c) => c.type !== 'attribute_declaration');
  if (own && /^(if|while|for)_statement$/.test(own.type)) {
    const k = dslKindAt(dsl, own);
    if (k) return { kind: k, stmt: own };
  }
  const p = attributed.parent;
  if (p && (p.type === 'if_statement' || p.type === 'while_statement' || p.type === 'for_statement' || p.type === 'else_clause')) {
    // Only the body position: an attribute inside the condition is something else.
    const cond = p.childForFieldName('condition');
    if (cond && cond.startIndex <= attributed.startIndex && attributed.endIndex <= cond.endIndex) return null;
    const k = dslKindAt(dsl, p);
    if (k) return { kind: k, stmt: p };
  }
  return null;
}

export default defineCheck({
  id: 'luisa/likely-on-dsl-branch',
  pass: 3,
  severity: 'low',
  kind: 'maintainability',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §9.3 When NOT to hint, rule 3 ("DSL branches — $if / $else inside kernels are … expression-building macros … these attributes do not apply to them")',
  summary: '[[likely]]/[[unlikely]] on a DSL $if/$else, where it has no effect on kernel code.',
  why: '$if/$else are LuisaCompute expression-building macros that run once while the kernel records, so a C++ branch hint only biases that one-time recording and never reaches the generated kernel (000 §9.3 rule 3).',
  messages: {
    hint: '`[[{{attr}}]]` on a DSL `{{keyword}}` has no effect on kernel code: [[likely]]/[[unlikely]] on a DSL $if/$else has no effect on kernel code; optimize kernel control flow with warp/shared techniques instead (e.g. `warp_active_any`/`warp_active_all` to skip work warp-uniformly).',
  },
  fix: 'safe',
  create(ctx) {
    const dsl = ctx.source.dsl;
    const found: Array<{ attr: SyntaxNode; decl: SyntaxNode; kind: DslKind }> = [];
    return {
      attribute(node) {
        if (!dsl?.size) return;
        const name = node.childForFieldName('name');
        if (!name || !HINT.test(name.text) || node.childForFieldName('prefix')) return;
        const decl = node.parent;
        if (decl?.type !== 'attribute_declaration' || decl.parent?.type !== 'attributed_statement') return;
        const t = dslTarget(decl.parent, dsl);
        if (t) found.push({ attr: node, decl, kind: t.kind });
      },
      'source:exit'() {
        if (!found.length) return;
        const m = ctx.get(luisaModel);
        // Every hint on a line goes in one rewrite, so two findings on `$if … $else …` agree on it.
        const byRow = new Map<number, SyntaxNode[]>();
        for (const f of found) {
          const row = f.decl.startPosition.row;
          if (f.decl.endPosition.row !== row) continue;
          const list = byRow.get(row) ?? [];
          list.push(f.decl);
          byRow.set(row, list);
        }
        for (const f of found) {
          const same = byRow.get(f.decl.startPosition.row);
          let text: string | null = same ? m.lineText(f.decl) : null;
          if (text !== null && same) {
            const lineStart = f.decl.startIndex - f.decl.startPosition.column;
            // Remove right to left so earlier columns stay valid; take one blank with each attribute.
            for (const d of [...same].sort((a, b) => b.startIndex - a.startIndex)) {
              const from = d.startIndex - lineStart;
              let to = d.endIndex - lineStart;
              if (text[to] === ' ') to++;
              else if (from > 0 && text[from - 1] === ' ') {
                text = text.slice(0, from - 1) + text.slice(to);
                continue;
              }
              text = text.slice(0, from) + text.slice(to);
            }
          }
          ctx.report({
            node: f.decl,
            messageId: 'hint',
            data: { attr: f.attr.text, keyword: KEYWORD[f.kind] },
            fix: text !== null ? { description: `Remove \`[[${f.attr.text}]]\`; it does not reach the kernel.`, replace: { from: f.decl, text } } : { description: `Remove \`[[${f.attr.text}]]\`; it does not reach the kernel.` },
          });
        }
      },
    };
  },
});

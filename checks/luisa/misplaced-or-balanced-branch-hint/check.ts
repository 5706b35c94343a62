import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const HINT = /^(likely|unlikely)$/;
/** Cold helpers (000 §9.3 rule 2): a hint there cannot affect a measurable hot path. */
const COLD_FUNCTION = /describe|dump|format|to_string|print|debug/i;

/** `likely`/`unlikely` named by an attribute_declaration, or null. */
function hintOf(decl: SyntaxNode): string | null {
  if (decl.type !== 'attribute_declaration') return null;
  for (const a of decl.namedChildren) {
    const n = a.childForFieldName('name')?.text ?? '';
    if (a.type === 'attribute' && !a.childForFieldName('prefix') && HINT.test(n)) return n;
  }
  return null;
}

/** Name of the innermost named function around `n` (`Tile::fill` → `fill`). */
function functionName(n: SyntaxNode): string | null {
  for (let cur = n.parent; cur; cur = cur.parent) {
    if (cur.type !== 'function_definition') continue;
    let d = cur.childForFieldName('declarator');
    while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
    const name = d?.childForFieldName('declarator')?.text ?? null;
    return name ? name.replace(/\s/g, '').split('::').pop() ?? null : null;
  }
  return null;
}

export default defineCheck({
  id: 'luisa/misplaced-or-balanced-branch-hint',
  pass: 3,
  severity: 'low',
  kind: 'maintainability',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §9.1 Syntax (codebase convention: attribute after the condition / after else); 000 §9.3 When NOT to hint (ambiguous frequency, cold code, balanced branches)',
  summary: 'C++ branch hint placed before the `if`, on both sides of one if/else, or in cold describe/dump/format code.',
  why: 'LuisaCompute writes `[[likely]]`/`[[unlikely]]` after the condition or `else` (000 §9.1), and a hint is a promise that one side runs almost always: on a balanced if/else or in cold describe/dump/format helpers it only misleads the optimizer (000 §9.3 rules 1, 2 and 4).',
  messages: {
    beforeIf: 'Branch hint misplaced (must follow the condition): `{{code}}` puts `[[{{hint}}]]` before the `if`; the codebase convention is `if ({{cond}}) [[{{hint}}]] {`.',
    bothSides: 'Branch hint applied where the frequency is not strongly skewed: both sides of `if ({{cond}})` are annotated (`[[{{first}}]]` and `[[{{second}}]]`); keep at most the one whose side runs almost always or almost never.',
    cold: 'Branch hint applied where the frequency is not strongly skewed: `[[{{hint}}]]` in the cold helper `{{fn}}()` cannot affect a measurable hot path; remove it.',
  },
  fix: 'safe',
  create(ctx) {
    const decls: SyntaxNode[] = [];
    return {
      attribute_declaration(node) {
        decls.push(node);
      },
      'source:exit'() {
        if (!decls.length) return;
        const m = ctx.get(luisaModel);
        const text = ctx.source.text;
        const seenIf = new Set<number>();
        for (const decl of decls) {
          const hint = hintOf(decl);
          const holder = decl.parent;
          if (!hint || holder?.type !== 'attributed_statement') continue;
          // Hints in kernel bodies or on `$if`/`$else` are luisa/likely-on-dsl-branch's finding.
          if (m.inDsl(decl)) continue;
          const stmt = holder.namedChildren.find((c) => c.type !== 'attribute_declaration') ?? null;
          const parent = holder.parent;
          const onIf = parent?.type === 'if_statement' && parent.childForFieldName('consequence')?.id === holder.id ? parent : null;
          const onElse = parent?.type === 'else_clause' ? parent.parent : null;
          const ifStmt = onIf ?? onElse;
          if (ifStmt && m.isDeviceBranch(ifStmt)) continue;

          // (a) `[[unlikely]] if (c) {…}`: attribute before the `if` (not `else [[likely]] if`).
          if (!ifStmt && stmt?.type === 'if_statement' && !m.isDeviceBranch(stmt)) {
            const cond = stmt.childForFieldName('condition');
            if (!cond) continue;
            const condText = (m.conditionOf(stmt) ?? cond).text;
            const head = text.slice(holder.startIndex, cond.endIndex);
            let fix: { description: string; replace?: { from: SyntaxNode; to?: SyntaxNode; text: string } } = { description: `Move \`[[${hint}]]\` after the condition: \`if (${condText}) [[${hint}]] {\`.` };
            // Only a lone hint on lines that the DSL normalizer did not touch can be rewritten verbatim.
            const lineStart = text.lastIndexOf('\n', holder.startIndex - 1) + 1;
            let lineEnd = text.indexOf('\n', cond.endIndex);
            if (lineEnd < 0) lineEnd = text.length;
            const touched = [...(ctx.source.dsl?.keys() ?? [])].some((k) => k >= lineStart && k < lineEnd);
            const lone = holder.namedChildren.filter((c) => c.type === 'attribute_declaration').length === 1 && decl.namedChildren.length === 1;
            if (lone && !touched) {
              const afterDecl = text.slice(decl.endIndex, stmt.startIndex);
              if (/^\s*$/.test(afterDecl)) {
                const lines = text.slice(lineStart, lineEnd);
                const a = decl.startIndex - lineStart;
                const b = stmt.startIndex - lineStart;
                const c = cond.endIndex - lineStart;
                const fixed = lines.slice(0, a) + lines.slice(b, c) + ` [[${hint}]]` + lines.slice(c);
                fix = { ...fix, replace: { from: holder, to: cond, text: fixed } };
              }
            }
            ctx.report({ node: decl, messageId: 'beforeIf', data: { code: quoteCode(head, 60), hint, cond: quoteCode(condText, 40) }, fix });
            continue;
          }

          // (b) both sides of one native if/else annotated.
          if (ifStmt && !seenIf.has(ifStmt.id)) {
            const cons = ifStmt.childForFieldName('consequence');
            const alt = ifStmt.childForFieldName('alternative');
            const altStmt = alt?.namedChildren.find((c) => c.type !== 'comment') ?? null;
            const h1 = cons?.type === 'attributed_statement' ? cons.namedChildren.map(hintOf).find((x) => x) : null;
            const h2 = altStmt?.type === 'attributed_statement' ? altStmt.namedChildren.map(hintOf).find((x) => x) : null;
            if (h1 && h2) {
              seenIf.add(ifStmt.id);
              const cond = m.conditionOf(ifStmt)?.text ?? '';
              ctx.report({
                node: cons!,
                messageId: 'bothSides',
                data: { cond: quoteCode(cond, 40), first: h1, second: h2 },
                fix: { description: 'Remove the hint from the side that does not dominate, or from both when the split is close to 50/50 (000 §9.3 rule 4).' },
              });
              continue;
            }
          }

          // (c) cold helpers.
          const fn = functionName(decl);
          if (fn && COLD_FUNCTION.test(fn) && (ifStmt || stmt?.type === 'if_statement') && !(ifStmt && seenIf.has(ifStmt.id))) {
            ctx.report({ node: decl, messageId: 'cold', data: { hint, fn }, fix: { description: `Remove \`[[${hint}]]\` from \`${fn}()\` (000 §9.3 rule 2).` } });
          }
        }
      },
    };
  },
});

import type { SyntaxNode } from '../../core/types.js';
import { linesWith } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';

const LITERAL = /^[\d.]+[uUlLfF]*$/;
const NARROW = /^(?:const\s+)?(?:int|unsigned|unsigned int|int32_t|uint32_t)$/;

function products(n: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const visit = (x: SyntaxNode) => {
    if (x.type === 'binary_expression' && x.childForFieldName('operator')?.text === '*') {
      const l = x.childForFieldName('left');
      const r = x.childForFieldName('right');
      if (l && r && !LITERAL.test(l.text) && !LITERAL.test(r.text)) {
        out.push(x);
        return;
      }
    }
    for (const c of x.namedChildren) visit(c);
  };
  visit(n);
  return out;
}

/**
 * A flat offset multiplied in 32-bit int → the first factor widened to int64_t, and the int it is
 * stored in (when it is one declaration's only variable) declared int64_t too.
 */
export const int64Index: Template = {
  id: 'int64-index',
  rules: ['kernel/int32-index-overflow'],
  languages: ['cuda'],
  build(ctx: TemplateContext): TemplateResult {
    if (ctx.finding.messageId !== 'product') return { decline: 'extent fields of a struct change its layout: not rewritten' };
    const ps = products(ctx.node);
    if (ps.length === 0) return { decline: 'no runtime-extent product in the flagged expression' };
    const p = ps[0];
    const l = p.childForFieldName('left')!;
    if (/^\(\s*(?:int64_t|size_t|long long|std::int64_t|std::size_t)\s*\)|static_cast</.test(l.text)) return { decline: 'the product is already widened' };
    const parts = [{ node: l, text: `static_cast<int64_t>(${l.text})` }];
    let widenedDecl = false;
    let decl: SyntaxNode | null = p.parent;
    while (decl && decl.type !== 'init_declarator' && decl.type !== 'expression_statement' && decl.type !== 'compound_statement') decl = decl.parent;
    if (decl?.type === 'init_declarator' && decl.parent?.type === 'declaration') {
      const d = decl.parent;
      const type = d.childForFieldName('type');
      const quals = d.namedChildren.filter((c) => c.type === 'type_qualifier');
      const full = `${quals.map((q) => q.text).join(' ')} ${type?.text ?? ''}`.trim();
      if (type && NARROW.test(full)) {
        if (d.childrenForFieldName('declarator').length !== 1) return { decline: 'the result goes into a declaration of several variables' };
        const signed = !/unsigned|uint/.test(full);
        parts.push({ node: type, text: signed ? 'int64_t' : 'uint64_t' });
        widenedDecl = true;
      }
    }
    return {
      description: widenedDecl
        ? 'Widen the first factor to int64_t before multiplying and keep the offset in a 64-bit variable.'
        : 'Widen the first factor to int64_t before multiplying, so the product is computed in 64 bits.',
      edits: [linesWith(ctx.lines, parts)],
      // Only the wrapped (undefined) cases change value; a declaration's type change can change overloads.
      behaviourPreserving: !widenedDecl,
    };
  },
};

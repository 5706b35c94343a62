import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/**
 * Side-effect-free math that the compiler evaluates inline: executing it in lanes whose result is discarded
 * costs a few instructions, never a fault or a write.
 */
const PURE_MATH = /^(f?(min|max|abs)f?|fabs|fabsf|sqrtf?|rsqrtf?|cbrtf?|expf?|exp2f?|logf?|log2f?|sinf?|cosf?|tanf?|hypotf?|floorf?|ceilf?|roundf?|truncf?|copysignf?|fmaf?|__f?(mul|add|sub|div|fma)_r[nzud]|__(expf|logf|sinf|cosf|saturatef)|__float2int_r[nzud]|__int2float_r[nzud]|__double2float_r[nzud]|min|max|abs|__popc|__clz|__ffs)$/;

/** The single `lhs = rhs;` of an arm, or null. */
function soleAssignment(arm: SyntaxNode | null): SyntaxNode | null {
  if (!arm) return null;
  let s: SyntaxNode | null = arm;
  if (s.type === 'compound_statement') {
    const kids = s.namedChildren;
    if (kids.length !== 1) return null;
    s = kids[0]!;
  }
  if (s.type !== 'expression_statement') return null;
  const e = s.namedChildren[0];
  return e?.type === 'assignment_expression' && e.childForFieldName('operator')?.text === '=' ? e : null;
}

/** A value that is safe and cheap to compute in every lane: no calls but pure math, no loads but the target itself. */
function cheapPure(rhs: SyntaxNode, lhsText: string): boolean {
  for (const c of rhs.descendantsOfType('call_expression')) if (!PURE_MATH.test(c.childForFieldName('function')?.text ?? '')) return false;
  if (rhs.type === 'call_expression' && !PURE_MATH.test(rhs.childForFieldName('function')?.text ?? '')) return false;
  const loads = [...(rhs.type === 'subscript_expression' ? [rhs] : []), ...rhs.descendantsOfType(['subscript_expression', 'pointer_expression', 'field_expression'])];
  // A load in only one arm is often what the branch guards (`v = i < n ? in[i] : 0`): leave it alone.
  if (loads.some((l) => l.text !== lhsText && !(l.type === 'field_expression' && !l.text.includes('->') && !l.text.includes('[')))) return false;
  return rhs.descendantsOfType(['assignment_expression', 'update_expression', 'comma_expression']).length === 0;
}

export default defineCheck({
  id: 'kernel/short-branch-predication',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'low',
  status: 'retired',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '004 §H3.2 Techniques to Avoid Warp Divergence (Predicate short lanes); 004 §H3.4 Using Predication to Minimize Divergence; 003 §5.3 Warp Divergence Minimization (strategy 2)',
  summary: 'Thread-dependent if/else whose arms only select a value for the same target.',
  why: 'A branch-free select keeps the warp converged; in 004 §H3.4 (Table 8-3) removing such a branch took the example from 30 to 15 ms and 600 M to 300 M instructions, with branch-resolving stalls falling from 200 to 100 cycles.',
  messages: {
    select: 'Short divergent if/else `{{cond}}` that only selects a value for `{{lhs}}`; a branch-free select (`{{lhs}} = {{cond}} ? … : …`) avoids divergence.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      if_statement(n) {
        const m = ctx.get(cudaModel);
        const f = m.functionOf(n);
        if (!f || !(f.isKernel || f.isDevice)) return;
        // `else if` chains are multi-way selects; a nested ternary would not be clearer.
        if (n.parent?.type === 'else_clause') return;
        const cond = n.childForFieldName('condition');
        const alt = n.childForFieldName('alternative');
        if (!cond || !alt || n.text.startsWith('if constexpr')) return;
        const altBody = alt.type === 'else_clause' ? alt.namedChildren.find((c) => c.type !== 'comment') ?? null : alt;
        if (altBody?.type === 'if_statement') return;
        const a = soleAssignment(n.childForFieldName('consequence'));
        const b = soleAssignment(altBody);
        if (!a || !b) return;
        const lhs = a.childForFieldName('left')!;
        if (lhs.text.replace(/\s+/g, '') !== b.childForFieldName('left')!.text.replace(/\s+/g, '')) return;
        const ra = a.childForFieldName('right')!;
        const rb = b.childForFieldName('right')!;
        if (!cheapPure(ra, lhs.text) || !cheapPure(rb, lhs.text)) return;
        if (ctx.get(uniformity).level(cond) !== 'thread') return;
        const c = cond.text.replace(/^\((.*)\)$/s, '$1').trim();
        const lines = ctx.linesOf(n);
        const indent = lines.match(/^[ \t]*/)?.[0] ?? '';
        const paren = (t: string) => (/^[\w.\[\]]+$/.test(t) ? t : `(${t})`);
        const text = `${indent}${lhs.text} = ${paren(c)} ? ${ra.text} : ${rb.text};`;
        // The whole-line rewrite is safe only when the lines hold nothing but this if/else (no comments or trailing code).
        const alone = lines.trim().replace(/\s+/g, ' ') === n.text.trim().replace(/\s+/g, ' ') && n.descendantsOfType('comment').length === 0;
        ctx.report({
          node: cond,
          messageId: 'select',
          data: { cond: quoteCode(c, 50), lhs: quoteCode(lhs.text, 40) },
          fix: {
            description: `Replace the if/else with \`${quoteCode(text.trim(), 80)}\`.`,
            ...(alone ? { replace: { from: n, text } } : {}),
          },
        });
      },
    };
  },
});

import { cudaModel } from '../../../src/analysis/cuda.js';
import { castOf, lineRewritable, unparenC } from '../../../src/analysis/precision-kernel.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Types a coordinate is narrowed to before the subtraction (`float`, the precision typedef). */
const NARROW = /^(compute_t|float)$/;
/** Center / origin / reference values a coordinate is centered on (catalog detect clause). */
const CENTER = /^(cent(er|re)\w*|\w*_cent(er|re)\w*|c[xyz]|origin\w*|\w*_origin|ref\w*|\w*_ref)$/i;

/** `x[i]`, `__ldg(&x[i])`, `__ldg(x + i)`: a read of fp64 storage. */
function storageRead(n: SyntaxNode | null): boolean {
  const u = unparenC(n);
  if (!u) return false;
  if (u.type === 'subscript_expression') return true;
  return u.type === 'call_expression' && u.childForFieldName('function')?.text === '__ldg';
}

/** Base identifier of `center_x`, `center[0]`, `c.x`. */
function baseName(n: SyntaxNode | null): string {
  let u = unparenC(n);
  while (u && (u.type === 'subscript_expression' || u.type === 'field_expression')) u = u.childForFieldName(u.type === 'subscript_expression' ? 'argument' : 'argument');
  return u?.type === 'identifier' ? u.text : '';
}

function analyse(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  for (const b of ctx.source.root.descendantsOfType('binary_expression')) {
    if (b.childForFieldName('operator')?.text !== '-' || !m.inDeviceCode(b)) continue;
    const left = castOf(b.childForFieldName('left'));
    if (!left || !NARROW.test(left.type) || !storageRead(left.value)) continue;
    const rightNode = b.childForFieldName('right');
    // `(compute_t)(ref_x[1])` parses as a call of `(compute_t)`: a typedef name is not known to be a type.
    const rightCall = unparenC(rightNode);
    const callCast = rightCall?.type === 'call_expression' && NARROW.test(unparenC(rightCall.childForFieldName('function'))?.text ?? '') ? rightCall.childForFieldName('arguments')?.namedChildren[0] : null;
    const rightCast = callCast ? { type: left.type, value: callCast } : castOf(rightNode);
    const center = rightCast ? rightCast.value : unparenC(rightNode);
    if (!CENTER.test(baseName(center))) continue;
    const fixed = `(${left.type})(${left.value.text} - ${center!.text})`;
    ctx.report({ node: b, messageId: 'castBeforeCentering', data: { code: b.text.replace(/\s+/g, ' '), fixed }, fix: fix(ctx, b, fixed) });
  }
}

/** Catalog rewrite `(compute_t)(x[i] - center_x)`, safe-one-line: the subtraction moves inside the cast. */
function fix(ctx: CheckContext, b: SyntaxNode, fixed: string): FixSpec {
  const description = `Subtract in double, then cast: \`${fixed}\`.`;
  const line = ctx.linesOf(b);
  if (!lineRewritable(ctx, b, line) || b.text.includes('__FMT_')) return { description };
  const col = b.startPosition.column;
  return { description, replace: { from: b, text: line.slice(0, col) + fixed + line.slice(col + b.text.length) } };
}

export default defineCheck({
  id: 'precision/cast-before-centering',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['nvrtc-in-python', 'cuda'],
  citation:
    '003 §6.6 Review Checklist for Precision ("Storage reads stay double, cast to compute_t after subtraction"); 003 §6.4 When fp64 Is Required (catastrophic cancellation when |x1 − x2|/|x1| < 1e-6); 003 §7.1',
  summary: 'fp64 coordinate narrowed to compute_t/float before the centering subtraction.',
  why: 'fp32 keeps ~7 decimal digits, so a coordinate rounded to fp32 before centering loses everything below 1e-7 of its magnitude (catastrophic cancellation when |x1 − x2|/|x1| < 1e-6, 003 §6.3/§6.4); subtracting in fp64 first keeps it.',
  messages: {
    castBeforeCentering:
      'Coordinate is cast to compute_t before the centering subtraction (`{{code}}`); subtract in double first, then cast (`{{fixed}}`), to avoid fp32 cancellation.',
  },
  fix: 'safe',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

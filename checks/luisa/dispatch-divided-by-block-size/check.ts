import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { lastName, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const BLOCK_NAME = /^(block|block_?size|bs|k_?block\w*|block_?dim(_?x)?|block_?threads|threads_?per_?block|k_?threads_?per_?block|n_?threads_?per_?block)$/i;

/** A variable that names a count of blocks, not of threads. */
const BLOCK_COUNT = /^(k_?)?(num_?blocks|n_?blocks|block_?count|num_?groups|group_?count|grid_?size(_?x)?|num_?ctas?|cta_?count)$/i;

const op = (n: SyntaxNode | null): string | undefined => (n?.type === 'binary_expression' ? n.childForFieldName('operator')?.type : undefined);

function nameOf(n: SyntaxNode | null): string | null {
  if (!n) return null;
  if (n.type === 'identifier') return n.text;
  if (n.type === 'field_expression') return n.childForFieldName('field')?.text ?? null;
  if (n.type === 'qualified_identifier') return lastName(n.text.replace(/\s/g, ''));
  return null;
}

/** `n` of `n / bs`, `(n + bs - 1) / bs`, `(n + 255u) / 256u`; null when the numerator is anything else. */
function numerator(m: LuisaModel, div: SyntaxNode, d: SyntaxNode): { total: SyntaxNode; ceil: boolean } | null {
  const l = unparen(div.childForFieldName('left'));
  if (!l) return null;
  const dv = m.constValue(d);
  const same = (x: SyntaxNode | null): boolean => !!x && (x.text.replace(/\s/g, '') === d.text.replace(/\s/g, '') || (dv !== null && m.constValue(x) === dv));
  if (op(l) === '-' && m.constValue(l.childForFieldName('right')) === 1) {
    const sum = unparen(l.childForFieldName('left'));
    if (op(sum) === '+' && same(unparen(sum!.childForFieldName('right')))) return { total: sum!.childForFieldName('left')!, ceil: true };
  }
  if (op(l) === '+') {
    const r = unparen(l.childForFieldName('right'));
    const minusOne = op(r) === '-' && same(unparen(r!.childForFieldName('left'))) && m.constValue(r!.childForFieldName('right')) === 1;
    if (minusOne || (dv !== null && m.constValue(r) === dv - 1)) return { total: l.childForFieldName('left')!, ceil: true };
    return null;
  }
  if (op(l) === '-') return null;
  return { total: l, ceil: false };
}

export default defineCheck({
  id: 'luisa/dispatch-divided-by-block-size',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §5.7 (LuisaCompute-specific trap 1: "dispatch(n) takes a total thread count, not a block count … Dispatching n/block_size silently under-dispatches by BS×")',
  summary: 'Shader dispatch size divided by the block size (LuisaCompute dispatch takes threads, not blocks).',
  why: 'LuisaCompute computes the grid as ceil(n / block_size) itself, so dispatching n / block_size launches 1/BS of the threads and, as 000 §5.7 trap 1 found, every case still "passes" in about 0 ms.',
  messages: {
    divided: '`{{code}}`: dispatch() takes the total thread count, not the number of blocks; dividing by the block size launches 1/{{bs}} of the threads. Use `.dispatch({{total}})`.',
    count: '`{{code}}` is a block count, but dispatch() takes the total thread count: with {{bs}}-thread blocks this launches 1/{{bs}} of the threads. Use `.dispatch({{total}})`.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const d of m.dispatches) {
          const kernelDims = d.kernel?.blockSize?.dims ?? null;
          const hits: Array<{ arg: SyntaxNode; div: SyntaxNode; bs: string | number; total: string; fixable: boolean; count?: boolean }> = [];
          d.args.forEach((arg, i) => {
            // One hop through a local: `uint groups = (n + 255u) / 256u; … dispatch(groups)`.
            let expr = unparen(arg);
            let direct = true;
            if (expr?.type === 'identifier') {
              const decl = m.declOf(expr.text, expr);
              if (decl?.value && !decl.param) {
                expr = unparen(decl.value);
                direct = false;
              }
            }
            if (!expr) return;
            const divs = [expr, ...expr.descendantsOfType('binary_expression')].filter((x) => op(x) === '/');
            for (const div of divs) {
              // `(n + bs - 1) / bs * bs` rounds the thread count up; `n_items * warp_size` scales it back.
              let scaled = false;
              for (let p = div.parent; p && p.id !== expr.parent?.id; p = p.parent) if (op(p) === '*') scaled = true;
              if (scaled) continue;
              const divisor = unparen(div.childForFieldName('right'));
              if (!divisor) continue;
              const dv = m.constValue(divisor);
              const bsDim = kernelDims ? kernelDims[i] : null;
              const num = numerator(m, div, divisor);
              let matched = false;
              // `(n + 2u * bs - 1u) / (2u * bs)`: two items per thread, still a block count.
              const factors = op(divisor) === '*' ? [unparen(divisor.childForFieldName('left')), unparen(divisor.childForFieldName('right'))] : [];
              const bsFactor = factors.find((f) => !!f && ((bsDim !== null && m.constValue(f) === bsDim) || BLOCK_NAME.test(nameOf(f) ?? '')));
              if (bsFactor && factors.some((f) => f && f.id !== bsFactor.id && m.constValue(f) !== null)) matched = true;
              else if (dv !== null && bsDim !== null) matched = dv === bsDim;
              else if (BLOCK_NAME.test(nameOf(divisor) ?? '')) matched = true;
              // Without the kernel, a ceil-division by a warp multiple is the CUDA grid formula.
              else if (bsDim === null && num?.ceil && dv !== null && dv >= 32 && dv % 32 === 0) matched = true;
              if (!matched) continue;
              hits.push({ arg, div, bs: bsFactor ? m.constValue(bsFactor) ?? bsFactor.text : dv ?? bsDim ?? divisor.text, total: num ? (bsFactor ? `${num.total.text} / ${factors.find((f) => f && f.id !== bsFactor.id)!.text}` : num.total.text) : 'n', fixable: !bsFactor && direct && div.id === expr.id && !!num });
              return;
            }
            // A block count by name: `constexpr auto num_blocks = 4u; … dispatch(num_blocks)` against a 256-thread block.
            const a = unparen(arg);
            const bsDim = kernelDims ? kernelDims[i] : null;
            if (a?.type === 'identifier' && BLOCK_COUNT.test(a.text) && bsDim !== null && bsDim > 1) {
              hits.push({ arg, div: a, bs: bsDim, total: `${a.text} * ${bsDim}u`, fixable: false, count: true });
            }
          });
          if (!hits.length) continue;
          let replace: { from: SyntaxNode; text: string } | undefined;
          if (hits.every((h) => h.fixable) && d.node.startPosition.row === d.node.endPosition.row) {
            // Same-length normalization: offsets in the parsed text are offsets in the original line.
            const lineStart = ctx.source.text.lastIndexOf('\n', d.node.startIndex - 1) + 1;
            let line = ctx.linesOf(d.node);
            for (const h of [...hits].reverse()) {
              const a = h.arg.startIndex - lineStart;
              const b = h.arg.endIndex - lineStart;
              line = line.slice(0, a) + h.total + line.slice(b);
            }
            replace = { from: d.node, text: line };
          }
          const h = hits[0];
          ctx.report({
            node: d.node,
            messageId: h.count ? 'count' : 'divided',
            data: { code: quote(h.div), bs: h.bs, total: hits.length === d.args.length ? hits.map((x) => x.total).join(', ') : h.total },
            fix: replace
              ? { description: 'Dispatch the total thread count; the runtime rounds up to whole blocks.', replace }
              : { description: 'Pass the total thread count to dispatch(); the runtime computes ceil(n / block_size) itself.' },
          });
        }
      },
    };
  },
});

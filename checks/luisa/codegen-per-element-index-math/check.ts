import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const isPow2 = (v: number | null): boolean => v !== null && v > 0 && (v & (v - 1)) === 0;
const norm = (s: string): string => s.replace(/\s+/g, '');

export default defineCheck({
  id: 'luisa/codegen-per-element-index-math',
  pass: 3,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.6 Strength-reduce generated address math',
  summary: 'Div/mod coordinate decomposition recomputed for every element of a device loop.',
  why: 'Per-element div/mod decompositions are invisible in the source but dominate generated inner loops, and no XIR pass strength-reduces them for structured `$for` loops, so 000 §10.6 decomposes once per thread, strides both axes, and unrolls by k_pack = 4–8.',
  messages: {
    divmod: 'Div/mod coordinate decomposition is recomputed for every element inside the loop (`{{div}}` and `{{mod}}` by the loop-invariant `{{divisor}}`); decompose once per thread and stride: compute `row`/`col` before the `$for`, then `col += 1u` and wrap into `row`.',
  },
  fix: 'judgment',
  create(ctx) {
    const bins: SyntaxNode[] = [];
    return {
      binary_expression(node) {
        bins.push(node);
      },
      'source:exit'() {
        // Only device loops matter: `$for`/`$while`/`$loop` leave side-table entries, range-fors name dynamic_range.
        if (!bins.length || (!ctx.source.dsl?.size && !ctx.source.text.includes('dynamic_range'))) return;
        const m = ctx.get(luisaModel);
        const reported = new Set<number>();
        for (const mod of bins) {
          if (mod.childForFieldName('operator')?.type !== '%') continue;
          if (!m.inDeviceCode(mod)) continue;
          const loop = m.deviceLoopsAround(mod)[0];
          if (!loop || reported.has(loop.id)) continue;
          const divisor = mod.childForFieldName('right');
          const dividend = mod.childForFieldName('left');
          if (!divisor || !dividend) continue;
          // A power-of-two constant divisor is a shift and a mask: nothing to strength-reduce.
          const dv = m.constValue(divisor);
          if (dv !== null && (isPow2(dv) || dv <= 1)) continue;
          const body = loop.type === 'for_range_loop' ? loop.childForFieldName('body') : loop.childForFieldName('consequence') ?? loop.childForFieldName('body');
          if (!body) continue;
          // Names that change per iteration: the loop variable, everything assigned in the body, and locals
          // declared in the body from a varying value (a local recomputed from per-thread values only, e.g.
          // `auto idx = tid + rep * BS;` in a trace-time `for`, is the same every iteration).
          const varying = new Set<string>();
          const v = m.loopParts(loop)?.variable;
          if (v) varying.add(v);
          const mentions = (e: SyntaxNode, names: Set<string>): boolean => e.descendantsOfType('identifier').some((i) => names.has(i.text)) || (e.type === 'identifier' && names.has(e.text));
          // The counter of a host `for` nested in the device loop is unrolled at trace time: a constant per copy.
          const inHostForHeader = (n: SyntaxNode): boolean => {
            const f = n.parent;
            return f?.type === 'for_statement' && f.childForFieldName('update')?.id === n.id && !m.deviceLoopsAround(n).some((l) => l.id === f.id);
          };
          const decls: Array<{ name: string; value: SyntaxNode | null }> = [];
          for (const n of body.descendantsOfType(['init_declarator', 'assignment_expression', 'update_expression'])) {
            const t = n.type === 'init_declarator' ? n.childForFieldName('declarator') : n.type === 'assignment_expression' ? n.childForFieldName('left') : n.childForFieldName('argument');
            if (t?.type !== 'identifier') continue;
            if (n.type === 'init_declarator') decls.push({ name: t.text, value: n.childForFieldName('value') });
            else if (!inHostForHeader(n)) varying.add(t.text);
          }
          for (let grew = true; grew; ) {
            grew = false;
            for (const d of decls) {
              if (varying.has(d.name) || !d.value || !mentions(d.value, varying)) continue;
              varying.add(d.name);
              grew = true;
            }
          }
          if (!mentions(dividend, varying)) continue;
          // The divisor must be loop-invariant, else there is nothing to hoist.
          if (mentions(divisor, varying)) continue;
          const key = norm(divisor.text);
          const div = body.descendantsOfType('binary_expression').find((b) => b.childForFieldName('operator')?.type === '/' && norm(b.childForFieldName('right')?.text ?? '') === key && mentions(b.childForFieldName('left')!, varying) && m.deviceLoopsAround(b)[0]?.id === loop.id);
          if (!div) continue;
          reported.add(loop.id);
          ctx.report({
            node: div,
            messageId: 'divmod',
            data: { div: quoteCode(div.text, 40), mod: quoteCode(mod.text, 40), divisor: quoteCode(divisor.text, 30) },
            fix: { description: 'Compute row = start / width and col = start % width once per thread before the loop, advance col by the stride each step and carry into row; hoist invariant bases; unroll by k_pack = 4–8 when the trip count divides evenly (000 §10.6).' },
          });
        }
      },
    };
  },
});

import { hostFunctionOf } from '../../../src/analysis/flow.js';
import { luisaModel } from '../../../src/analysis/luisa.js';
import { calleePath, contains, lastName, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Result consumers (catalog: functions named `save|write|process|consume|read|verify|check`). */
const CONSUMER = /(^|_)(save|write|process|consume|read|verify|check)|^(save|write|process|consume|read|verify|check)[A-Z]/i;
/** Release-only calls: the intended use of a dtor callback (000 §8.8.5). */
const RELEASE = /^(reset|clear|close|fclose|free|delete\w*|deallocate\w*|release|unref|decrement\w*|shrink_to_fit|unlock)$/;

/** `host` in `host.data()`, `luisa::span{*out}`, `out->data()`. */
function hostTarget(arg: SyntaxNode | null | undefined): string | null {
  let a = unparen(arg ?? null);
  for (let g = 0; a && g < 8; g++) {
    if (a.type === 'identifier') return a.text;
    if (a.type === 'pointer_expression' || a.type === 'parenthesized_expression') a = unparen(a.namedChildren[a.namedChildren.length - 1] ?? null);
    else if (a.type === 'call_expression') {
      const fn = a.childForFieldName('function');
      a = fn?.type === 'field_expression' ? fn.childForFieldName('argument') : a.childForFieldName('arguments')?.namedChildren[0] ?? null;
    } else if (a.type === 'compound_literal_expression') a = a.childForFieldName('value')?.namedChildren[0] ?? null;
    else return null;
  }
  return null;
}

export default defineCheck({
  id: 'luisa/dtor-callback-used-for-readback',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §8.8.1 Understanding the Two Callbacks; 000 §8.8.5 When to Use Which; 000 §8.8.6 Key Rules, rule 2',
  summary: 'add_dtor_callback used to read downloaded results (it fires before GPU completion).',
  why: 'add_dtor_callback fires from ~CommandList right after submission consumed the list, with no ordering against GPU execution, so a readback there sees a buffer the GPU has not written yet; only add_callback runs after completion (000 §8.8.1, §8.8.6 rule 2).',
  messages: {
    readback: '`add_dtor_callback` body {{what}}: add_dtor_callback has no GPU-completion guarantee; reading results there races with the GPU — use add_callback.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const downloads = m.callsNamed('copy_to');
        for (const c of m.callsNamed('add_dtor_callback')) {
          const lam = c.args[0];
          const body = lam?.type === 'lambda_expression' ? lam.childForFieldName('body') : null;
          if (!body || m.inDeviceCode(c.node)) continue;
          const fn = hostFunctionOf(c.node);
          // Download destinations recorded in the same function, and captures initialized from them.
          const dest = new Set<string>();
          for (const d of downloads) {
            if (hostFunctionOf(d.node)?.id !== fn?.id) continue;
            const h = hostTarget(d.args[0]);
            if (h) dest.add(h);
          }
          for (const ci of lam!.childForFieldName('captures')?.namedChildren ?? []) {
            if (ci.type !== 'lambda_capture_initializer') continue;
            const r = ci.childForFieldName('right');
            const l = ci.childForFieldName('left');
            if (l && r && r.descendantsOfType('identifier').some((i) => dest.has(i.text))) dest.add(l.text);
          }
          let what: string | null = null;
          for (const n of body.descendantsOfType(['identifier', 'call_expression'])) {
            if (n.type === 'call_expression') {
              const name = lastName(calleePath(n.childForFieldName('function'))) ?? '';
              if (CONSUMER.test(name)) { what = `calls \`${name}\``; break; }
              continue;
            }
            if (!dest.has(n.text)) continue;
            // `out->clear()`, `staging.reset()`, `free(p)`: releasing the buffer is the intended use.
            let p: SyntaxNode | null = n.parent;
            while (p && (p.type === 'field_expression' || p.type === 'pointer_expression' || p.type === 'parenthesized_expression')) p = p.parent;
            const call = p?.type === 'call_expression' ? p : p?.type === 'argument_list' ? p.parent : null;
            if (call && RELEASE.test(lastName(calleePath(call.childForFieldName('function'))) ?? '')) continue;
            what = `reads \`${n.text}\`, the destination of a \`copy_to\``;
            break;
          }
          if (!what) continue;
          const field = c.node.childForFieldName('function')?.childForFieldName('field');
          if (!field || !contains(c.node, field)) continue;
          const line = ctx.linesOf(field).split('\n')[0];
          const col = field.startPosition.column;
          const fixed = line.slice(0, col) + 'add_callback' + line.slice(col + 'add_dtor_callback'.length);
          ctx.report({
            node: c.node,
            messageId: 'readback',
            data: { what },
            fix: { description: 'Use `add_callback`, which runs after the GPU has finished the list.', replace: { from: field, text: fixed } },
          });
        }
      },
    };
  },
});

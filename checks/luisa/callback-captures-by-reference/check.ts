import { luisaModel } from '../../../src/analysis/luisa.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** `auto p = host.data();`, `= &x`, `= owner.get()`: a deduced raw pointer into someone else's storage. */
const RAW_POINTER_INIT = /(\.|->)(data|get)\s*\(\s*\)$|^&\s*\w/;

export default defineCheck({
  id: 'luisa/callback-captures-by-reference',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §8.8.4 Capturing Resources for Callbacks; 000 §8.8.6 Key Rules, rule 3',
  summary: 'add_callback / add_dtor_callback lambda captures by reference, `this`, or a raw pointer.',
  why: 'The callback runs on a worker thread after the GPU finishes (or when the list is destroyed), after the submitting scope has returned, so references and raw pointers to stack data dangle (000 §8.8.4, §8.8.6 rule 3).',
  messages: {
    byRef: '`{{method}}` lambda captures {{what}}: Callback captures by reference or raw pointer; it runs after the enclosing scope has ended (use-after-free). Capture by value, shared_ptr or moved unique_ptr.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const c of m.callsNamed(/^add_(dtor_)?callback$/)) {
          const lam = c.args[0];
          if (lam?.type !== 'lambda_expression' || m.inDeviceCode(c.node)) continue;
          const caps = lam.childForFieldName('captures');
          if (!caps) continue;
          const bad: string[] = [];
          const isRawPointer = (name: string): boolean => {
            const d = m.declOf(name, c.node);
            if (!d) return false;
            if (d.pointer) return true;
            return /^auto$/.test(d.type.trim()) && !!d.value && RAW_POINTER_INIT.test(d.value.text.trim());
          };
          const kids = caps.children;
          for (let i = 0; i < kids.length; i++) {
            const k = kids[i];
            if (k.type === 'lambda_default_capture') {
              if (k.text.trim() === '&') bad.push('everything by reference (`[&]`)');
              else {
                // `[=]` copies what the body names: a raw pointer is copied as a dangling pointer.
                const body = lam.childForFieldName('body');
                const seen = new Set<string>();
                for (const id of body?.descendantsOfType('identifier') ?? []) {
                  if (seen.has(id.text)) continue;
                  seen.add(id.text);
                  const d = m.declOf(id.text, c.node);
                  if (d && d.node.startIndex < lam.startIndex && isRawPointer(id.text)) bad.push(`raw pointer \`${id.text}\` (through \`[=]\`)`);
                }
              }
            } else if (k.type === '&' && kids[i + 1]?.type === 'identifier') {
              bad.push(`\`&${kids[i + 1].text}\` by reference`);
              i++;
            } else if (k.type === 'this') {
              bad.push('`this`');
            } else if (k.type === 'identifier') {
              if (isRawPointer(k.text)) bad.push(`raw pointer \`${k.text}\``);
            } else if (k.type === 'lambda_capture_initializer') {
              const left = k.childForFieldName('left');
              const right = k.childForFieldName('right');
              if (k.text.trim().startsWith('&')) bad.push(`\`${k.text.trim()}\` by reference`);
              else if (right && ((right.type === 'identifier' && isRawPointer(right.text)) || RAW_POINTER_INIT.test(right.text.trim()))) bad.push(`raw pointer \`${left?.text ?? right.text}\``);
            }
          }
          if (!bad.length) continue;
          ctx.report({
            node: caps as SyntaxNode,
            messageId: 'byRef',
            data: { method: c.name, what: bad.join(', ') },
            fix: { description: 'Own the data in the lambda: `auto buf = std::make_shared<luisa::vector<float>>(n);` captured as `[buf]`, or `[data = std::move(owned)]` for a unique_ptr.' },
          });
        }
      },
    };
  },
});

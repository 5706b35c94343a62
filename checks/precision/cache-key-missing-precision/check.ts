import { kernelTemplates, type KeyParam, type KeySite } from '../../../src/analysis/kernel-templates.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';

function short(text: string): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > 70 ? one.slice(0, 67) + '...' : one;
}

/**
 * `"ring-area"` → `f"ring-area-{compute_type}"` on the key's own line, only when the precision value is a
 * plain name or attribute bound in the same function as the key (else it is not in scope there).
 */
function precisionFix(ctx: CheckContext, s: KeySite, p: KeyParam): FixSpec | undefined {
  const m = ctx.get(pythonModel);
  const arg = s.nameArg;
  const value = p.node.type === 'keyword_argument' ? p.node.childForFieldName('value') : p.node.type === 'interpolation' ? p.node.namedChildren[0] ?? null : null;
  if (!arg || arg.type !== 'string' || !value || !/^(identifier|attribute)$/.test(value.type)) return undefined;
  if (arg.startPosition.row !== arg.endPosition.row || m.scopeOf(p.node) !== m.scopeOf(arg)) return undefined;
  const start = arg.children.find((c) => c.type === 'string_start');
  const end = arg.children.find((c) => c.type === 'string_end');
  if (!start || !end) return undefined;
  const prefix = start.text.replace(/["']+$/, '');
  const quote = start.text.slice(prefix.length);
  const body = arg.text.slice(start.text.length, arg.text.length - end.text.length);
  let literal: string;
  if (s.nameKind === 'literal' && prefix === '' && !/[{}\\]/.test(body)) literal = `f${quote}${body}-{${value.text}}${quote}`;
  else if (s.nameKind === 'fstring' && /^[fF]$/.test(prefix)) literal = `${start.text}${body}-{${value.text}}${end.text}`;
  else return undefined;
  const line = ctx.linesOf(arg);
  const col = arg.startPosition.column;
  const text = line.slice(0, col) + literal + line.slice(col + arg.text.length);
  return { description: `Interpolate the precision into the key name: \`${literal}\`.`, replace: { from: arg, text } };
}

export default defineCheck({
  id: 'precision/cache-key-missing-precision',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §7.1 Template Specialization for Precision Dispatch (`make_kernel_cache_key(f"my-kernel-{compute_type}", source)`); 003 §6.6 ("Cache key includes precision variant"); 003 §7.5',
  summary: 'Kernel cache key that hashes neither the formatted source nor the compute type of a precision template.',
  why: 'The fp32 and fp64 builds of one template then share a module-cache entry, so a consumer GPU can run the fp64 build at 1:64 of fp32 throughput or an fp32 build where fp64 is required (003 §6.1, §7.1).',
  messages: {
    missingPrecision:
      'Kernel cache key `{{code}}` does not include the precision variant ({{param}}); fp32 and fp64 builds of this template can collide in the module cache.',
  },
  fix: 'safe',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const facts = ctx.get(kernelTemplates);
        for (const s of facts.keySites) {
          const p = s.missing.find((x) => x.precision);
          if (!p || !s.nameArg) continue;
          ctx.report({
            node: s.nameArg,
            messageId: 'missingPrecision',
            data: { code: short((s.keyCall ?? s.nameArg).text), param: `${p.name}=${short(p.value)}` },
            fix: precisionFix(ctx, s, p) ?? {
              description: 'Interpolate the compute type into the key name (`f"<name>-{compute_type}"`), or hash the formatted source rather than the template.',
            },
          });
        }
      },
    };
  },
});

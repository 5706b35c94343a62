import { kernelTemplates } from '../../../src/analysis/kernel-templates.js';
import { defineCheck } from '../../../src/engine/check.js';

function short(text: string): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > 70 ? one.slice(0, 67) + '...' : one;
}

export default defineCheck({
  id: 'nvrtc/cache-key-incomplete',
  pass: 6,
  severity: 'low-medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['python'],
  citation: '003 §7.2 Compilation Caching (SHA1 cache); 003 §7.5 JIT Cost Amortization ("Cache key includes ALL parameterizations (precision, block size, etc.)"); 003 §9 Pass 6',
  summary: 'Kernel cache key that misses a .format value or a run-time compile option of the compiled source.',
  why: 'Two variants that share a key share one cached module, so the second caller silently runs a binary built for other parameters instead of paying its own 20–400 ms NVRTC compile (003 §7.2, §7.3, §7.5).',
  messages: {
    incomplete:
      'Kernel cache key `{{code}}` omits parameter(s) {{params}} that change the compiled binary; variants can collide in the module cache.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const facts = ctx.get(kernelTemplates);
        for (const s of facts.keySites) {
          // Catalog §2.4: precision alone is reported by precision/cache-key-missing-precision.
          if (!s.missing.some((p) => !p.precision)) continue;
          // A bare `cache_key="..."` is reported on its keyword, so the precision rule's finding on the string stays separate.
          const node = s.keyCall ?? s.node.parent ?? s.node;
          ctx.report({
            node,
            messageId: 'incomplete',
            data: {
              code: short((s.keyCall ?? s.node).text),
              params: s.missing.map((p) => (p.origin === 'options' ? `options (${short(p.value)})` : `${p.name}=${short(p.value)}`)).join(', '),
            },
            fix: {
              description: 'Include the varying parameters in the key name (`f"name-{compute_type}-{block}"`), hash the formatted source instead of the template, or hash the options tuple together with the source.',
            },
          });
        }
      },
    };
  },
});

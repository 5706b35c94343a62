import { pythonModel, runsAtImport } from '../../../src/analysis/python.js';
import { defineCheck } from '../../../src/engine/check.js';
import { NVRTC_COLD } from '../../../src/config/costs.js';

// The runtime's SHA1 module cache is what request_nvrtc_warmup fills: only its compile path counts.
const RUNTIME_COMPILE = ['*.compile_kernels', 'compile_kernels', 'make_kernel_cache_key'];

export default defineCheck({
  id: 'nvrtc/missing-module-warmup',
  pass: 6,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation:
    '003 §7.3 Precompilation/Warmup (ADR-0034) (level 2 NVRTC module warmup); 003 §7.5 ("Module declares request_nvrtc_warmup() at module scope"); 003 §10 (row "NVRTC cold compilation 20-400 ms per unit → Mandate request_nvrtc_warmup()")',
  summary: 'Module compiles NVRTC kernels but declares no module-scope request_nvrtc_warmup().',
  why: 'Without a module-scope warmup the first call of each kernel source unit pays a cold NVRTC compilation (' + NVRTC_COLD + ') on the request path instead of in the background at import (003 §7.3, §10).',
  messages: {
    missingWarmup: 'Module compiles NVRTC kernels (`{{code}}`) but does not declare request_nvrtc_warmup() at module scope; first calls pay a cold NVRTC compile (' + NVRTC_COLD + ').',
    moveToModule: '`{{code}}` runs only when `{{fn}}` is called: move request_nvrtc_warmup() to module scope so the NVRTC warmup starts at import; first calls otherwise pay a cold NVRTC compile (' + NVRTC_COLD + ').',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const root = m.source.root;
        // The runtime module implements compile_kernels / the warmup itself.
        for (const fn of root.descendantsOfType('function_definition')) {
          const name = fn.childForFieldName('name')?.text ?? '';
          if (name === 'compile_kernels' || vocab.nvrtc_warmup_calls.includes(name)) return;
        }
        const calls = root.descendantsOfType('call');
        const compiles = calls.filter((c) => m.isCall(c, RUNTIME_COMPILE));
        if (!compiles.length) return;
        if (calls.some((c) => m.callMatches(c, vocab.warmup_delegates))) return;
        const warmups = calls.filter((c) => m.callMatches(c, vocab.nvrtc_warmup_calls));
        if (warmups.some(runsAtImport)) return;
        const short = (t: string) => {
          const first = t.split('\n')[0];
          return first.length > 60 ? first.slice(0, 57) + '...' : first + (t.includes('\n') ? ' ...' : '');
        };
        if (warmups.length) {
          for (const w of warmups) {
            const scope = m.scopeOf(w);
            ctx.report({
              node: w,
              messageId: 'moveToModule',
              data: { code: short(w.text), fn: scope.type === 'function_definition' ? scope.childForFieldName('name')?.text ?? '?' : '__main__' },
              fix: { description: 'Call `request_nvrtc_warmup([...])` at module scope, right after the kernel sources are defined.' },
            });
          }
          return;
        }
        const first = compiles.find((c) => !m.isCall(c, ['make_kernel_cache_key'])) ?? compiles[0];
        ctx.report({
          node: first,
          messageId: 'missingWarmup',
          data: { code: short(first.text) },
          fix: { description: 'Add `request_nvrtc_warmup([("<kernel>", <source>), ...])` at module scope for each kernel source unit this module compiles.' },
        });
      },
    };
  },
});

import { kernelTemplates } from '../../../src/analysis/kernel-templates.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { matchesVocab, pyArgs } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { NVRTC_COLD } from '../../../src/config/costs.js';

function short(text: string): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > 70 ? one.slice(0, 67) + '...' : one;
}

export default defineCheck({
  id: 'nvrtc/missing-cache-key',
  pass: 6,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §7.5 JIT Cost Amortization ("Kernel source uses make_kernel_cache_key() for SHA1 caching"); 003 §7.2 Compilation Caching',
  summary: 'Runtime kernel compilation without a make_kernel_cache_key() cache key (or raw NVRTC outside the runtime).',
  why: 'Without a key the SHA1 module cache cannot hit, so every call pays a cold NVRTC compile (' + NVRTC_COLD + ') instead of a dictionary lookup (003 §7.2, §7.3, §10).',
  messages: {
    noKey: 'Runtime compilation `{{code}}` without make_kernel_cache_key(): the module is recompiled instead of hitting the SHA1 module cache.',
    rawNvrtc: 'Direct NVRTC call `{{code}}` outside the runtime module bypasses make_kernel_cache_key() and the SHA1 module cache: the module is recompiled on every call.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        const vocab = ctx.config.vocab;
        const stem = (ctx.source.path.split('/').pop() ?? '').replace(/\.pyi?$/, '');
        // The runtime module implements the cache itself: it compiles with NVRTC behind the key lookup.
        if (vocab.kernel_runtime_modules.includes(stem)) return;
        const insideCompileImpl = (n: SyntaxNode): boolean => {
          for (let p = n.parent; p; p = p.parent) {
            if (p.type === 'function_definition' && matchesVocab(p.childForFieldName('name')?.text ?? null, vocab.kernel_compile_calls)) return true;
          }
          return false;
        };
        for (const c of ctx.get(kernelTemplates).compileCalls) {
          const { positional, keywords } = pyArgs(c);
          if (keywords.has('cache_key') || positional.length >= 3) continue;
          if (c.childForFieldName('arguments')?.namedChildren.some((a) => a.type === 'dictionary_splat' || a.type === 'list_splat')) continue;
          if (insideCompileImpl(c)) continue;
          ctx.report({
            node: c,
            messageId: 'noKey',
            data: { code: short(c.text) },
            fix: { description: 'Pass `cache_key=make_kernel_cache_key("<name>-{compute_type}", src)` so repeat calls hit the SHA1 module cache.' },
          });
        }
        // Raw NVRTC in library code; tests and benchmarks are not the library.
        if (m.testOrBench) return;
        const nvrtc = ctx.source.root.descendantsOfType('call').filter((c) => matchesVocab(m.callPath(c), vocab.nvrtc_program_calls));
        const creates = new Set(nvrtc.filter((c) => /Create/.test(m.callPath(c) ?? '')).map((c) => m.scopeOf(c).id));
        for (const c of nvrtc) {
          const scope = m.scopeOf(c);
          // One finding per program: its creation, or the compile when the program is created elsewhere.
          if (!/Create/.test(m.callPath(c) ?? '') && creates.has(scope.id)) continue;
          if (insideCompileImpl(c)) continue;
          // `@functools.cache` already compiles once per argument tuple.
          const deco = scope.parent?.type === 'decorated_definition' ? scope.parent.text.slice(0, scope.startIndex - scope.parent.startIndex) : '';
          if (/@(functools\.)?(lru_)?cache\b/.test(deco)) continue;
          ctx.report({
            node: c,
            messageId: 'rawNvrtc',
            data: { code: short(c.text) },
            fix: { description: 'Compile through `runtime.compile_kernels(cache_key=make_kernel_cache_key(...), source=src, kernel_names=(...))`.' },
          });
        }
      },
    };
  },
});

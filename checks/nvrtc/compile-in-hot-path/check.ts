import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { pyArgs } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { NVRTC_COLD, RAWKERNEL_NEW } from '../../../src/config/costs.js';

const LAZY_GUARD = /\bis\s+None\b|\bnot\s+in\b|^\s*not\s|\bis\s+not\s+None\b|\bin\b/;

/** The compile sits behind a cache lookup: `if key not in _CACHE:`, `if k is None:`, `except KeyError:`, or an earlier `if key in _CACHE: return ...`. */
function memoizedLookup(call: SyntaxNode, scope: SyntaxNode): boolean {
  for (let p = call.parent; p && p.id !== scope.id; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const cond = p.childForFieldName('condition');
      if (cond && !(cond.startIndex <= call.startIndex && call.endIndex <= cond.endIndex) && /\bis\s+None\b|\bnot\s+in\b|^\s*not\s/.test(cond.text)) return true;
    }
    if (p.type === 'except_clause' && /\b(KeyError|LookupError|AttributeError)\b/.test(p.text.split('\n')[0])) return true;
  }
  const body = scope.type === 'function_definition' ? scope.childForFieldName('body') : null;
  for (const s of body?.namedChildren ?? []) {
    if (s.startIndex >= call.startIndex) break;
    if (s.type !== 'if_statement') continue;
    const cond = s.childForFieldName('condition')?.text ?? '';
    const cons = s.childForFieldName('consequence');
    if (LAZY_GUARD.test(cond) && cons?.namedChildren.some((c) => c.type === 'return_statement')) return true;
  }
  return false;
}

/** A factory called only at import time (module scope) or from memoized code: it runs once. */
function calledOnlyOnce(m: PyModel, scope: SyntaxNode, calls: SyntaxNode[]): boolean {
  const name = scope.childForFieldName('name')?.text;
  if (!name || scope.parent?.type === 'class_definition' || scope.parent?.parent?.type === 'class_definition') return false;
  const uses = calls.filter((c) => c.childForFieldName('function')?.text === name);
  return uses.length > 0 && uses.every((c) => m.scopeOf(c).type === 'module');
}

const CUPY_MEMOIZED = ['cupy.RawModule', 'cupy.RawKernel', 'cp.RawModule', 'cp.RawKernel'];

export default defineCheck({
  id: 'nvrtc/compile-in-hot-path',
  pass: 6,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §7.5 JIT Cost Amortization ("No compilation in hot loops (compile once, launch many times)"); 003 §9 Pass 6',
  summary: 'Kernel compilation or module construction inside a loop or hot path.',
  why: 'A cold NVRTC compilation costs ' + NVRTC_COLD + ' (003 §7.3: 20–400 ms per unit; a new CuPy RawKernel source per call: ' + RAWKERNEL_NEW + ') and a CCCL spec 950–1,460 ms (003 §7.3, §10), paid again on every iteration or call that rebuilds the module instead of launching a compiled one.',
  messages: {
    compileInHotPath: 'Kernel compilation `{{code}}` inside {{where}}; compile once (module scope or cached) and launch many times.',
    cachedInLoop: 'Kernel compilation `{{code}}` inside a loop; the cache_key turns repeats into SHA1 lookups, but the source is still formatted and hashed every iteration: compile once before the loop and launch many times.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        const vocab = ctx.config.vocab;
        const calls = m.source.root.descendantsOfType('call');
        const reported = new Set<number>();
        for (const call of calls) {
          if (!m.callMatches(call, vocab.nvrtc_compile_calls)) continue;
          const scope = m.scopeOf(call);
          if (scope.type === 'module' || !m.hotPath(call)) continue;
          const loop = m.loopOf(call);
          const cached = pyArgs(call).keywords.has('cache_key');
          if (cached && !loop) continue;
          // CuPy memoizes a RawModule / RawKernel's compiled module per device by (source, options, backend), so
          // building one per call outside a loop is a dictionary lookup after the first call.
          if (!loop && m.callMatches(call, CUPY_MEMOIZED)) continue;
          if (memoizedLookup(call, scope) || calledOnlyOnce(m, scope, calls)) continue;
          // One finding per loop (or function): nvrtcCompileProgram + cuModuleLoadData are one compilation.
          const unit = (loop ?? scope).id;
          if (reported.has(unit)) continue;
          reported.add(unit);
          const first = call.text.split('\n')[0];
          const code = first.length > 60 ? first.slice(0, 57) + '...' : first + (call.text.includes('\n') ? ' ...' : '');
          const fnName = scope.childForFieldName('name')?.text ?? '';
          ctx.report({
            node: call,
            messageId: cached ? 'cachedInLoop' : 'compileInHotPath',
            data: { code, where: loop ? 'a loop' : `hot-path function \`${fnName}\`` },
            fix: { description: 'Hoist construction to module scope (a dict keyed by the variant) or a memoized factory (`@functools.cache`), and launch the compiled kernel here.' },
          });
        }
      },
    };
  },
});

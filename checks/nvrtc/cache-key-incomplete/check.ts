import { kernelTemplates } from '../../../src/analysis/kernel-templates.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { NVRTC_COLD } from '../../../src/config/costs.js';

const KEY_KEYWORDS = new Set(['suffix', 'key', 'cache_key']);
const ids = (n: SyntaxNode): string[] => (n.type === 'identifier' ? [n.text] : n.descendantsOfType('identifier').map((i) => i.text));

/**
 * Code generated in a factory (`def make_op(rows, cols, scalar_type):`) by a decorator that caches it under
 * a key (`@dynamic_func(suffix=suffix)`, `@gen_kernel(key=...)`): the inner function closes over values that
 * become constants of the generated code. A factory parameter that reaches those captured values but not
 * the key makes two variants share one cached kernel. Returns the key node and the missing parameters.
 */
function closureKeyGaps(root: SyntaxNode): Array<{ node: SyntaxNode; missing: string[] }> {
  const out: Array<{ node: SyntaxNode; missing: string[] }> = [];
  for (const dd of root.descendantsOfType('decorated_definition')) {
    const inner = dd.childForFieldName('definition');
    let factory: SyntaxNode | null = dd.parent;
    while (factory && factory.type !== 'function_definition') factory = factory.parent;
    if (!inner || inner.type !== 'function_definition' || !factory) continue;
    const params = new Set<string>();
    for (const prm of factory.childForFieldName('parameters')?.namedChildren ?? []) {
      const nm = prm.type === 'identifier' ? prm.text : (prm.childForFieldName('name') ?? prm.namedChildren.find((c) => c.type === 'identifier'))?.text;
      if (nm && !nm.startsWith('*')) params.add(nm);
    }
    if (!params.size) continue;
    // Names the factory binds (in its own body, not in nested functions) to the identifiers of their values.
    const binds = new Map<string, string[]>();
    for (const a of factory.descendantsOfType('assignment')) {
      let f: SyntaxNode | null = a.parent;
      while (f && f.type !== 'function_definition') f = f.parent;
      if (f?.id !== factory.id) continue;
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (left?.type === 'identifier' && right) binds.set(left.text, [...(binds.get(left.text) ?? []), ...ids(right)]);
    }
    const reach = (start: string[]): Set<string> => {
      const seen = new Set<string>();
      const todo = [...start];
      while (todo.length) {
        const n = todo.pop()!;
        if (seen.has(n)) continue;
        seen.add(n);
        for (const v of binds.get(n) ?? []) todo.push(v);
      }
      return new Set([...seen].filter((n) => params.has(n)));
    };
    for (const dec of dd.namedChildren.filter((c) => c.type === 'decorator')) {
      const call = dec.namedChildren[0];
      if (call?.type !== 'call') continue;
      const kw = call.childForFieldName('arguments')?.namedChildren.find((c) => c.type === 'keyword_argument' && KEY_KEYWORDS.has(c.childForFieldName('name')?.text ?? ''));
      const value = kw?.childForFieldName('value');
      if (!kw || !value) continue;
      // What the generated body captures from the factory: identifiers it reads that the factory binds or receives.
      const localNames = new Set(inner.descendantsOfType('identifier').filter((i) => i.parent?.type === 'assignment' && i.parent.childForFieldName('left')?.id === i.id).map((i) => i.text));
      for (const prm of inner.childForFieldName('parameters')?.namedChildren ?? []) {
        const nm = prm.type === 'identifier' ? prm.text : (prm.childForFieldName('name') ?? prm.namedChildren.find((c) => c.type === 'identifier'))?.text;
        if (nm) localNames.add(nm);
      }
      const body = inner.childForFieldName('body');
      const captured = (body ? ids(body) : []).filter((n) => !localNames.has(n) && (params.has(n) || binds.has(n)));
      const used = reach(captured);
      const keyed = reach(ids(value));
      const missing = [...used].filter((p) => !keyed.has(p));
      if (!missing.length || !keyed.size) continue;
      // Report on the key's definition when the keyword names a local (`suffix = f"..."`), else on the keyword.
      const def = value.type === 'identifier' ? factory.descendantsOfType('assignment').find((a) => a.childForFieldName('left')?.text === value.text) : undefined;
      out.push({ node: def ?? kw, missing });
    }
  }
  return out;
}

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
  why: 'Two variants that share a key share one cached module, so the second caller silently runs a binary built for other parameters instead of paying its own NVRTC compile (' + NVRTC_COLD + ') (003 §7.2, §7.3, §7.5).',
  messages: {
    incomplete:
      'Kernel cache key `{{code}}` omits parameter(s) {{params}} that change the compiled binary; variants can collide in the module cache.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        for (const g of closureKeyGaps(ctx.source.root)) {
          ctx.report({
            node: g.node,
            messageId: 'incomplete',
            data: { code: short(g.node.text), params: g.missing.join(', ') },
            fix: { description: `Add ${g.missing.map((p) => `\`{${p}}\``).join(', ')} to the key: the generated code depends on ${g.missing.length > 1 ? 'them' : 'it'} through the values it captures.` },
          });
        }
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

import { cudaModel } from '../../../src/analysis/cuda.js';
import { onceGuarded } from '../../../src/analysis/once.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { pyArgs, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';


const FIX = 'Move the call to initialization (module import, a setup function, or a helper guarded by a "configured" flag / std::call_once) so the configuration is set once per kernel.';

/** `cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, pct)`: only the carveout attribute changes the cache split. */
const namesCarveout = (args: SyntaxNode[], attrs: readonly string[]) => args.some((a) => attrs.some((t) => a.text.includes(t)));

function checkCuda(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const vocab = ctx.config.vocab;
  const calls = [
    ...m.callsMatching(vocab.cache_config_calls),
    ...m.callsMatching(vocab.func_set_attribute_calls).filter((c) => namesCarveout(c.args, vocab.carveout_attributes)),
  ].sort((a, b) => a.node.startIndex - b.node.startIndex);
  for (const c of calls) {
    if (!m.hotPath(c.node) || m.debugGated(c.node) || onceGuarded(c.node)) continue;
    ctx.report({ node: c.node, messageId: 'configChange', data: { call: oneLine(c.node.text) }, fix: { description: FIX } });
  }
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const vocab = ctx.config.vocab;
  const hits: SyntaxNode[] = [];
  for (const call of ctx.source.root.descendantsOfType('call')) {
    if (m.callMatches(call, vocab.cache_config_calls)) hits.push(call);
    else if (m.callMatches(call, vocab.func_set_attribute_calls)) {
      const { positional, keywords } = pyArgs(call);
      // `attr = cudart.cudaFuncAttribute.cudaFuncAttributePreferredSharedMemoryCarveout` bound once: read through the name.
      const scope = m.scopeOf(call);
      const bound = (a: SyntaxNode) => {
        const list = a.type === 'identifier' ? (m.assignmentsIn(scope).get(a.text) ?? m.assignmentsIn(ctx.source.root).get(a.text)) : undefined;
        return list?.length === 1 ? [a, list[0].value] : [a];
      };
      if (namesCarveout([...positional, ...keywords.values()].flatMap(bound), vocab.carveout_attributes)) hits.push(call);
    }
  }
  // CuPy: `kernel.preferred_shared_memory_carveout = 50` sets the attribute through cuFuncSetAttribute.
  for (const a of ctx.source.root.descendantsOfType('assignment')) {
    const left = a.childForFieldName('left');
    if (left?.type === 'attribute' && vocab.carveout_attributes.includes(left.childForFieldName('attribute')?.text ?? '')) hits.push(a);
  }
  hits.sort((a, b) => a.startIndex - b.startIndex);
  for (const n of hits) {
    if (!m.hotPath(n) || m.debugGated(n) || onceGuarded(n)) continue;
    ctx.report({ node: n, messageId: 'configChange', data: { call: oneLine(n.text) }, fix: { description: FIX } });
  }
}

export default defineCheck({
  id: 'sync/cache-config-change-in-hot-path',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'python'],
  citation: '003 §2.4 Operations That Cause Implicit Synchronization (row "L1/shared memory configuration change: Device-wide")',
  summary: 'L1/shared-memory configuration change (cache config, shared-memory config, carveout) in a loop or hot function.',
  why: 'An L1/shared-memory configuration change is a device-wide synchronization point (003 §2.4): the SMs must drain before the split between L1 and shared memory changes, so reconfiguring per iteration stalls the whole GPU each time.',
  messages: {
    configChange: 'Changing the L1/shared-memory configuration (`{{call}}`) in a hot path synchronizes the device; configure once at setup.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'cuda') checkCuda(ctx);
        else if (ctx.source.language === 'python') checkPython(ctx);
      },
    };
  },
});

import { luisaModel } from '../../../src/analysis/luisa.js';
import { functionName } from '../../../src/analysis/flow.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Calls that set a process environment variable (the kill switch is read at backend start). */
const SETENV = /^(setenv|_putenv_s|_putenv|putenv|SetEnvironmentVariableA?W?|_wputenv_s)$/;

export default defineCheck({
  id: 'luisa/command-reorder-disabled',
  pass: 2,
  severity: 'low',
  kind: 'performance',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §8.9 Command Reordering (the contract behind 8.1); 000 §8.1 The Pattern',
  summary: 'Command reordering switched off (set_command_reorder_enabled(false), LUISA_DISABLE_COMMAND_REORDER, config override) outside tests and benchmarks.',
  why: 'The Vulkan/DX reorder pass groups consecutive commands whose resources do not alias into one barrier-free layer; with it off every pair of commands is serialized behind a barrier, and the guide keeps the switch for strict-order A/B baselines (000 §8.1, §8.9).',
  messages: {
    disabled: '`{{code}}`: Command reordering disabled outside a test/benchmark: independent commands will be serialized behind barriers. Remove it and give commands that need ordering a real data dependency.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (m.testOrBench || !/command_reorder|COMMAND_REORDER|CommandReorder/.test(ctx.source.text)) return;
        const report = (node: SyntaxNode): void =>
          ctx.report({ node, messageId: 'disabled', data: { code: quote(node) }, fix: { description: 'Remove the switch; code that needs two commands ordered must make them touch the same resource so the reorder pass keeps them in separate layers.' } });
        const isFalse = (n: SyntaxNode | undefined): boolean => !!n && /^(false|0|0u)$/.test(n.text.trim());
        for (const c of m.callsNamed('set_command_reorder_enabled')) if (isFalse(c.args[0])) report(c.node);
        for (const c of m.callsNamed(SETENV)) if (c.args.some((a) => /LUISA_DISABLE_COMMAND_REORDER/.test(a.text))) report(c.node);
        // `bool enable_command_reorder() const noexcept override { return false; }`
        for (const f of ctx.source.root.descendantsOfType('function_definition')) {
          if (!/^(enable_command_reorder|EnableCommandReorder)$/.test(functionName(f))) continue;
          for (const r of f.descendantsOfType('return_statement')) if (isFalse(r.namedChildren[0])) report(r);
        }
      },
    };
  },
});

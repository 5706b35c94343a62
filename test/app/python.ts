import { defineCheck } from '../../src/engine/check.js';
import type { SyntaxNode } from '../../src/core/types.js';

/** Python the host-device/get-in-loop rule flags: a device read inside a loop that launches. */
export const HEADER = ['from vibespatial import runtime', 'from vibespatial.kernels import fill_kernel', '', ''];

export function loopFn(name: string, arr = 'd_sizes'): string[] {
  return [`def ${name}(${arr}, n, g, b):`, '    for k in range(n):', `        m = int(${arr}[k])`, '        runtime.launch(fill_kernel, grid=g, block=b, args=(k, m))', '', ''];
}

export function cleanFn(name: string): string[] {
  return [`def ${name}(d_total):`, '    return d_total.get()', '', ''];
}

export function pythonFile(...fns: string[][]): string {
  return [...HEADER, ...fns.flat()].join('\n').replace(/\n+$/, '\n');
}

/** 1-based line of the first line containing `needle`. */
export function lineOf(text: string, needle: string): number {
  const i = text.split('\n').findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`"${needle}" not in text`);
  return i + 1;
}

/**
 * A test-only rule with a safe multi-line fix: a `legacy_copy(...)` call statement is replaced by
 * `fast_copy(...)` over the same lines. Its replacement text carries a run of three backticks, so
 * the suggestion fence must be longer.
 */
export const legacyCopy = defineCheck({
  id: 'memory/legacy-copy-test',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation: 'test §1',
  summary: 'legacy copy (test rule)',
  why: 'Test rule.',
  messages: { legacy: 'Legacy copy `{{code}}`.' },
  fix: 'safe',
  create(ctx) {
    return {
      call(node: SyntaxNode) {
        if (node.childForFieldName('function')?.text !== 'legacy_copy') return;
        const stmt = node.parent?.type === 'expression_statement' ? node.parent : node;
        const lines = ctx.linesOf(stmt).split('\n');
        const indent = /^\s*/.exec(lines[0])?.[0] ?? '';
        const text = [`${indent}fast_copy(`, `${indent}    src,  # see \`\`\`docs\`\`\``, `${indent}    dst,`, `${indent})`].join('\n') + '\n';
        ctx.report({ node, messageId: 'legacy', data: { code: 'legacy_copy' }, fix: { description: 'Use fast_copy.', replace: { from: stmt, text } } });
      },
    };
  },
});

import type { SyntaxNode } from '../../core/types.js';
import { ancestorOf, functionStream } from '../context.js';
import { indentOf, lineWith } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';

const BLOCKING = /^(?:cudaMemset|cudaMemcpy|cudaMemset2D|cudaMemcpy2D|cudaMemcpyToSymbol|cudaMemcpyFromSymbol)$/;

/**
 * A blocking cudaMemset / cudaMemcpy → its Async form on the function's stream. A copy to the host
 * keeps the host's view: the stream is synchronized right after it, before the host reads.
 */
export const asyncMemsetMemcpy: Template = {
  id: 'async-memset-memcpy',
  rules: ['sync/blocking-memset-memcpy', 'sync/default-stream-launch-in-library'],
  languages: ['cuda'],
  build(ctx: TemplateContext): TemplateResult {
    let call: SyntaxNode | null = ancestorOf(ctx.node, ['call_expression']);
    if (!call || !BLOCKING.test(call.childForFieldName('function')?.text.replace(/^::/, '') ?? '')) {
      call = ctx.node.descendantsOfType('call_expression').find((c) => BLOCKING.test(c.childForFieldName('function')?.text.replace(/^::/, '') ?? '')) ?? null;
    }
    if (!call) return { decline: 'not a blocking cudaMemset / cudaMemcpy call' };
    const name = call.childForFieldName('function')!.text.replace(/^::/, '');
    const args = call.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
    const s = functionStream(ancestorOf(call, ['function_definition']));
    if ('none' in s) return { decline: s.none };
    const stmt = call.parent;
    if (!stmt || stmt.type !== 'expression_statement' || stmt.parent?.type !== 'compound_statement') return { decline: 'the call is not a statement of its own (its result is used)' };
    const kind = args.find((a) => /cudaMemcpy(?:HostToDevice|DeviceToHost|DeviceToDevice|Default|HostToHost)/.test(a.text))?.text.trim();
    if (name.startsWith('cudaMemcpy') && !kind && name !== 'cudaMemcpyToSymbol' && name !== 'cudaMemcpyFromSymbol') return { decline: 'copy direction is not spelled out' };
    const toHost = kind === 'cudaMemcpyDeviceToHost' || kind === 'cudaMemcpyDefault' || name === 'cudaMemcpyFromSymbol';
    const symbolDefaults = name === 'cudaMemcpyToSymbol' || name === 'cudaMemcpyFromSymbol';
    if (symbolDefaults && args.length < 4) return { decline: 'symbol copy without an explicit offset and kind' };
    const edit = lineWith(ctx.lines, call, `${name}Async(${args.map((a) => a.text).join(', ')}, ${s.raw})`);
    const edits = [edit];
    if (toHost) {
      const line = ctx.lines[stmt.endPosition.row] ?? '';
      const after = edit.text.split('\n');
      after.push(`${indentOf(ctx.lines[stmt.startPosition.row] ?? line)}cudaStreamSynchronize(${s.raw});`);
      edits[0] = { ...edit, endLine: Math.max(edit.endLine, stmt.endPosition.row + 1), text: after.join('\n') };
    }
    return {
      description: toHost
        ? `Copy with ${name}Async on \`${s.name}\` and synchronize that stream before the host reads (no device-wide legacy-stream sync).`
        : `Issue ${name}Async on \`${s.name}\`, ordered with the function's other work on that stream.`,
      edits,
      behaviourPreserving: false,
    };
  },
};

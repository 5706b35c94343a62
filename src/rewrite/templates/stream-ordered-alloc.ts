import type { SyntaxNode } from '../../core/types.js';
import { ancestorOf, functionStream } from '../context.js';
import { linesWith } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';

function callNamed(n: SyntaxNode, names: RegExp): SyntaxNode | null {
  for (let p: SyntaxNode | null = n; p; p = p.parent) {
    if (p.type === 'call_expression' && names.test(p.childForFieldName('function')?.text.replace(/^::/, '') ?? '')) return p;
    if (p.type === 'function_definition') break;
  }
  return n.descendantsOfType('call_expression').find((c) => names.test(c.childForFieldName('function')?.text.replace(/^::/, '') ?? '')) ?? null;
}

/** The pointer a cudaMalloc(&p, n) allocates: `p`. */
function allocated(call: SyntaxNode): string | null {
  const a = call.childForFieldName('arguments')?.namedChildren[0];
  if (!a) return null;
  const t = a.text.replace(/^\(\s*void\s*\*\*\s*\)\s*/, '').replace(/\s+/g, '');
  return /^&([A-Za-z_][\w.]*(?:->\w+)?)$/.exec(t)?.[1] ?? null;
}

/**
 * cudaMalloc / cudaFree in a function with one stream → cudaMallocAsync / cudaFreeAsync on it,
 * both halves together when the matching free is in the same function (a pointer from
 * cudaMallocAsync must not reach a plain cudaFree before the stream's work is done).
 */
export const streamOrderedAlloc: Template = {
  id: 'stream-ordered-alloc',
  rules: ['sync/malloc-free-in-hot-path', 'memory/raw-cuda-malloc'],
  languages: ['cuda'],
  build(ctx: TemplateContext): TemplateResult {
    const call = callNamed(ctx.node, /^(?:cudaMalloc|cudaFree)$/);
    if (!call) return { decline: 'not a cudaMalloc / cudaFree call' };
    const fn = ancestorOf(call, ['function_definition']);
    const s = functionStream(fn);
    if ('none' in s) return { decline: s.none };
    const calls = fn!.descendantsOfType('call_expression');
    const name = (c: SyntaxNode) => c.childForFieldName('function')?.text.replace(/^::/, '') ?? '';
    const args = (c: SyntaxNode) => c.childForFieldName('arguments')?.namedChildren ?? [];
    let ptr: string | null;
    if (name(call) === 'cudaMalloc') ptr = allocated(call);
    else ptr = args(call)[0]?.text.replace(/\s+/g, '') ?? null;
    if (!ptr) return { decline: 'cannot tell which pointer is allocated' };
    const mallocs = calls.filter((c) => name(c) === 'cudaMalloc' && allocated(c) === ptr);
    const frees = calls.filter((c) => name(c) === 'cudaFree' && args(c)[0]?.text.replace(/\s+/g, '') === ptr);
    if (mallocs.length === 0) return { decline: `\`${ptr}\` is allocated outside the function` };
    if (mallocs.length > 1 || frees.length > 1) return { decline: `\`${ptr}\` is allocated or freed more than once in the function` };
    if (frees.length === 0) return { decline: `\`${ptr}\` is freed outside the function; its free would have to become stream-ordered too` };
    const m = mallocs[0];
    const parts = [{ node: m, text: `cudaMallocAsync(${args(m).map((a) => a.text).join(', ')}, ${s.raw})` }];
    for (const f of frees) parts.push({ node: f, text: `cudaFreeAsync(${args(f)[0].text}, ${s.raw})` });
    const edits = parts.map((p) => linesWith(ctx.lines, [p]));
    // Two calls on one line become one edit.
    const merged = edits.length === 2 && edits[0].startLine === edits[1].startLine ? [linesWith(ctx.lines, parts)] : edits;
    return {
      description: `Allocate \`${ptr}\` stream-ordered on \`${s.name}\` (cudaMallocAsync / cudaFreeAsync from the device's memory pool) instead of a device-synchronizing cudaMalloc / cudaFree.`,
      edits: merged,
      behaviourPreserving: false,
    };
  },
};

import { escapeRe } from '../../core/regex.js';
import type { SyntaxNode } from '../../core/types.js';
import { ancestorOf, cupyAlias } from '../context.js';
import { lineWith } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';

const NAMES = /^(?:dtype|compute_dtype|compute_t|work_dtype|float_dtype|ftype)$/;

/** The function's compute type: a parameter or local named like one, else the one float type it names. */
function computeType(fn: SyntaxNode, cp: string, except: SyntaxNode): string | { none: string } {
  const params = fn.childForFieldName('parameters');
  const named = new Set<string>();
  for (const p of params?.namedChildren ?? []) {
    const id = p.type === 'identifier' ? p : p.childForFieldName('name') ?? p.namedChildren.find((c) => c.type === 'identifier');
    if (id && NAMES.test(id.text)) named.add(id.text);
  }
  for (const a of fn.descendantsOfType('assignment')) {
    const l = a.childForFieldName('left');
    if (l?.type === 'identifier' && NAMES.test(l.text) && a.startIndex < except.startIndex) named.add(l.text);
  }
  if (named.size === 1) return [...named][0];
  if (named.size > 1) return { none: `more than one compute-type name (${[...named].join(', ')})` };
  const floats = new Set<string>();
  const re = new RegExp(`\\b(?:${escapeRe(cp)}|np|numpy|cupy)\\.(float16|float32|float64)\\b`, 'g');
  const text = fn.text.slice(0, except.startIndex - fn.startIndex) + fn.text.slice(except.endIndex - fn.startIndex);
  for (const m of text.matchAll(re)) floats.add(m[1]);
  floats.delete('float64');
  if (floats.size === 1) return `${cp}.${[...floats][0]}`;
  return { none: 'the function names no single compute type (dtype parameter, or one float type)' };
}

/** An array made float64 by CuPy's default (or pinned to it) in float32 work → the function's compute type. */
export const dtypeComputeType: Template = {
  id: 'dtype-compute-type',
  rules: ['precision/fp64-default-in-fp32-path'],
  languages: ['python'],
  build(ctx: TemplateContext): TemplateResult {
    const call = ctx.node.type === 'call' ? ctx.node : ancestorOf(ctx.node, ['call']);
    if (!call) return { decline: 'not a call' };
    if (ctx.finding.messageId !== 'defaulted' && ctx.finding.messageId !== 'explicit') return { decline: `no template for ${ctx.finding.messageId}` };
    const cp = cupyAlias(ctx.source.root);
    if (!cp) return { decline: 'the file does not import cupy' };
    const fn = ancestorOf(call, ['function_definition']);
    if (!fn) return { decline: 'not inside a function' };
    const t = computeType(fn, cp, call);
    if (typeof t !== 'string') return { decline: t.none };
    const args = call.childForFieldName('arguments');
    if (!args) return { decline: 'call has no argument list' };
    const kw = args.namedChildren.find((a) => a.type === 'keyword_argument' && a.childForFieldName('name')?.text === 'dtype');
    if (ctx.finding.messageId === 'explicit') {
      if (!kw) return { decline: 'the float64 is not a dtype= keyword' };
      const v = kw.childForFieldName('value')!;
      return { description: `Use the function's compute type \`${t}\` instead of float64.`, edits: [lineWith(ctx.lines, v, t)], behaviourPreserving: false };
    }
    if (kw) return { decline: 'the call already has a dtype' };
    const inner = args.text.slice(1, -1).trim();
    const text = `(${inner}${inner.endsWith(',') || inner === '' ? '' : ', '}dtype=${t})`;
    if (args.startPosition.row !== args.endPosition.row) return { decline: 'multi-line argument list' };
    return { description: `Give the array the function's compute type \`${t}\` (CuPy's default is float64).`, edits: [lineWith(ctx.lines, args, text)], behaviourPreserving: false };
  },
};

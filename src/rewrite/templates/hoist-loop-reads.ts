import type { SyntaxNode } from '../../core/types.js';
import { cupyAlias, freshName, identifiersIn } from '../context.js';
import { indentOf, linesWith } from '../edit.js';
import type { LineEdit, Template, TemplateContext, TemplateResult } from '../types.js';

/** `D[i]` of an identifier D, the element read the finding is about. */
function elementRead(n: SyntaxNode): SyntaxNode | null {
  const subs = n.type === 'subscript' ? [n] : n.descendantsOfType('subscript');
  return subs.find((s) => s.childForFieldName('value')?.type === 'identifier') ?? null;
}

/** The read around `D[i]`: int(D[i]) / float(D[i]) / D[i].item() / D[i].get(); what it becomes on the host copy. */
function readForm(sub: SyntaxNode, host: string): { node: SyntaxNode; text: string } | null {
  const idx = sub.childForFieldName('subscript')?.text ?? sub.text.replace(/^[^[]*\[|\]$/g, '');
  const elem = `${host}[${idx}]`;
  const p = sub.parent;
  if (p?.type === 'attribute') {
    const call = p.parent;
    const attr = p.childForFieldName('attribute')?.text;
    if (call?.type === 'call' && (call.childForFieldName('arguments')?.namedChildren.length ?? 0) === 0) {
      if (attr === 'item') return { node: call, text: `${elem}.item()` };
      if (attr === 'get') return { node: call, text: elem };
    }
    return null;
  }
  if (p?.type === 'argument_list' && p.namedChildren.length === 1) {
    const call = p.parent;
    const f = call?.childForFieldName('function')?.text;
    if (call && (f === 'int' || f === 'float' || f === 'bool')) return { node: call, text: `${f}(${elem})` };
  }
  return null;
}

/**
 * Element reads of one device array inside a loop → one transfer of the whole array before the
 * loop, and host reads of that copy inside it. Declines when anything in the loop may write the
 * array (it is assigned, passed to a call, or used other than by the element reads).
 */
export const hoistLoopReads: Template = {
  id: 'hoist-loop-reads',
  rules: ['host-device/get-in-loop'],
  languages: ['python'],
  build(ctx: TemplateContext): TemplateResult {
    const sub = elementRead(ctx.node);
    if (!sub) return { decline: 'the read is not an element of a named array (D[i])' };
    const arr = sub.childForFieldName('value')!.text;
    let loop: SyntaxNode | null = sub.parent;
    while (loop && loop.type !== 'for_statement' && loop.type !== 'while_statement' && loop.type !== 'function_definition') loop = loop.parent;
    if (!loop || loop.type !== 'for_statement') return { decline: 'the read is not inside a for loop' };
    if (loop.parent?.type !== 'block' && loop.parent?.type !== 'module') return { decline: 'the loop is not a statement of a block' };
    const cp = cupyAlias(ctx.source.root);
    if (!cp) return { decline: 'the file does not import cupy: cannot tell how to copy the array' };
    const occurrences = loop.descendantsOfType('identifier').filter((i) => i.text === arr);
    const reads: Array<{ node: SyntaxNode; text: string }> = [];
    const used = identifiersIn(ctx.source.root);
    const host = freshName(arr.startsWith('d_') ? `h_${arr.slice(2)}` : `h_${arr}`, used);
    if (!host) return { decline: 'no free name for the host copy' };
    for (const occ of occurrences) {
      const s = occ.parent;
      if (s?.type !== 'subscript' || s.childForFieldName('value')?.id !== occ.id) return { decline: `\`${arr}\` is used in the loop other than by element reads (it may be written)` };
      const r = readForm(s, host);
      if (!r) return { decline: `\`${s.text}\` is read in a form the template cannot move to the host` };
      reads.push(r);
    }
    const row = loop.startPosition.row;
    const ind = indentOf(ctx.lines[row] ?? '');
    const byLine = new Map<number, Array<{ node: SyntaxNode; text: string }>>();
    for (const r of reads) {
      const k = r.node.startPosition.row;
      byLine.set(k, [...(byLine.get(k) ?? []), r]);
    }
    const edits: LineEdit[] = [{ startLine: row + 1, endLine: row, text: `${ind}${host} = ${cp}.asnumpy(${arr})  # one device→host transfer instead of one per iteration` }];
    for (const parts of byLine.values()) edits.push(linesWith(ctx.lines, parts));
    return {
      description: `Copy \`${arr}\` to the host once before the loop (\`${host}\`) and read its elements there: one transfer instead of one per iteration.`,
      edits,
      behaviourPreserving: false,
    };
  },
};

import { cupyAlias } from '../context.js';
import { lineWith } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';

/**
 * `for v in d_x:` walking a device array element by element → one transfer of the array and a
 * loop over the host copy. Declines when the loop body hands the elements back to GPU code.
 */
export const hostIterate: Template = {
  id: 'host-iterate',
  rules: ['host-device/python-loop-over-device-array'],
  languages: ['python'],
  build(ctx: TemplateContext): TemplateResult {
    if (ctx.finding.messageId !== 'loop') return { decline: 'only `for v in d_x` loops are rewritten' };
    const it = ctx.node;
    const loop = it.parent;
    if (!loop || (loop.type !== 'for_statement' && loop.type !== 'for_in_clause') || loop.childForFieldName('right')?.id !== it.id) return { decline: 'the flagged node is not the iterable of a loop' };
    const cp = cupyAlias(ctx.source.root);
    if (!cp) return { decline: 'the file does not import cupy' };
    if (!/^[\w.]+$/.test(it.text) && !/^enumerate\(\s*[\w.]+\s*\)$/.test(it.text)) return { decline: `iterable \`${it.text}\` is not a plain array (or enumerate of one)` };
    const body = loop.type === 'for_statement' ? loop.childForFieldName('body') : loop.parent;
    const left = loop.childForFieldName('left');
    const names = left ? (left.type === 'identifier' ? [left.text] : left.descendantsOfType('identifier').map((i) => i.text)) : [];
    // An element passed to a CuPy call or a kernel would now be a host scalar there.
    for (const c of body?.descendantsOfType('call') ?? []) {
      const f = c.childForFieldName('function')?.text ?? '';
      if (f.startsWith(`${cp}.`) || /launch|kernel/i.test(f)) {
        if ((c.childForFieldName('arguments')?.descendantsOfType('identifier') ?? []).some((i) => names.includes(i.text))) return { decline: `an element goes into \`${f}(…)\`: it would become a host value there` };
      }
    }
    const m = /^enumerate\(\s*([\w.]+)\s*\)$/.exec(it.text);
    const text = m ? `enumerate(${cp}.asnumpy(${m[1]}))` : `${cp}.asnumpy(${it.text})`;
    return {
      description: 'Copy the array to the host once and loop over the host copy: one transfer instead of one per element.',
      edits: [lineWith(ctx.lines, it, text)],
      behaviourPreserving: false,
    };
  },
};

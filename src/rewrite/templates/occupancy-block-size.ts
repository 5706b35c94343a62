import { escapeRe } from '../../core/regex.js';
import type { SyntaxNode } from '../../core/types.js';
import { freshName, identifiersIn } from '../context.js';
import { indentOf } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';
import { launchConfigAt } from './launch-on-stream.js';

/** The item count N of a grid spelled `(N + B - 1) / B`, `(N + B-1) / B`, `ceil_div(N, B)` with block B. */
export function gridCount(grid: string, b: number): string | null {
  const g = grid.replace(/\s+/g, ' ').trim();
  const B = escapeRe(String(b));
  const m1 = new RegExp(`^\\(\\s*(.+?)\\s*\\+\\s*(?:${B}\\s*-\\s*1|${escapeRe(String(b - 1))})\\s*\\)\\s*/\\s*${B}$`).exec(g);
  if (m1) return m1[1];
  const m2 = new RegExp(`^(?:\\w+::)*(?:ceil_div|div_up|divup|cdiv|ceildiv|DIVUP|CEIL_DIV|div_round_up)\\s*\\(\\s*(.+?)\\s*,\\s*${B}\\s*\\)$`).exec(g);
  if (m2) return m2[1];
  return null;
}

function blockOf(arg: SyntaxNode): number | null {
  const t = arg.text.replace(/\s+/g, '');
  const m = /^(?:dim3\()?(\d+)(?:u|U)?(?:,1(?:,1)?)?\)?$/.exec(t);
  return m ? Number(m[1]) : null;
}

/**
 * `k<<<(n + 255) / 256, 256>>>(…)` → a block size from cudaOccupancyMaxPotentialBlockSize for
 * this kernel and a grid that covers the same n. Declines when the kernel (in this file) depends
 * on the literal block size: shared arrays, __launch_bounds__ or the number itself in its body.
 */
export const occupancyBlockSize: Template = {
  id: 'occupancy-block-size',
  rules: ['kernel/hardcoded-block-size'],
  languages: ['cuda'],
  build(ctx: TemplateContext): TemplateResult {
    const launch = launchConfigAt(ctx.node);
    if (!launch) return { decline: 'not a <<<…>>> kernel launch' };
    const { call, cfg, args } = launch;
    if (args.length < 2) return { decline: 'launch configuration has no block argument' };
    const b = blockOf(args[1]);
    if (b === null) return { decline: `block size \`${args[1].text}\` is not a one-dimensional literal` };
    const n = gridCount(args[0].text, b);
    if (n === null) return { decline: `grid \`${args[0].text}\` is not a ceiling division of an item count by ${b}` };
    const kernel = call.childForFieldName('function');
    if (!kernel || !/^[A-Za-z_][\w:]*(?:<[^<>;]*>)?$/.test(kernel.text)) return { decline: 'kernel is not a plain (template) name' };
    const base = kernel.text.replace(/<.*$/, '').replace(/^.*::/, '');
    const def = ctx.source.root
      .descendantsOfType('function_definition')
      .find((f) => f.childForFieldName('declarator')?.childForFieldName('declarator')?.text.replace(/^.*::/, '') === base && /__global__/.test(f.text.slice(0, 200)));
    if (def) {
      const body = def.childForFieldName('body')?.text ?? '';
      const head = def.text.slice(0, (def.childForFieldName('body')?.startIndex ?? def.endIndex) - def.startIndex);
      if (/__launch_bounds__/.test(head)) return { decline: `kernel \`${base}\` has __launch_bounds__: its block size is fixed` };
      if (new RegExp(`\\b${escapeRe(String(b))}\\b`).test(body) || /__shared__[^;]*\[\s*[A-Z_0-9]+\s*\]/.test(body)) return { decline: `kernel \`${base}\` depends on the block size (the literal ${b} or a fixed shared array in its body)` };
    } else return { decline: `kernel \`${base}\` is not defined in this file: cannot prove it works with any block size` };
    const stmt = call.parent;
    if (!stmt || stmt.type !== 'expression_statement' || stmt.parent?.type !== 'compound_statement') return { decline: 'the launch is not a statement of its own inside a block' };
    const used = identifiersIn(ctx.source.root);
    const minGrid = freshName(`${base}_min_grid`, used);
    const block = freshName(`${base}_block`, used);
    if (!minGrid || !block) return { decline: 'no free names for the block-size variables' };
    const smem = args[2]?.text ?? '0';
    if (smem !== '0' && !/^[\w.]+$/.test(smem)) return { decline: `dynamic shared memory \`${smem}\` may depend on the block size` };
    const row = stmt.startPosition.row;
    const ind = indentOf(ctx.lines[row] ?? '');
    const launchLines = ctx.lines.slice(row, stmt.endPosition.row + 1).join('\n');
    const off = (r: number, c: number) => {
      let o = 0;
      for (let i = row; i < r; i++) o += (ctx.lines[i] ?? '').length + 1;
      return o + c;
    };
    const s = off(cfg.startPosition.row, cfg.startPosition.column);
    const e = off(cfg.endPosition.row, cfg.endPosition.column);
    const rest = args.slice(2).map((a) => a.text);
    const newCfg = `<<<(${n} + ${block} - 1) / ${block}, ${block}${rest.length ? ', ' + rest.join(', ') : ''}>>>`;
    const text = [
      `${ind}int ${minGrid} = 0, ${block} = 0;`,
      `${ind}cudaOccupancyMaxPotentialBlockSize(&${minGrid}, &${block}, ${kernel.text}, ${smem}, 0);`,
      launchLines.slice(0, s) + newCfg + launchLines.slice(e),
    ].join('\n');
    return {
      description: `Take the block size of \`${base}\` from cudaOccupancyMaxPotentialBlockSize (registers and shared memory of this build on this GPU) and size the grid from it.`,
      edits: [{ startLine: row + 1, endLine: stmt.endPosition.row + 1, text }],
      behaviourPreserving: false,
    };
  },
};

import { cudaModel } from '../../../src/analysis/cuda.js';
import { hasGridStrideLoop, launchConfigs, prod } from '../../../src/analysis/launch-config.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

const ASSIGNS = ['init_declarator', 'assignment_expression', 'assignment', 'augmented_assignment'];
const LOOPS = ['for_statement', 'while_statement', 'do_statement'];

const word = (names: readonly string[]) => new RegExp(`(^|[^\\w])(${alternation(names.map((n) => n.split('.').pop()!.replace(/[^\w]/g, '')))})\\b`);

/** Right-hand sides (and out-parameter calls) that define `name` before `before` inside `scope`. */
function definitions(scope: SyntaxNode, name: string, before: number): Array<{ text: string; call: SyntaxNode | null }> {
  const out: Array<{ text: string; call: SyntaxNode | null }> = [];
  for (const t of ASSIGNS) {
    for (const a of scope.descendantsOfType(t)) {
      if (a.startIndex >= before) continue;
      const left = a.childForFieldName('left') ?? a.childForFieldName('declarator');
      const right = a.childForFieldName('right') ?? a.childForFieldName('value') ?? a.namedChildren.find((c) => c.type === 'argument_list') ?? null;
      if (!left || !right) continue;
      if (!(left.text === name || left.descendantsOfType('identifier').some((i) => i.text === name))) continue;
      out.push({ text: right.text, call: right.type === 'call' || right.type === 'call_expression' ? right : null });
    }
  }
  // `cudaOccupancyMaxPotentialBlockSize(&min_grid, &bs, k)`, `cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0)`
  for (const c of scope.descendantsOfType('call_expression')) {
    if (c.startIndex >= before) continue;
    const args = c.childForFieldName('arguments')?.namedChildren ?? [];
    const i = args.findIndex((a) => a.type === 'pointer_expression' && a.text.replace(/\s+/g, '') === `&${name}`);
    if (i >= 0) out.push({ text: c.text, call: i === 0 ? c : null });
  }
  return out;
}

export default defineCheck({
  id: 'kernel/capped-grid-without-grid-stride',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation:
    '003 §3.2 Grid-Stride Loops vs One-Thread-Per-Element (grid sizing formula `min(ceil(n/bs), sm_count*max_blocks_per_sm)`); 003 §8.8 Wave Quantization (mitigation); 004 §H2.4 Determine Optimal Launch Configuration with the Occupancy API (`myKernel<<<minGridSize, bestBlockSize>>>`)',
  summary: 'Grid capped by the SM count or the occupancy API\'s minGridSize, launching a kernel that has no grid-stride loop: elements past grid × block are skipped.',
  why: 'The 003 §3.2 sizing `min(ceil(n/bs), sm_count × max_blocks_per_sm)` (e.g. 132 × 8 = 1,056 blocks of 256 = 270,336 threads on H100) only covers n when the kernel strides by blockDim.x × gridDim.x; a one-thread-per-element kernel silently drops every element past grid × block.',
  messages: {
    capped:
      'Grid is capped below ceil(n/block) but the kernel `{{kernel}}` has no grid-stride loop; elements past grid×block are never processed. The grid `{{grid}}` is {{how}}{{figure}}: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const minGrid = ctx.config.vocab.occupancy_min_grid_calls;
        const smRe = word(ctx.config.vocab.sm_count_names);
        const occRe = word(minGrid);
        const isPy = ctx.source.language === 'python';
        for (const l of ctx.get(launchConfigs)) {
          if (!l.gridNode || !l.kernel?.fn.body) continue;
          const fn = l.kernel.fn;
          if (hasGridStrideLoop(fn)) continue;
          // Cooperative kernels and tile loops stride by the grid themselves (`t += gridDim.x`, `grid.sync()`).
          const body = fn.body!;
          if (/\bthis_grid\s*\(|\bgrid_group\b|\bcg::|cooperative_groups/.test(body.text)) continue;
          if (LOOPS.some((t) => body.descendantsOfType(t).some((x) => /\bgridDim\b/.test(x.text)))) continue;
          const scope = isPy ? ctx.get(pythonModel).scopeOf(l.node) : (ctx.get(cudaModel).functionOf(l.node)?.node ?? ctx.source.root);
          // Expand the grid through its definitions (three levels: grid ← min(blocks, cap) ← num_sms * per_sm ← attribute).
          let how: string | null = null;
          const texts = [l.gridNode.text];
          let frontier: SyntaxNode[] = [l.gridNode];
          const seen = new Set<string>();
          for (let depth = 0; depth < 3 && frontier.length; depth++) {
            const names = frontier.flatMap((n) => (n.type === 'identifier' ? [n] : n.descendantsOfType('identifier'))).map((i) => i.text).filter((t) => !seen.has(t));
            names.forEach((t) => seen.add(t));
            for (const name of names) {
              for (const d of definitions(scope, name, l.node.startIndex)) {
                if (depth === 0 && !how && d.call && occRe.test(d.call.childForFieldName('function')?.text ?? '')) {
                  how = `the minGridSize output of \`${(d.call.childForFieldName('function')?.text ?? '').split('.').pop()}\` (the smallest grid that fills the GPU once, not one covering n)`;
                }
                texts.push(d.text);
              }
            }
            frontier = rhsOf(scope, names, l.node.startIndex);
          }
          const all = texts.join(' ');
          if (!how) {
            if (/\bmin\s*\(/.test(all) && smRe.test(all)) how = 'capped with `min(…)` by an SM-count term';
            else if (smRe.test(all) && /\*/.test(all)) how = 'a product of the SM count and blocks per SM (one wave)';
          }
          if (!how) continue;
          let figure = l.grid && l.block ? ` (${prod(l.grid)} blocks × ${prod(l.block)} threads = ${prod(l.grid) * prod(l.block)} elements at most)` : '';
          // `num_sms * 8`: the cap is a hardware number per target GPU, so name it.
          // A `#define`d blocks-per-SM is a constant too.
          const macros = isPy ? new Map<string, string>() : ctx.get(cudaModel).macros;
          const expanded = all.replace(/\b[A-Z_][A-Z0-9_]*\b/g, (w) => (/^\d+$/.test(macros.get(w)?.trim() ?? '') ? macros.get(w)!.trim() : w));
          const k = /(\w+)\s*\*\s*(\d+)\b|\b(\d+)\s*\*\s*([\w.]+)/.exec(expanded.replace(/\w+\.(?=\w)/g, ''));
          const mult = k ? Number(k[2] ?? k[3]) : null;
          const B = l.block ? prod(l.block) : null;
          const gpu = ctx.config.targets[0];
          if (!figure && mult && gpu && smRe.test(k![0])) {
            figure = ` (on ${gpu.name}: ${gpu.sms} SMs × ${mult} = ${gpu.sms * mult} blocks${B ? ` × ${B} threads = ${(gpu.sms * mult * B).toLocaleString('en-US')} elements; any n above that is partly skipped` : ''})`;
          }
          ctx.report({
            node: l.node,
            messageId: 'capped',
            data: { kernel: fn.name, grid: quote(l.gridNode), how, figure, code: quote(l.node) },
            fix: { description: `Wrap the body of \`${fn.name}\` in \`for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\`, or launch ceil(n/block) blocks.` },
          });
        }
      },
    };
  },
});

/** Right-hand-side nodes of the definitions of `names` in scope, so the next level can expand their identifiers. */
function rhsOf(scope: SyntaxNode, names: string[], before: number): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const set = new Set(names);
  for (const t of ASSIGNS) {
    for (const a of scope.descendantsOfType(t)) {
      if (a.startIndex >= before) continue;
      const left = a.childForFieldName('left') ?? a.childForFieldName('declarator');
      const right = a.childForFieldName('right') ?? a.childForFieldName('value') ?? a.namedChildren.find((c) => c.type === 'argument_list') ?? null;
      if (left && right && (set.has(left.text) || left.descendantsOfType('identifier').some((i) => set.has(i.text)))) out.push(right);
    }
  }
  return out;
}

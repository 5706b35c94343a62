import type { ResolvedConfig } from '../../../src/config/schema.js';
import type { CudaFunction, CudaModel } from '../../../src/analysis/cuda.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { launchConfigs, prod } from '../../../src/analysis/launch-config.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { uniformity, type UniformityModel } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Host code that already groups items by work size before launching (003 §5.3 strategy 3). */
const BINNED = /_WORK_BINS|\bwork_bins\b|\bbins?\b|sort_pairs|sort_by_key|searchsorted|argsort|stable_sort/;

interface VarLoop { loop: SyntaxNode; bound: SyntaxNode }

/** Per-item data: a load whose index differs lane by lane (`off[row + 1]`, `cnt[i]`), directly or through a local. */
function perItemLoad(e: SyntaxNode, u: UniformityModel, body: SyntaxNode): SyntaxNode | null {
  const subs = [...(e.type === 'subscript_expression' ? [e] : []), ...e.descendantsOfType('subscript_expression')];
  for (const s of subs) {
    const idx = s.childForFieldName('indices') ?? s.childForFieldName('index') ?? s.namedChildren[1];
    if (idx && u.level(idx) === 'thread') return s;
  }
  const ids = [...(e.type === 'identifier' ? [e] : []), ...e.descendantsOfType('identifier')];
  for (const id of ids) {
    for (const d of body.descendantsOfType('init_declarator')) {
      if (d.childForFieldName('declarator')?.text !== id.text || d.startIndex >= e.startIndex) continue;
      const v = d.childForFieldName('value');
      if (v && v.descendantsOfType('subscript_expression').concat(v.type === 'subscript_expression' ? [v] : []).some((s) => {
        const idx = s.childForFieldName('indices') ?? s.childForFieldName('index') ?? s.namedChildren[1];
        return !!idx && u.level(idx) === 'thread';
      })) return d;
    }
  }
  return null;
}

/** Loops in `fn` whose trip count comes from the thread's own item (one thread per item). */
export function variableTripLoops(fn: CudaFunction, m: CudaModel, u: UniformityModel): VarLoop[] {
  const out: VarLoop[] = [];
  const body = fn.body;
  if (!body) return out;
  for (const loop of body.descendantsOfType(['for_statement', 'while_statement'])) {
    const cond = loop.childForFieldName('condition');
    if (!cond) continue;
    // A loop striding by 32 / blockDim.x spreads one item over a warp or block: lanes share the bound.
    const upd = loop.childForFieldName('update')?.text.replace(/\s+/g, '') ?? '';
    if (/\+=(32|warpSize|WARP_SIZE|blockDim\.x|\w*(WARP|BLOCK)\w*)$/.test(upd)) continue;
    // A bound clamped to a small constant caps the imbalance at a few iterations.
    const small = cond.text.match(/\b(?:min|fminf?|std::min)\s*\([^)]*,\s*(\d+)\s*\)|&&\s*\w+\s*<=?\s*(\d+)\b/);
    if (small && Number(small[1] ?? small[2]) <= 8) continue;
    // Data documented as uniform in a comment just above the loop (§3 do-not-flag "documented").
    let documented = false;
    for (let p = loop.previousNamedSibling; p?.type === 'comment'; p = p.previousNamedSibling) if (/\buniform\b/i.test(p.text)) documented = true;
    if (documented) continue;
    const init = loop.childForFieldName('initializer');
    const bound = perItemLoad(cond, u, body) ?? (init ? perItemLoad(init, u, body) : null);
    if (bound) out.push({ loop, bound });
  }
  return out;
}

function enclosing(n: SyntaxNode, types: string[]): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) if (types.includes(p.type)) return p;
  return null;
}

/** The launch sits in a host loop (one launch per bin or type) or its host function bins or sorts by size. */
function binnedLaunch(node: SyntaxNode): boolean {
  const fn = enclosing(node, ['function_definition']);
  for (let p = node.parent; p && p !== fn; p = p.parent) if (['for_statement', 'while_statement', 'for_range_loop'].includes(p.type)) return true;
  return !!fn && BINNED.test(fn.text);
}

function loopDescription(v: VarLoop): string {
  const header = v.loop.text.split('{')[0]!.split('\n')[0]!.trim();
  return quoteCode(header, 70);
}

export default defineCheck({
  id: 'kernel/variable-trip-count-without-binning',
  pass: 3,
  severity: 'high',
  kind: 'performance',
  confidence: 'low',
  status: 'retired',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation: '003 §8.5 Branch Divergence in Inner Loops ("Loop divergence is especially damaging"); 003 §5.3 Warp Divergence Minimization (strategy 3 "Work-size binning"); 003 §9 Pass 3 bullet 6; 003 §10 (row "Work-size binning threshold CV > 2.0")',
  summary: 'One-thread-per-item loop whose trip count comes from per-item data, launched without work-size binning.',
  why: 'Every lane of a warp waits for its longest item, so one 10,000-edge polygon next to 10-edge ones wastes 9,990 iterations per lane; 003 §5.3 and §10 bin items by size (_WORK_BINS = [64, 1024]) when the work-size CV exceeds 2.0 (003 §8.5, §5.3, §10).',
  messages: {
    device: 'Per-thread loop `{{loop}}` whose trip count comes from per-item data (`{{bound}}`); in a warp every lane waits for the longest item. Bin items by work size (e.g. _WORK_BINS) before launch{{figure}}.',
    host: 'Launch `{{code}}` runs `{{kernel}}` over all items at once, and its loop `{{loop}}` takes its trip count from per-item data (`{{bound}}`); in a warp every lane waits for the longest item. Bin items by work size (e.g. _WORK_BINS) before launch{{figure}}.',
  },
  fix: 'judgment',
  create(ctx) {
    const fixDesc = 'Bin items by work size (_WORK_BINS = [64, 1024]: < 64, 64–1024, > 1024) and launch one kernel per bin, or use a warp-per-item kernel for the large bin; check the CV (std/mean) of the sizes first: binning pays above 2.0.';
    const figure = (block: [number, number, number] | null) =>
      block ? `; each ${prod(block)}-thread block holds ${Math.ceil(prod(block) / 32)} warps of 32 items that all run as long as their largest` : '';
    const config: ResolvedConfig = ctx.config;
    return {
      'source:exit'() {
        if (ctx.source.language === 'python') {
          for (const l of ctx.get(launchConfigs)) {
            if (!l.kernel || l.testOrBench || binnedLaunch(l.node)) continue;
            const u = uniformity.compute(l.kernel.model.source, config);
            const v = variableTripLoops(l.kernel.fn, l.kernel.model, u)[0];
            if (!v) continue;
            ctx.report({
              node: l.node,
              messageId: 'host',
              data: { code: quoteCode(l.node.text.split('\n')[0]!, 60), kernel: l.kernel.fn.name, loop: loopDescription(v), bound: quoteCode(v.bound.text, 40), figure: figure(l.block) },
              fix: { description: fixDesc },
            });
          }
          return;
        }
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        const hostLaunches = ctx.source.parent ? launchConfigs.compute(ctx.source.parent, config) : [];
        for (const f of m.functions) {
          if (!f.isKernel) continue;
          const loops = variableTripLoops(f, m, u);
          if (!loops.length) continue;
          const own = m.launches.filter((l) => l.kernel === f.name);
          if (own.length && own.every((l) => binnedLaunch(l.node))) continue;
          // A kernel string launched from its Python module is reported at the launch, where the binning belongs.
          const py = hostLaunches.filter((l) => l.kernel?.fn.name === f.name);
          if (py.length) continue;
          const blocks = own.map((l) => m.dim3(l.block));
          const block = blocks.length && blocks.every((b) => b && b.join() === blocks[0]!.join()) ? blocks[0]! : null;
          for (const v of loops) {
            ctx.report({
              node: v.loop.childForFieldName('condition') ?? v.loop,
              messageId: 'device',
              data: { loop: loopDescription(v), bound: quoteCode(v.bound.text, 40), figure: figure(block) },
              fix: { description: fixDesc },
            });
          }
        }
      },
    };
  },
});

import { cudaModel } from '../../../src/analysis/cuda.js';
import { pythonLaunches } from '../../../src/analysis/pylaunch.js';
import { quoteCode, smemFacts } from '../../../src/analysis/smem.js';
import { calleePath, lastName, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export default defineCheck({
  id: 'kernel/fixed-warp-slot-array-vs-dynamic-block',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '(derived) 003 §5.4 Block-Level Reductions (`__shared__ int warp_results[8]; // up to 256 threads`) combined with 003 §3.1 (the occupancy API chooses the block size, up to 1,024); see §6, inconsistency I-14',
  summary: 'Per-warp shared array sized for a fixed number of warps while the block size is not bounded to match.',
  why: '003 §5.4 sizes `warp_results[8]` for at most 256 threads while 003 §3.1 lets the occupancy API pick blocks of up to 1,024 threads (32 warps), so warps 8 to 31 write past the array.',
  messages: {
    overflow: 'Shared per-warp array `{{decl}}` has {{n}} slots (≤ {{threads}} threads) but {{reason}}; in a {{big}}-thread block{{gpu}}, warps {{n}} to {{last}} write past the array.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const smem = ctx.get(smemFacts);
        const maxGpu = [...ctx.config.targets].sort((a, b) => b.maxThreadsPerBlock - a.maxThreadsPerBlock)[0];
        const maxThreads = maxGpu?.maxThreadsPerBlock ?? 1024;
        const warpConsts = ['32', 'warpSize', ...[...m.macros].filter(([, v]) => v.trim().replace(/[uU]$/, '') === '32').map(([k]) => k)];
        const W = `(?:${warpConsts.map(esc).join('|')})`;
        const warpExpr = new RegExp(`^\\(?threadIdx\\.x(?:/${W}|>>5)\\)?$`);
        for (const d of smem.decls) {
          const f = d.fn;
          if (!f?.isKernel || !f.body || d.dynamic || d.dims.length !== 1) continue;
          const n = m.constValue(d.dims[0]);
          // 32 slots cover the 1,024-thread maximum (32 warps).
          if (n === null || n <= 0 || n * 32 >= maxThreads) continue;
          const limit = 32 * n;
          const warpVars = new Set<string>();
          for (const mm of f.body.text.matchAll(new RegExp(`\\b([A-Za-z_]\\w*)\\s*=\\s*\\(?\\s*threadIdx\\.x\\s*(?:/\\s*${W}|>>\\s*5)\\s*\\)?\\s*;`, 'g'))) warpVars.add(mm[1]!);
          const indexedByWarp = f.body.descendantsOfType('subscript_expression').some((s) => {
            if ((s.childForFieldName('argument') ?? s.namedChildren[0])?.text !== d.name) return false;
            const ix = s.childForFieldName('indices') ?? s.childForFieldName('index') ?? s.namedChildren[1];
            const e = ix?.type === 'subscript_argument_list' ? ix.namedChildren[0] : ix;
            const t = (e?.text ?? '').replace(/\s+/g, '');
            return warpExpr.test(t) || warpVars.has(t);
          });
          if (!indexedByWarp) continue;
          let reason: string | null = null;
          let big = maxThreads;
          let fromTarget = false;
          const lbT = f.launchBounds ? m.constValue(f.launchBounds.maxThreads) : null;
          if (f.launchBounds) {
            // A bound the evaluator cannot read (a template argument) is the author's statement; trust it.
            if (lbT === null || lbT <= limit) continue;
            reason = `\`__launch_bounds__(${lbT})\` allows ${lbT.toLocaleString('en-US')}-thread blocks`;
            big = lbT;
          } else {
            const shapes: Array<{ dims: [number, number, number] | null; text: string; block: SyntaxNode | null }> = [];
            for (const l of m.launches.filter((x) => x.kernel === f.name)) shapes.push({ dims: m.dim3(l.block), text: l.node.text, block: l.block });
            if (ctx.source.parent) {
              const py = pythonLaunches.compute(ctx.source.parent, ctx.config);
              for (const l of py.launches.filter((x) => x.cudaName === f.name)) shapes.push({ dims: py.dims(l.block), text: l.node.text, block: null });
            }
            const threads = (s: (typeof shapes)[number]): number | null => (s.dims ? s.dims[0] * s.dims[1] * s.dims[2] : null);
            const tooBig = shapes.find((s) => (threads(s) ?? 0) > limit);
            const unknown = shapes.filter((s) => threads(s) === null && !occupancyLimited(s.block, limit));
            if (tooBig) {
              big = threads(tooBig)!;
              reason = `it is launched with ${big}-thread blocks (\`${quoteCode(tooBig.text.split('\n')[0]!, 50)}\`)`;
            } else if (unknown.length) {
              reason = `the block size is chosen at run time with no upper limit (\`${quoteCode(unknown[0]!.text.split('\n')[0]!, 50)}\`)`;
              fromTarget = true;
            } else if (!shapes.length) {
              reason = 'no `__launch_bounds__` or visible constant launch bounds the block size';
              fromTarget = true;
            } else continue;
          }
          // Changing the extent to 32 is safe whatever the block: unused slots stay unwritten.
          const fix = ctx.source.language === 'cuda' && d.dims[0]!.startPosition.row === d.dims[0]!.endPosition.row
            ? {
                description: `Size \`${d.name}\` for the 32 warps of a ${maxThreads}-thread block.`,
                replace: { from: d.node, text: lineWith(d.dims[0]!, '32') },
              }
            : undefined;
          ctx.report({
            node: d.node,
            messageId: 'overflow',
            data: { decl: quoteCode(d.node.text.replace(/;$/, ''), 50), n, threads: limit.toLocaleString('en-US'), reason, big: big.toLocaleString('en-US'), gpu: fromTarget && maxGpu ? ` (the maximum on ${maxGpu.name})` : '', last: Math.ceil(big / 32) - 1 },
            ...(fix ? { fix } : {}),
          });
        }

        function lineWith(at: SyntaxNode, text: string): string {
          const lineStart = m.source.text.lastIndexOf('\n', at.startIndex - 1) + 1;
          const line = ctx.linesOf(at);
          const col = at.startIndex - lineStart;
          return line.slice(0, col) + text + line.slice(col + at.text.length);
        }

        /** `cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, k, smem, limit)` with a constant limit ≤ `limit`. */
        function occupancyLimited(block: SyntaxNode | null, limit: number): boolean {
          const b = unparen(block);
          if (b?.type !== 'identifier') return false;
          return m.calls.some((c) => {
            if (!/^cudaOccupancyMaxPotentialBlockSize/.test(lastName(calleePath(c.node.childForFieldName('function'))) ?? '')) return false;
            if (c.args[1]?.text.replace(/[&\s]/g, '') !== b.text) return false;
            const lim = m.constValue(c.args[4] ?? null);
            return lim !== null && lim > 0 && lim <= limit;
          });
        }
      },
    };
  },
});

import { luisaModel, type DslBody } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { Source } from '../../../src/sources/types.js';

/** Comments in and just above the kernel that say the size is tile-driven or measured. */
function justified(source: Source, b: DslBody): boolean {
  let stmt = b.node;
  while (stmt.parent && !/statement|declaration/.test(stmt.type)) stmt = stmt.parent;
  const lines = source.text.split('\n');
  const from = Math.max(0, stmt.startPosition.row - 3);
  const text = lines.slice(from, b.body.endPosition.row + 1).join('\n');
  const comments = text.match(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g) ?? [];
  return comments.some((c) => /\b(tile[sd]?|tiling|sweep|swept|bench(mark(ed)?)?|measured|profiled|tuned)\b/i.test(c));
}

export default defineCheck({
  id: 'luisa/oversized-block',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §5.7 Empirical Benchmark Results (finding 1: "Not a single measured case was fastest at 512 or 1024"; block reduction at 1,024 −46…51 %; register-heavy at 1,024 19× slower); 000 §5.2 Memory/IO-Bound Kernels; 000 §5.4 Summary Table; 004 §H2.2 (Adjust block size)',
  summary: 'Kernel block of 512 or more threads without a tile or measurement that demands it.',
  why: 'No archetype of the 000 §5.7 sweep was fastest at 512 or 1,024 threads: a shared-memory block reduction lost 46–51 % at 1,024 and a register-heavy kernel ran 19× slower, while 64–256 won everywhere except large-block histogram privatization.',
  messages: {
    oversized: 'Block of {{n}} threads (`{{code}}`): measured slower than 64–256 in every benchmarked archetype except large-block histogram privatization; start at 64/128/256 (`{{suggest}}`) and re-run the block-size sweep on each shipped backend.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        // Benchmarks and tests sweep the large sizes on purpose.
        if (m.testOrBench) return;
        for (const b of m.bodies) {
          const bs = b.blockSize;
          // Over 1,024 (or not a multiple of 32) is luisa/invalid-block-size.
          if (!bs || bs.product === null || bs.product < 512 || bs.product > 1024 || bs.product % 32 !== 0) continue;
          // Shared-memory privatization of atomics is the one case that won at 512–1,024 (000 §5.7 histogram row).
          if (b.shared.some((s) => m.sharedAccesses(s).some((a) => a.kind === 'atomic'))) continue;
          if (justified(ctx.source, b)) continue;
          const twoD = bs.dims[1] !== 1 || bs.dims[2] !== 1;
          ctx.report({
            node: bs.node,
            messageId: 'oversized',
            data: { n: bs.product, code: quote(bs.node), suggest: twoD ? 'set_block_size(16u, 16u, 1u)' : 'set_block_size(256u, 1u, 1u)' },
            fix: { description: 'Start at 64/128/256 threads (`set_block_size(256u, 1u, 1u)` or 128), then re-run the block-size sweep on every backend you ship; keep 512+ only where a shared tile or a measurement demands it, and say so in a comment.' },
          });
        }
      },
    };
  },
});

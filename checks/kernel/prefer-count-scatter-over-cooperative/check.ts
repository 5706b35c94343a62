import { gridSyncCalls } from '../../../src/analysis/cooperative.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { defineCheck } from '../../../src/engine/check.js';

/** Grid-wide convergence checks are a listed use of grid sync (003 §3.3), not a fused count/scatter. */
const CONVERGENCE = /\b(converged|convergence|residual|tolerance|max_iter\w*|delta)\b/i;
const LOOPS = ['for_statement', 'while_statement', 'do_statement'];
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export default defineCheck({
  id: 'kernel/prefer-count-scatter-over-cooperative',
  pass: 3,
  severity: 'low',
  kind: 'maintainability',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §3.3 Cooperative Groups ("For vibeSpatial: Prefer the two-pass count-scatter pattern over cooperative groups")',
  summary: 'Grid-wide sync used to fuse a count, a prefix sum over the counts and a scatter in one kernel.',
  why: 'A cooperative launch has higher overhead than a standard one and caps the grid at maxActiveBlocksPerMultiprocessor × SM count (003 §3.3), while count → exclusive_sum → scatter is three ordinary launches with no grid-size limit.',
  messages: {
    fused:
      'Grid-wide sync used to fuse count and scatter; the two-pass count → exclusive_sum → scatter pattern is simpler and has no grid-size limit (`{{kernel}}` writes `{{counts}}`, then reads it as offsets after `{{sync}}`).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        for (const f of m.kernels.values()) {
          const syncs = gridSyncCalls(f.body);
          if (!syncs.length || !f.body) continue;
          // A barrier inside a loop is an iterative algorithm (relaxation, convergence), not a fused pass.
          if (syncs.some((s) => { for (let p = s.parent; p && p.id !== f.body!.id; p = p.parent) if (LOOPS.includes(p.type)) return true; return false; })) continue;
          if (CONVERGENCE.test(f.body.text)) continue;
          const body = f.body.text;
          const first = syncs[0].startIndex - f.body.startIndex;
          const before = body.slice(0, first);
          const after = body.slice(first);
          // Counts written in the first phase: `cnt[k] = …`, `cnt[k]++`, `cnt[k] += …`, `atomicAdd(&cnt[k], …)`.
          const written = new Set<string>();
          for (const w of before.matchAll(/\b(\w+)\s*\[[^\]]*\]\s*(?:=(?!=)|\+\+|\+=)/g)) written.add(w[1]);
          for (const w of before.matchAll(/\batomic(?:Add|Inc)\w*\s*\(\s*&\s*(\w+)\s*\[/g)) written.add(w[1]);
          let counts: string | null = null;
          for (const a of written) {
            const A = esc(a);
            // A running sum over the counts (`run += cnt[i]`, `off[i] = off[i - 1] + cnt[i - 1]`) or a scan helper.
            const scanned = new RegExp(`\\b\\w+\\s*\\+=\\s*${A}\\s*\\[|\\b(\\w+)\\s*\\[[^\\]]*\\]\\s*=\\s*\\1\\s*\\[[^\\]]*-\\s*1\\s*\\]\\s*\\+\\s*${A}\\s*\\[`).test(after);
            const scanCall = new RegExp(`\\b\\w*(scan|prefix|exclusive|inclusive)\\w*\\s*\\([^;]*\\b${A}\\b`, 'i').test(after);
            if (scanned || scanCall) { counts = a; break; }
          }
          if (!counts) continue;
          ctx.report({
            node: syncs[0],
            messageId: 'fused',
            data: { kernel: f.name, counts, sync: syncs[0].text },
            fix: {
              description: ctx.projectVocabulary
                ? 'Split at the grid sync: a count kernel, then exclusive_sum(counts, synchronize=False) (cub::DeviceScan::ExclusiveSum in C++), then a scatter kernel, all on one stream.'
                : `Split at the grid sync: a count kernel, then an exclusive scan of the counts (${ctx.source.language === 'cuda' ? '`cub::DeviceScan::ExclusiveSum`' : '`cp.cumsum` on the host side'}), then a scatter kernel, all on one stream.`,
            },
          });
        }
      },
    };
  },
});

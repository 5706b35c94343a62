import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode, smemFacts, typeBytes } from '../../../src/analysis/smem.js';
import { calleePath, matchesVocab, walk } from '../../../src/analysis/syntax.js';
import { constantBlockOf, evalWithBlockDim } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import { alternation } from '../../../src/core/regex.js';

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export default defineCheck({
  id: 'kernel/shared-tree-block-reduction',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §5.4 Block-Level Reductions ("prefer this shuffle+shared pattern over pure shared memory reduction trees"; "Alternative: Use CUB/CCCL BlockReduce"); 004 §H3.5 Efficient Intrawarp Communication with Warp Intrinsics',
  summary: 'Block reduction done as a pure shared-memory tree with one barrier per level.',
  why: 'A pure shared-memory tree pays one __syncthreads() and one shared read-modify-write per level (8 levels for 256 threads), while 003 §5.4\'s shuffle reduction within each warp (5 register steps) followed by one barrier and a reduction of the up to 32 warp partials needs far fewer barriers and shared transactions (004 §H3.5).',
  messages: {
    tree: 'Block reduction `{{loop}}` on `{{array}}` is done entirely as a shared-memory tree with a __syncthreads() per level{{figure}}; reduce within warps with shuffles first (fewer barriers and shared transactions), or use cub::BlockReduce.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const smem = ctx.get(smemFacts);
        const barriers = ctx.config.vocab.block_barrier_calls;
        const shuffles = ctx.config.vocab.warp_collective_calls.filter((c) => /shfl|reduce_/.test(c));
        for (const loop of ctx.source.root.descendantsOfType('for_statement')) {
          const f = m.functionOf(loop);
          if (!f || !(f.isKernel || f.isDevice) || !f.body) continue;
          const init = loop.childForFieldName('initializer');
          const cond = loop.childForFieldName('condition');
          const upd = loop.childForFieldName('update');
          const body = loop.childForFieldName('body');
          if (!init || !cond || !upd || !body) continue;
          const s = /^(?:(?:unsigned\s+)?\w+\s+)?([A-Za-z_]\w*)\s*=\s*([^;]+?);?$/s.exec(init.text.trim());
          if (!s) continue;
          const [, v, start] = s;
          // Halving stride that runs down to 1: the whole reduction is the tree (a `s > 32` stop hands off to a warp step).
          if (!new RegExp(`^${esc(v)}\\s*(>>=\\s*1|/=\\s*2|=\\s*${esc(v)}\\s*(>>\\s*1|/\\s*2))$`).test(upd.text.trim())) continue;
          if (!new RegExp(`^\\(?\\s*${esc(v)}\\s*(>\\s*0|>=\\s*1|!=\\s*0)?\\s*\\)?$`).test(cond.text.trim())) continue;
          // Thread index names: threadIdx.x and locals initialised from it (`const int tid = threadIdx.x;`).
          const tids = ['threadIdx.x'];
          for (const mm of f.body.text.matchAll(/\b([A-Za-z_]\w*)\s*=\s*(?:\(\s*int\s*\)\s*)?threadIdx\.x\s*;/g)) tids.push(mm[1]!);
          const T = `(?:${alternation(tids)})`;
          if (!new RegExp(`\\bif\\s*\\(\\s*${T}\\s*<\\s*${esc(v)}\\s*\\)`).test(body.text)) continue;
          // `a[t] op= a[t + s]` or `a[t] = op(a[t], a[t + s])` / `a[t] = a[t] op a[t + s]`.
          const upd1 = new RegExp(`\\b([A-Za-z_]\\w*)\\s*\\[\\s*${T}\\s*\\]\\s*(?:[-+*&|^]?=)\\s*[^;]*\\b\\1\\s*\\[\\s*${T}\\s*\\+\\s*${esc(v)}\\s*\\]`);
          const hit = upd1.exec(body.text);
          if (!hit) continue;
          const array = hit[1]!;
          const decl = smem.declFor(array, loop);
          if (!decl) continue;
          // Shuffles move at most 8 bytes per call; a struct element has no one-instruction shuffle equivalent.
          const bytes = typeBytes(decl.type);
          if (bytes === null || bytes > 8) continue;
          const hasBarrier = [...walk(body)].some((n) => n.type === 'call_expression' && matchesVocab(calleePath(n.childForFieldName('function')), barriers));
          if (!hasBarrier) continue;
          // Already a hybrid (or a warp step elsewhere in the kernel): shuffles handle the last 32 elements.
          const usesShuffle = [...walk(f.body)].some((n) => n.type === 'call_expression' && matchesVocab(calleePath(n.childForFieldName('function')), shuffles));
          if (usesShuffle) continue;
          let startVal = m.constValue(init.descendantsOfType('init_declarator')[0]?.childForFieldName('value') ?? null);
          const b = constantBlockOf(ctx.source, ctx.config, f);
          if (startVal === null && b && b[1] * b[2] === 1) startVal = evalWithBlockDim(start!, b[0], m);
          let figure = '';
          if (startVal && startVal > 0) {
            const levels = Math.floor(Math.log2(startVal)) + 1;
            const who = b && b[1] * b[2] === 1 && /blockDim\.x/.test(start!) ? ` for the ${b[0]}-thread blocks it is launched with` : '';
            figure = ` (${levels} barriers and ${levels} shared read-modify-write levels${who}, against 1 barrier after a 5-step warp shuffle)`;
          }
          const header = `for (${init.text.replace(/;$/, '')}; ${cond.text}; ${upd.text})`;
          ctx.report({ node: loop, messageId: 'tree', data: { loop: quoteCode(header, 60), array, figure } });
        }
      },
    };
  },
});

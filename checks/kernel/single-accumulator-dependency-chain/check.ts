import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** Summation order is part of the contract (003 §11): splitting the chain changes the bits. */
const ORDER_MATTERS = /\b(determinis\w*|bit[- ]?(for[- ]bit|wise|exact|identical)|reproducib\w*|same order|kahan|compensated)\b/i;
/** Strided by the block or grid: many warps interleave their loads, so one chain per thread is not the bottleneck. */
const STRIDED = /\b(blockDim|gridDim)\b|\.size\(\)|\bnum_threads\(\)/;
const LOOPS = ['for_statement', 'while_statement', 'do_statement'];

function hasUnrollPragma(loop: SyntaxNode): boolean {
  let p = loop.previousNamedSibling;
  while (p?.type === 'comment') p = p.previousNamedSibling;
  return p?.type === 'preproc_call' && /^\s*unroll\b/.test(p.childForFieldName('argument')?.text ?? '');
}

function commentsBefore(loop: SyntaxNode): string {
  const out: string[] = [];
  for (let p = loop.previousSibling, k = 0; p && k < 3; p = p.previousSibling, k++) if (p.type === 'comment') out.push(p.text);
  return out.join('\n');
}

const isLoad = (n: SyntaxNode) => n.descendantsOfType(['subscript_expression', 'pointer_expression', 'call_expression']).some((x) => x.type === 'subscript_expression' || (x.type === 'pointer_expression' && x.text.startsWith('*')) || /^__ldg\b|^__ldcs\b|^__ldlu\b/.test(x.text));

export default defineCheck({
  id: 'kernel/single-accumulator-dependency-chain',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'low',
  status: 'retired',
  languages: ['cuda', 'nvrtc-in-python'],
  citation:
    '004 §H4 Exposing Instruction-Level Parallelism; 004 §H4.3 Loop Unrolling, Interleaving, and Compiler Hinting (Unrolling small loops; multiple accumulators); 004 §H1.8 (latency-bound: issue independent loads back-to-back)',
  summary: 'Per-thread reduction loop with one loop-carried accumulator: every iteration waits for the previous one.',
  why: 'With one dependent chain (ILP 1) an SM needs ~1,536 resident threads (48 warps) to hide latency, with two chains ~1,024 and with four ~512 (004 §H4.2), so a second to fourth accumulator recovers throughput the occupancy cannot.',
  messages: {
    chain:
      'Long reduction loop carries a single accumulator, so each iteration waits for the previous one (Exec Dependency stalls); use 2–4 independent accumulators (`{{acc}}` in `{{code}}`).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        for (const loop of ctx.source.root.descendantsOfType(LOOPS)) {
          if (!m.inKernel(loop) || hasUnrollPragma(loop)) continue;
          const body = loop.childForFieldName('body');
          const cond = loop.childForFieldName('condition');
          if (!body || !cond) continue;
          // Constant trip counts are unrolled and scheduled by nvcc itself (004 §H4.1).
          const right = cond.type === 'binary_expression' ? cond.childForFieldName('right') : null;
          const initNode = loop.childForFieldName('initializer');
          const initVal = initNode?.descendantsOfType(['init_declarator', 'assignment_expression'])[0];
          const start = initVal?.childForFieldName(initVal.type === 'init_declarator' ? 'value' : 'right');
          if (right && m.constValue(right) !== null && (!start || m.constValue(start) !== null)) continue;
          const head = loop.type === 'for_statement' ? `${loop.childForFieldName('initializer')?.text ?? ''};${cond.text};${loop.childForFieldName('update')?.text ?? ''}` : cond.text;
          if (STRIDED.test(head)) continue;
          if (body.descendantsOfType(LOOPS).length) continue;
          const induction = /(\w+)\s*=/.exec(loop.childForFieldName('initializer')?.text ?? '')?.[1];
          const carried = new Map<string, SyntaxNode>();
          let accUpdate: SyntaxNode | null = null;
          // `i++` / `k += 1` index bumps are single-cycle integer ops, not the chain that stalls.
          for (const a of body.descendantsOfType('assignment_expression')) {
            const lhs = a.childForFieldName('left');
            if (lhs?.type !== 'identifier' || lhs.text === induction) continue;
            const op = a.childForFieldName('operator')?.text ?? '=';
            if (op === '+=' && /^\d+$/.test(a.childForFieldName('right')?.text ?? '')) continue;
            const rhs = a.childForFieldName('right');
            const selfRef = op !== '=' || new RegExp(`\\b${esc(lhs.text)}\\b`).test(rhs?.text ?? '');
            if (!selfRef) continue;
            carried.set(lhs.text, a);
            const sumLike = (op === '+=' || op === '-=') || (op === '=' && /[+]|\bfmaf?\s*\(/.test(rhs?.text ?? ''));
            if (sumLike && rhs) accUpdate = a;
          }
          // The chain matters when each step waits on memory as well (004 §H1.8): the body must load.
          if (carried.size !== 1 || !accUpdate || !isLoad(body)) continue;
          const fn = m.functionOf(loop);
          if (ORDER_MATTERS.test(commentsBefore(loop)) || ORDER_MATTERS.test(body.text) || (fn?.body && ORDER_MATTERS.test(fn.body.text.split('\n').filter((l) => /\/\/|\/\*/.test(l)).join('\n')))) continue;
          const acc = [...carried.keys()][0];
          ctx.report({
            node: loop,
            messageId: 'chain',
            data: { acc, code: quoteCode(accUpdate.text, 50) },
            fix: { description: 'Unroll by 2–4 with independent accumulators (acc0..acc3), combine them after the loop, and handle the remainder in a tail.' },
          });
        }
      },
    };
  },
});

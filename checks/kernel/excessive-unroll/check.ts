import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

const UNROLL = /^\s*unroll\b\s*(?:\(\s*([^)]*?)\s*\)|([^\s/]+))?/;
/** A tuning decision backed by a measurement is not a smell (catalog do-not-flag). */
const PROFILED = /\b(profil\w*|ncu|nsight|measured|benchmark\w*|tuned|sweep)\b/i;
/** Intrinsics and math built-ins compile to a few instructions; they do not make a body heavy. */
const CHEAP_CALL = /^(__\w+|fmaf?|fminf?|fmaxf?|min|max|sqrtf?|rsqrtf?|fabsf?|abs)$/;
const MAX_FACTOR = 8;
const MAX_FULL_TRIP = 16;
const MAX_SMALL_STMTS = 5;
const MIN_ACCUMULATORS = 6;

function loopAfter(pragma: SyntaxNode): SyntaxNode | null {
  let n = pragma.nextNamedSibling;
  while (n && (n.type === 'comment' || n.type === 'preproc_call')) n = n.nextNamedSibling;
  return n && n.type === 'for_statement' ? n : null;
}

function bodyStatements(loop: SyntaxNode): number {
  const body = loop.childForFieldName('body');
  if (!body) return 0;
  if (body.type !== 'compound_statement') return 1;
  return body.descendantsOfType(['expression_statement', 'declaration', 'return_statement', 'if_statement', 'for_statement', 'while_statement']).length;
}

function heavyCall(loop: SyntaxNode): SyntaxNode | null {
  const body = loop.childForFieldName('body');
  if (!body) return null;
  for (const c of body.descendantsOfType('call_expression')) {
    const fn = c.childForFieldName('function');
    const name = fn?.type === 'template_function' ? fn.childForFieldName('name')?.text : fn?.text;
    if (name && !CHEAP_CALL.test(name)) return c;
  }
  return null;
}

/** Constant trip count of `for (T i = A; i < B; ++i / i += S)`, or null. */
function tripCount(loop: SyntaxNode, constValue: (n: SyntaxNode | null | undefined) => number | null): number | null {
  const init = loop.childForFieldName('initializer');
  const cond = loop.childForFieldName('condition');
  const upd = loop.childForFieldName('update');
  if (!init || !cond || !upd) return null;
  const m = /(\w+)\s*=\s*([^;,]+)/.exec(init.text);
  if (!m || cond.type !== 'binary_expression') return null;
  const v = m[1];
  const startNode = init.descendantsOfType(['init_declarator', 'assignment_expression'])[0]?.childForFieldName(init.type === 'declaration' ? 'value' : 'right');
  const start = constValue(startNode ?? null) ?? (/^\d+$/.test(m[2].trim()) ? Number(m[2].trim()) : null);
  const left = cond.childForFieldName('left');
  const right = cond.childForFieldName('right');
  const op = cond.childForFieldName('operator')?.text ?? cond.child(1)?.text;
  if (start === null || left?.text !== v) return null;
  const end = constValue(right);
  if (end === null) return null;
  let step = 1;
  const s = /\+=\s*(\w+)/.exec(upd.text);
  if (s) {
    step = /^\d+$/.test(s[1]) ? Number(s[1]) : NaN;
    if (!Number.isFinite(step) || step <= 0) return null;
  } else if (!/\+\+/.test(upd.text)) return null;
  const span = op === '<=' ? end - start + 1 : op === '<' ? end - start : NaN;
  return Number.isFinite(span) ? Math.max(0, Math.ceil(span / step)) : null;
}

function profiled(pragma: SyntaxNode): boolean {
  for (let n = pragma.previousSibling, k = 0; n && k < 2; n = n.previousSibling, k++) {
    if (n.type !== 'comment') break;
    if (PROFILED.test(n.text)) return true;
  }
  const next = pragma.nextSibling;
  return !!next && next.type === 'comment' && next.startPosition.row === pragma.startPosition.row && PROFILED.test(next.text);
}

export default defineCheck({
  id: 'kernel/excessive-unroll',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation:
    '004 §H4.2 ILP and Occupancy ("Pushing to five-way or six-way ILP produces little gain and can even hurt"); 004 §H4.4 Profiling and Mitigating Register Pressure; 004 §H1.6 Table 8-1 (Instruction fetch: "avoid excessive unrolling that blows up code size"); 000 §10.4/§10.6 (K / k_pack = 4–8)',
  summary: 'Unroll factor or accumulator count well past the 4–8 independent chains that still pay off.',
  why: 'ILP 2 already cuts the threads needed to saturate an SM from ~1,536 to ~1,024, ILP 4 to ~512, and five- or six-way ILP gives little while every extra chain costs registers and instruction-cache space (004 §H4.2, §H1.6; K = 4–8 in 000 §10.4).',
  messages: {
    factor: '#pragma unroll {{n}} on a loop with a heavy body: beyond 4–8 independent chains the gain is small, while registers and code size grow ({{detail}}): `{{code}}`.',
    full: '#pragma unroll {{n}} on a loop with a heavy body: beyond 4–8 independent chains the gain is small, while registers and code size grow (bare `#pragma unroll` fully unrolls this {{n}}-iteration loop; {{detail}}).',
    accumulators: '{{n}} separate accumulators ({{names}}) updated in one loop: beyond 4–8 independent chains the gain is small, while registers and code size grow.',
  },
  fix: 'judgment',
  create(ctx) {
    const fixDesc = 'Use an unroll factor of 2–4 (`#pragma unroll 4`): ILP 4 already needs only ~512 threads per SM to saturate it (004 §H4.2).';
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        for (const p of ctx.source.root.descendantsOfType('preproc_call')) {
          if (p.childForFieldName('directive')?.text !== '#pragma') continue;
          const arg = p.childForFieldName('argument')?.text ?? '';
          const u = UNROLL.exec(arg);
          // A trailing comment on the directive line is part of the preprocessor argument.
          const trailing = /\/[/*].*$/s.exec(arg)?.[0] ?? '';
          if (!u || !m.inDeviceCode(p) || profiled(p) || PROFILED.test(trailing)) continue;
          const loop = loopAfter(p);
          const factorText = (u[1] ?? u[2] ?? '').trim();
          const trip = loop ? tripCount(loop, (n) => m.constValue(n)) : null;
          const stmts = loop ? bodyStatements(loop) : 0;
          const call = loop ? heavyCall(loop) : null;
          const small = stmts <= MAX_SMALL_STMTS && !call;
          const bodyDesc = call ? `the body calls \`${quoteCode(call.text, 40)}\`` : `${stmts} statements in the body`;
          if (factorText) {
            // A `#define`d factor is as constant as a literal one.
            const macro = m.macros.get(factorText);
            const n = /^\d+$/.test(factorText) ? Number(factorText) : macro !== undefined && /^\s*\(?\s*\d+\s*\)?\s*$/.test(macro) ? Number(macro.replace(/[()\s]/g, '')) : null;
            if (n === null || n <= MAX_FACTOR) continue;
            if (trip !== null && trip <= MAX_FULL_TRIP && small) continue;
            ctx.report({ node: p, messageId: 'factor', data: { n: factorText === String(n) ? n : `${factorText} (= ${n})`, detail: `${n} copies of the body; ${bodyDesc}`, code: quoteCode(p.text.trim(), 40) }, fix: { description: fixDesc } });
          } else if (loop && trip !== null && trip > MAX_FULL_TRIP && !small) {
            ctx.report({ node: p, messageId: 'full', data: { n: trip, detail: bodyDesc }, fix: { description: fixDesc } });
          }
        }
        for (const loop of ctx.source.root.descendantsOfType('for_statement')) {
          if (!m.inDeviceCode(loop)) continue;
          const body = loop.childForFieldName('body');
          if (!body) continue;
          // Manual ILP unrolling shows as numbered copies of one accumulator (acc0..acc7); unrelated
          // statistics (sum_x, sum_xy, count) are distinct results, not extra chains of one reduction.
          const stems = new Map<string, Set<string>>();
          for (const a of body.descendantsOfType('assignment_expression')) {
            if (m.loopOf(a)?.id !== loop.id) continue;
            const lhs = a.childForFieldName('left');
            const op = a.childForFieldName('operator')?.text ?? '';
            if (lhs?.type !== 'identifier') continue;
            const self = op !== '=' || new RegExp(`\\b${esc(lhs.text)}\\b`).test(a.childForFieldName('right')?.text ?? '');
            const mm = /^(.*?)(\d+)$/.exec(lhs.text);
            if (!self || !mm) continue;
            const set = stems.get(mm[1]) ?? new Set<string>();
            set.add(lhs.text);
            stems.set(mm[1], set);
          }
          for (const [, names] of stems) {
            if (names.size < MIN_ACCUMULATORS) continue;
            const prev = loop.previousSibling;
            if (prev?.type === 'comment' && PROFILED.test(prev.text)) continue;
            ctx.report({ node: loop, messageId: 'accumulators', data: { n: names.size, names: [...names].slice(0, 3).join(', ') + (names.size > 3 ? ', …' : '') }, fix: { description: fixDesc } });
          }
        }
      },
    };
  },
});

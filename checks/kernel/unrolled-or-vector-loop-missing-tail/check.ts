import { cudaModel } from '../../../src/analysis/cuda.js';
import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const VECTOR_TYPE = /\b(float|double|int|uint|short|char|uchar|longlong|ulonglong|half)([248])\b/;
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Shape { k: number; n: string; var: string; form: string }

export default defineCheck({
  id: 'kernel/unrolled-or-vector-loop-missing-tail',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python', 'luisa-dsl'],
  citation:
    '003 §8.9 Missing Vectorized Loads (requirement "Data count must be handled: process remainder with scalar tail"); 004 §H4 Exposing ILP (unrolled example `for (i = 0; i + 1 < N; i += 2)` has no remainder; see §6); 000 §10.3 Full/tail loop splitting ("one guarded tail chunk")',
  summary: 'Unrolled or vectorized loop whose N % K remainder is never processed.',
  why: 'A loop that consumes K elements per step stops at the last multiple of K, so up to K−1 elements (3 of every float4 group, 1 of every double2 pair) are silently dropped unless a scalar tail handles them (003 §8.9, 004 §H4, 000 §10.3).',
  messages: {
    missingTail:
      'Loop processes {{k}} elements per step ({{form}}) but the {{n}} % {{k}} remainder is never handled: up to {{lost}} trailing element(s) are dropped whenever {{n}} is not a multiple of {{k}} (`{{code}}`).',
  },
  fix: 'judgment',
  create(ctx) {
    if (ctx.source.language === 'luisa-dsl') {
      const candidates: SyntaxNode[] = [];
      const collect = (n: SyntaxNode): void => void candidates.push(n);
      return { for_range_loop: collect, if_statement: collect, 'source:exit': () => candidates.length && luisaLoops(ctx, candidates) };
    }
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const fileText = ctx.source.root.text;
        /** `N / K` as text or through a local `nv = N / K`. */
        const divOf = (t: string, body: SyntaxNode): { n: string; k: number } | null => {
          const d = /^\(?\s*([\w.>-]+(?:\(\))?)\s*\/\s*(\w+)\s*\)?$/.exec(t.trim());
          if (d) {
            const k = /^\d+$/.test(d[2]!) ? Number(d[2]) : Number(m.macros.get(d[2]!) ?? NaN);
            return k >= 2 ? { n: d[1]!, k } : null;
          }
          if (/^\w+$/.test(t.trim())) {
            const decl = body.descendantsOfType('init_declarator').find((x) => x.childForFieldName('declarator')?.text === t.trim());
            const v = decl?.childForFieldName('value')?.text;
            return v && !/^\w+$/.test(v.trim()) ? divOf(v, body) : null;
          }
          return null;
        };
        const constOf = (t: string): number | null => (/^\d+$/.test(t) ? Number(t) : m.macros.has(t) && /^\d+$/.test(m.macros.get(t)!.trim()) ? Number(m.macros.get(t)) : null);
        for (const f of m.functions) {
          if (!(f.isKernel || f.isDevice) || !f.body) continue;
          for (const loop of f.body.descendantsOfType('for_statement')) {
            const cond = loop.childForFieldName('condition')?.text.trim() ?? '';
            const upd = loop.childForFieldName('update')?.text.trim() ?? '';
            const body = loop.childForFieldName('body');
            let shape: Shape | null = null;
            // Unrolled: `i += K` with `i + (K-1) < N`, `i + K <= N`, `i < N - K + 1`, `i <= N - K`.
            const step = /^(\w+)\s*\+=\s*(\w+)$/.exec(upd);
            const k = step ? constOf(step[2]!) : null;
            if (step && k && k >= 2) {
              const v = step[1]!;
              const c = new RegExp(`^${esc(v)}\\s*\\+\\s*(\\w+)\\s*(<=?)\\s*(.+)$`).exec(cond);
              const c2 = new RegExp(`^${esc(v)}\\s*(<=?)\\s*(.+?)\\s*-\\s*(\\d+)(\\s*\\+\\s*1)?$`).exec(cond);
              if (c && ((c[2] === '<' && constOf(c[1]!) === k - 1) || (c[2] === '<=' && constOf(c[1]!) === k))) shape = { k, n: c[3]!.trim(), var: step[1]!, form: `unrolled by ${k}` };
              else if (c2 && (c2[1] === '<=' ? Number(c2[3]) === k && !c2[4] : c2[4] ? Number(c2[3]) === k : Number(c2[3]) === k - 1)) shape = { k, n: c2[2]!.trim(), var: step[1]!, form: `unrolled by ${k}` };
            }
            // Vectorized: `i < N / K` with K-wide vector loads in the body (`reinterpret_cast<const float4*>`).
            if (!shape && body) {
              const c = /^(\w+)\s*<\s*(.+)$/.exec(cond);
              const d = c ? divOf(c[2]!, f.body) : null;
              const vec = VECTOR_TYPE.exec(body.text);
              if (c && d && vec && Number(vec[2]) === d.k && /reinterpret_cast|\*\)\s*\w+\)\s*\[/.test(body.text)) {
                shape = { k: d.k, n: d.n, var: c[1]!, form: `${vec[0]} loads` };
              }
            }
            if (!shape) continue;
            const N = esc(shape.n);
            // N provably a multiple of K: a constant, or a `% K` check / static_assert anywhere in the function or file.
            const nConst = constOf(shape.n);
            if (nConst !== null && nConst % shape.k === 0) continue;
            if (new RegExp(`${N}\\s*%\\s*${esc(String(shape.k))}\\b|${N}\\s*&\\s*${esc(String(shape.k - 1))}\\b`).test(f.body.text)) continue;
            if (new RegExp(`static_assert\\s*\\([^;]*${N}\\s*%`).test(fileText)) continue;
            // A remainder handled after the loop: another loop/if bounded by N, or the loop variable continued.
            const after = f.body.text.slice(loop.endIndex - f.body.startIndex);
            const tail = new RegExp(`(for|while|if)\\s*\\([^;{]*;?[^;{]*<\\s*${N}\\b`).test(after) || new RegExp(`\\(\\s*${N}\\s*/\\s*\\w+\\s*\\)\\s*\\*|${N}\\s*-\\s*\\(?\\s*${N}\\s*%`).test(after);
            if (tail) continue;
            const head = loop.text.slice(0, (loop.childForFieldName('body')?.startIndex ?? loop.endIndex) - loop.startIndex).trim();
            ctx.report({
              node: loop,
              messageId: 'missingTail',
              data: { k: shape.k, n: shape.n, form: shape.form, lost: shape.k - 1, code: head },
              fix: { description: `Add a scalar tail after the loop that handles indices [${shape.n} - ${shape.n} % ${shape.k}, ${shape.n}) (e.g. continue \`${shape.var}\` and loop while \`${shape.var} < ${shape.n}\`), duplicating the loop body for single elements.` },
            });
          }
        }
      },
    };
  },
});

/**
 * LuisaCompute: device loops (`$for`, `dynamic_range`) that step K elements at a time. Plain C++ loops
 * in a kernel unroll at record time over host extents and are not examined.
 */
function luisaLoops(ctx: CheckContext, candidates: SyntaxNode[]): void {
  const m = ctx.get(luisaModel);
  if (!m.source.dsl?.size && !m.bodies.length) return;
  const text = ctx.source.text;
  const constK = (n: SyntaxNode | null): number | null => {
    const v = m.constValue(n);
    return v !== null && v >= 2 ? v : null;
  };
  for (const loop of candidates) {
    if (!m.isDeviceLoop(loop) || !m.inDeviceCode(loop)) continue;
    const parts = m.loopParts(loop);
    if (!parts?.variable || !parts.end) continue;
    const end = parts.end;
    const body = loop.type === 'for_range_loop' ? loop.childForFieldName('body') : loop.childForFieldName('consequence');
    if (!body) continue;
    let shape: Shape | null = null;
    let nNode: SyntaxNode | null = null;
    const k = constK(parts.step);
    const e = end.type === 'parenthesized_expression' ? end.namedChildren[0] ?? end : end;
    if (k !== null && e.type === 'binary_expression') {
      // `$for (i, 0u, n - 3u, 4u)` / `$for (i, 0u, n - 4u + 1u, 4u)`: stops before the last partial step.
      const op = e.childForFieldName('operator')?.type;
      const l = e.childForFieldName('left');
      const r = e.childForFieldName('right');
      if (op === '-' && l && m.constValue(r) === k - 1) {
        shape = { k, n: l.text, var: parts.variable, form: `unrolled by ${k}` };
        nNode = l;
      }
      else if (op === '+' && m.constValue(r) === 1 && l?.type === 'binary_expression' && l.childForFieldName('operator')?.type === '-' && m.constValue(l.childForFieldName('right')) === k) {
        nNode = l.childForFieldName('left');
        shape = { k, n: nNode!.text, var: parts.variable, form: `unrolled by ${k}` };
      }
    } else if (!parts.step && e.type === 'binary_expression' && e.childForFieldName('operator')?.type === '/') {
      // `dynamic_range(n / 4u)` whose body addresses `c * 4u + j`: K elements per iteration.
      const kk = constK(e.childForFieldName('right'));
      const n = e.childForFieldName('left');
      const v = parts.variable;
      if (kk !== null && n && new RegExp(`\\b${esc(v)}\\s*\\*\\s*${esc(String(kk))}u?\\b|\\b${esc(String(kk))}u?\\s*\\*\\s*${esc(v)}\\b`).test(body.text)) {
        shape = { k: kk, n: n.text, var: parts.variable, form: `${kk} elements per iteration` };
        nNode = n;
      }
    }
    if (!shape) continue;
    const N = esc(shape.n.trim());
    // N provably a multiple of K: a constant, or the host or kernel tests `N % K` (000 §10.3 generator proof).
    const nConst = m.constValue(nNode);
    if (nConst !== null && nConst % shape.k === 0) continue;
    let fn: SyntaxNode | null = loop.parent;
    while (fn && fn.type !== 'function_definition') fn = fn.parent;
    const proofScope = fn ? text.slice(fn.startIndex, fn.endIndex) : text;
    if (new RegExp(`${N}\\s*%\\s*${esc(String(shape.k))}u?\\b|${N}\\s*&\\s*${esc(String(shape.k - 1))}u?\\b`).test(proofScope)) continue;
    // A tail after the loop in the same kernel or generator: a later loop or branch whose head mentions N.
    const scope = m.bodyOf(loop)?.body ?? m.generatorOf(loop);
    const after = scope ? text.slice(loop.endIndex, scope.endIndex) : '';
    if (new RegExp(`(\\bif|\\bwhile|\\bfor|dynamic_range)\\s*\\([^;{]*\\b${N}(?![\\w(])`).test(after)) continue;
    const head = loop.type === 'for_range_loop' ? text.slice(loop.startIndex, body.startIndex).trim() : `$for (${m.conditionOf(loop)?.text ?? ''})`;
    ctx.report({
      node: loop,
      messageId: 'missingTail',
      data: { k: shape.k, n: shape.n, form: shape.form, lost: shape.k - 1, code: quoteCode(head, 60) },
      fix: { description: `Add one guarded tail after the loop for indices [${shape.n} - ${shape.n} % ${shape.k}, ${shape.n}) (e.g. \`$for (i, ${shape.n} / ${shape.k}u * ${shape.k}u, ${shape.n}) { … };\`), or prove ${shape.n} % ${shape.k} == 0 on the host (000 §10.3).` },
    });
  }
}

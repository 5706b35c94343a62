import { luisaModel, type LuisaModel, selectsFewThreads } from '../../../src/analysis/luisa.js';
import { contains, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const ALL_REDUCE = /^warp_active_(sum|product|min|max|bit_and|bit_or|bit_xor|count_bits|all|any)$/;
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');


/** `thread_x() < num_warps` / `tid < 32u`: only the first warp(s) of the block run the collective. */
function firstWarps(m: LuisaModel, cond: SyntaxNode | null, width: number): boolean {
  const c = unparen(cond);
  if (c?.type !== 'binary_expression' || !/^<=?$/.test(c.childForFieldName('operator')?.type ?? '')) return false;
  const l = unparen(c.childForFieldName('left'));
  const r = unparen(c.childForFieldName('right'));
  if (!l || !r) return false;
  const THREAD = /^(thread_x\(\)|thread_id\(\)\.x)$/;
  const isThread = THREAD.test(l.text.replace(/\s/g, '')) || (l.type === 'identifier' && THREAD.test(m.declOf(l.text, l)?.value?.text.replace(/\s/g, '') ?? ''));
  if (!isThread) return false;
  const k = m.constValue(r);
  return (k !== null && k <= width) || (k === null && !m.laneDependent(r) && /warp/i.test(r.text));
}

export default defineCheck({
  id: 'luisa/warp-result-used-as-block-result',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §3.7 step 3, rule 5 ("Never mix warp and block scope"); 000 §7 rule 3 ("warp_active_sum only reduces within the current warp … use a two-level reduction")',
  summary: 'A warp_active_* result is written out as the result of a multi-warp block.',
  why: 'warp_active_sum and its siblings reduce only the 32 lanes of the calling warp, so in a 256-thread block the value written for the block holds one of 8 warp partials and the other 7 are lost; a two-level reduction (warp → Shared<T> → block) is needed (000 §3.7 step 3 rule 5, §7 rule 3, §4.5).',
  messages: {
    partial: '`{{reduce}}` reduces one warp only, but `{{write}}` stores it as the result of the whole {{threads}}-thread block ({{warps}} warps); only one warp\'s partial is kept. Write per-warp partials to a `Shared<T>{{{warps}}}`, `sync_block()`, then reduce them with a second warp_active_*.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const k of m.bodies) {
          if (k.kind === 'Callable' || m.kernelOf(k.body)?.node.id !== k.node.id) continue;
          const threads = k.blockSize?.product ?? null;
          const width = k.warpSize?.value ?? 32;
          if (threads === null || threads <= width) continue;
          const sharedNames = m.shared.filter((s) => s.name && contains(k.body, s.node)).map((s) => s.name!);
          const sharedRe = sharedNames.length ? new RegExp(`\\b(${sharedNames.map(esc).join('|')})\\b`) : null;
          // Locals that carry shared data (`Float v = s[tid] + s[tid + 32u];`): a reduction over them is phase 2.
          const fromShared = new Set<string>();
          if (sharedRe) {
            for (let round = 0; round < 2; round++) {
              for (const n of k.body.descendantsOfType(['init_declarator', 'assignment_expression'])) {
                const name = n.type === 'init_declarator' ? n.childForFieldName('declarator')?.text : n.childForFieldName('left')?.text;
                const v = n.type === 'init_declarator' ? n.childForFieldName('value') : n.childForFieldName('right');
                if (!name || !v || !/^\w+$/.test(name)) continue;
                if (sharedRe.test(v.text) || [...fromShared].some((x) => new RegExp(`\\b${esc(x)}\\b`).test(v.text))) fromShared.add(name);
              }
            }
          }
          const carriesShared = (e: SyntaxNode | null | undefined): boolean => !!e && ((sharedRe?.test(e.text) ?? false) || [...fromShared].some((x) => new RegExp(`\\b${esc(x)}\\b`).test(e.text)));
          const writes = m.callsIn(k.body, 'write').filter((w) => w.receiver && w.args.length >= 2 && !sharedNames.includes(w.receiver.text.replace(/^\(?\*|\)$/g, '')));
          for (const c of m.callsIn(k.body, ALL_REDUCE)) {
            if (c.receiver || carriesShared(c.args[0])) continue;
            // Under `$if (thread_x() < num_warps)` only the first warp reduces: a phase-2 combine.
            if (m.deviceBranchesAround(c.node).some((b) => !b.inElse && firstWarps(m, b.condition, width))) continue;
            const p = c.node.parent;
            let name: string | null = null;
            if (p?.type === 'init_declarator') name = p.childForFieldName('declarator')?.text ?? null;
            else if (p?.type === 'assignment_expression' && p.childForFieldName('right')?.id === c.node.id) name = p.childForFieldName('left')?.text ?? null;
            const valueRe = name && /^\w+$/.test(name) ? new RegExp(`\\b${esc(name)}\\b`) : null;
            for (const w of writes) {
              const value = w.args[1];
              const direct = contains(value, c.node);
              if (!direct && (!valueRe || w.node.startIndex < c.node.endIndex || !valueRe.test(value.text))) continue;
              const idx = unparen(w.args[0]);
              if (!idx || m.laneDependent(idx)) continue;
              if (!m.deviceBranchesAround(w.node).some((b) => !b.inElse && selectsFewThreads(m, b.condition))) continue;
              // The partial went through shared memory first (`part[wid] = t;`): a two-level reduction.
              if (!direct && name && sharedRe) {
                const between = m.source.text.slice(c.node.endIndex, w.node.startIndex);
                if (sharedNames.some((s) => new RegExp(`\\b${esc(s)}\\s*(\\[[^\\]]*\\]\\s*=[^=]|\\.(write|atomic)\\s*\\()[^;]*\\b${esc(name!)}\\b`).test(between))) continue;
              }
              ctx.report({
                node: w.node,
                messageId: 'partial',
                data: { reduce: quote(c.node), write: quote(w.node), threads, warps: Math.ceil(threads / width) },
              });
            }
          }
        }
      },
    };
  },
});

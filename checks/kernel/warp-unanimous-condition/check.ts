import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { constantBlockOf } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** Names bound directly to `threadIdx.x` (`const int tid = threadIdx.x;`): their parity alternates lane by lane. */
function threadIdxAliases(body: SyntaxNode | null): Set<string> {
  const out = new Set<string>(['threadIdx.x']);
  for (const d of body?.descendantsOfType('init_declarator') ?? []) {
    const v = d.childForFieldName('value')?.text.replace(/\s|\(int\)|\(unsigned\)/g, '');
    const name = d.childForFieldName('declarator')?.text;
    // Lane ids (`threadIdx.x % 32`) are left out on purpose: lane-parity roles belong to shuffle algorithms.
    if (v === 'threadIdx.x' && name && !/lane/i.test(name)) out.add(name);
  }
  return out;
}

const pow2 = (k: number) => k >= 2 && k < 32 && (k & (k - 1)) === 0;

/** `t % K == c`, `(t & (K-1)) == c`, `t & 1`, `t % 2` (truthy) with K a power of two < 32. */
function parityTest(cond: string, aliases: Set<string>): boolean {
  const c = cond.replace(/\s+/g, '').replace(/^\((.*)\)$/, '$1');
  for (const a of aliases) {
    const t = a;
    const mod = c.match(new RegExp(`^\\(?${esc(t)}%(\\d+)u?\\)?(?:[!=]=\\d+u?)?$`));
    if (mod && pow2(Number(mod[1]))) return true;
    const and = c.match(new RegExp(`^\\(?${esc(t)}&(0x[0-9a-fA-F]+|\\d+)u?\\)?(?:[!=]=\\d+u?)?$`));
    if (and && pow2(Number(and[1]) + 1)) return true;
  }
  return false;
}

const stmts = (arm: SyntaxNode | null): SyntaxNode[] =>
  !arm ? [] : arm.type === 'compound_statement' ? arm.namedChildren.filter((c) => c.type !== 'comment') : [arm];
const taskLike = (arm: SyntaxNode | null) => {
  const s = stmts(arm);
  return s.length >= 2 || s.some((x) => x.descendantsOfType('call_expression').length > 0);
};

/**
 * Arms that differ only in literals, subscripts or one swapped array name (`x[t / 2] = v` vs `y[t / 2] = v`)
 * are one task on interleaved data (a layout parity), not two tasks.
 */
function sameTaskDifferentOffset(a: SyntaxNode, b: SyntaxNode): boolean {
  const toks = (n: SyntaxNode) => n.text.replace(/\[[^\]]*\]/g, '[]').replace(/\b\d+(\.\d*)?[fFuU]?\b/g, '0').match(/[A-Za-z_]\w*|\S/g) ?? [];
  const ta = toks(a);
  const tb = toks(b);
  if (ta.length !== tb.length) return false;
  // Only array names may differ: different callees (`build_left` / `build_right`) are different tasks.
  const diff = ta.map((t, i) => [t, tb[i]!, ta[i + 1]] as const).filter(([x, y]) => x !== y);
  return diff.length <= 2 && diff.every(([x, y, next]) => /^[A-Za-z_]\w*$/.test(x) && /^[A-Za-z_]\w*$/.test(y) && next === '[');
}

export default defineCheck({
  id: 'kernel/warp-unanimous-condition',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '004 §H3.2 Techniques to Avoid Warp Divergence (Rewrite conditions to be warp-unanimous)',
  summary: 'Two tasks split by thread parity, diverging every warp.',
  why: 'Splitting two tasks by thread parity puts half of every 32-lane warp on each task, so each warp runs both tasks one after the other at 50 % efficiency, while splitting by warp index keeps every warp on one path (004 §H3.1, §H3.2).',
  messages: {
    parity: 'Work is split between two tasks by thread parity (`{{cond}}`), which diverges every warp{{figure}}; split by warp index instead (warpId = threadIdx.x / 32).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      if_statement(n) {
        const m = ctx.get(cudaModel);
        const f = m.functionOf(n);
        if (!f || !(f.isKernel || f.isDevice)) return;
        const cond = n.childForFieldName('condition');
        const alt = n.childForFieldName('alternative');
        if (!cond || !alt) return;
        const altBody = alt.type === 'else_clause' ? alt.namedChildren.find((c) => c.type !== 'comment') ?? null : alt;
        const cons = n.childForFieldName('consequence');
        if (!cons || !altBody || !taskLike(cons) || !taskLike(altBody)) return;
        if (!parityTest(cond.text, threadIdxAliases(f.body))) return;
        if (sameTaskDifferentOffset(cons, altBody)) return;
        // Lane roles inside warp-level primitives (butterfly exchanges) are the algorithm, not a task split.
        if (/__shfl\w*|__ballot_sync|__any_sync|__all_sync|__match_\w+|\.shfl\w*\(/.test(n.text)) return;
        const b = constantBlockOf(ctx.source, ctx.config, f);
        const threads = b ? b[0] * b[1] * b[2] : 0;
        ctx.report({
          node: cond,
          messageId: 'parity',
          data: {
            cond: quoteCode(cond.text.replace(/^\((.*)\)$/s, '$1'), 50),
            figure: b && b[0] >= 64 ? ` (all ${Math.ceil(threads / 32)} warps of the ${threads}-thread blocks it is launched with run both tasks one after the other)` : '',
          },
          fix: { description: 'Assign tasks by warp: `const int warp_id = threadIdx.x / 32; if (warp_id % 2 == 0) { /*A*/ } else { /*B*/ }`, and re-check the work assignment.' },
        });
      },
    };
  },
});

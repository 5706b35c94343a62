import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

const BUILTIN: Record<string, string> = { max: 'warp_active_max', min: 'warp_active_min', '+': 'warp_active_sum', '*': 'warp_active_product' };

interface Step {
  stmt: SyntaxNode;
  name: string;
  op: string;
  /** The XOR distance expression (`16u`, `d`). */
  dist: SyntaxNode;
}

const isEmpty = (s: SyntaxNode): boolean => s.type === 'expression_statement' && s.namedChildCount === 0;
const callName = (c: SyntaxNode): string | null => {
  const f = c.childForFieldName('function');
  return f?.type === 'identifier' ? f.text : null;
};

/** `m = max(m, warp_read_lane(m, lane ^ K))`, `m = m + warp_read_lane(m, lane ^ K)`, `m += warp_read_lane(m, lane ^ K)`. */
function stepOf(stmt: SyntaxNode): Step | null {
  if (stmt.type !== 'expression_statement') return null;
  const a = stmt.namedChildren[0];
  if (a?.type !== 'assignment_expression') return null;
  const l = a.childForFieldName('left');
  const r = unparen(a.childForFieldName('right'));
  const aop = a.childForFieldName('operator')?.type;
  if (l?.type !== 'identifier' || !r) return null;
  const name = l.text;
  let op: string | null = null;
  let read: SyntaxNode | null = null;
  const isSelf = (n: SyntaxNode | null | undefined): boolean => unparen(n)?.type === 'identifier' && unparen(n)!.text === name;
  if (aop === '+=' || aop === '*=') {
    op = aop[0];
    read = r;
  } else if (aop === '=') {
    if (r.type === 'call_expression' && (callName(r) === 'max' || callName(r) === 'min')) {
      const args = r.childForFieldName('arguments')?.namedChildren ?? [];
      if (args.length !== 2) return null;
      op = callName(r);
      read = isSelf(args[0]) ? unparen(args[1]) : isSelf(args[1]) ? unparen(args[0]) : null;
    } else if (r.type === 'binary_expression' && /^[+*]$/.test(r.childForFieldName('operator')?.type ?? '')) {
      op = r.childForFieldName('operator')!.type;
      const x = r.childForFieldName('left');
      const y = r.childForFieldName('right');
      read = isSelf(x) ? unparen(y) : isSelf(y) ? unparen(x) : null;
    }
  }
  if (!op || !read || read.type !== 'call_expression' || callName(read) !== 'warp_read_lane') return null;
  const [v, idx] = read.childForFieldName('arguments')?.namedChildren ?? [];
  if (!isSelf(v) || unparen(idx)?.type !== 'binary_expression') return null;
  const x = unparen(idx)!;
  if (x.childForFieldName('operator')?.type !== '^') return null;
  return { stmt, name, op, dist: x.childForFieldName('right')! };
}

/** 16, 8, 4, 2, 1 for a 32-lane warp: every XOR distance of a full-width butterfly. */
function fullWidth(dists: number[], width: number): boolean {
  for (let d = 1; d < width; d *= 2) if (!dists.includes(d)) return false;
  return true;
}

/** The lines of `from..to` hold only these statements (and comments or stray `;`), so they can be replaced whole. */
function ownLines(m: LuisaModel, from: SyntaxNode, to: SyntaxNode): boolean {
  const text = m.source.text;
  const start = text.lastIndexOf('\n', from.startIndex - 1) + 1;
  let end = text.indexOf('\n', to.endIndex);
  if (end < 0) end = text.length;
  return /^[ \t]*$/.test(text.slice(start, from.startIndex)) && /^[\s;]*(\/\/.*)?$/.test(text.slice(to.endIndex, end));
}

export default defineCheck({
  id: 'luisa/butterfly-to-builtin',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §3.3 Pairwise Max/Min → Built-in Warp Max/Min; 000 §2.2 Butterfly Reduction via warp_read_lane',
  summary: 'Hand-written warp_read_lane XOR butterfly over the whole warp instead of warp_active_max/min/sum.',
  why: 'A full-width butterfly is 5 warp_read_lane steps on a 32-lane warp, while warp_active_max/min/sum is one WaveActive*/OpGroupNonUniform* instruction on DX and Vulkan and, on CUDA, the same 5-step __shfl_xor_sync butterfly (one __reduce_*_sync for integers on SM 8.0+) generated for you (000 §3.3, §7 rule 1).',
  messages: {
    butterfly: 'Hand-written XOR butterfly `{{code}}` (distances {{dists}}) spans the whole {{width}}-lane warp; a single `{{name}} = {{builtin}}({{name}});` does the same.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const reads = m.callsNamed('warp_read_lane');
        if (!reads.length) return;
        const widthAt = (n: SyntaxNode): number => m.kernelOf(n)?.warpSize?.value ?? m.bodyOf(n)?.warpSize?.value ?? 32;
        const seen = new Set<number>();
        const report = (node: SyntaxNode, to: SyntaxNode, step: Step, dists: number[], safe: boolean): void => {
          const builtin = BUILTIN[step.op];
          const indent = /^[ \t]*/.exec(ctx.linesOf(node))![0];
          const text = `${indent}${step.name} = ${builtin}(${step.name});`;
          ctx.report({
            node,
            messageId: 'butterfly',
            data: { code: quote(step.stmt), dists: [...dists].sort((a, b) => b - a).join(', '), width: widthAt(node), name: step.name, builtin },
            fix: safe && ownLines(m, node, to)
              ? { description: `Replace the butterfly with one ${builtin}.`, replace: { from: node, to, text } }
              : { description: `Replace the butterfly with \`${step.name} = ${builtin}(${step.name});\` and drop the distance variable.` },
          });
        };
        for (const c of reads) {
          let stmt: SyntaxNode | null = c.node.parent;
          while (stmt && stmt.type !== 'expression_statement' && stmt.type !== 'compound_statement') stmt = stmt.parent;
          const s0 = stmt ? stepOf(stmt) : null;
          if (!s0 || seen.has(s0.stmt.id) || !m.inDeviceCode(s0.stmt)) continue;
          const width = widthAt(s0.stmt);
          const parent = s0.stmt.parent;
          // A loop whose body is this one step: the distances come from the loop.
          const loop = parent?.type === 'compound_statement' ? parent.parent : parent;
          const bodyStmts = parent?.type === 'compound_statement' ? parent.namedChildren.filter((x) => !isEmpty(x) && x.type !== 'comment') : [s0.stmt];
          if (loop && (loop.type === 'for_range_loop' || loop.type === 'for_statement' || loop.type === 'while_statement') && loop.childForFieldName('body')?.id === (parent?.type === 'compound_statement' ? parent.id : s0.stmt.id)) {
            const hit = loopDistances(m, loop, s0, bodyStmts);
            if (hit) {
              seen.add(s0.stmt.id);
              if (fullWidth(hit.dists, width)) report(loop, loop, s0, hit.dists, hit.safe);
              continue;
            }
          }
          // A straight chain of steps on the same variable.
          if (parent?.type !== 'compound_statement') continue;
          const sibs = parent.namedChildren.filter((x) => !isEmpty(x) && x.type !== 'comment');
          let i = sibs.findIndex((x) => x.id === s0.stmt.id);
          while (i > 0) {
            const p = stepOf(sibs[i - 1]);
            if (!p || p.name !== s0.name) break;
            i--;
          }
          const chain: Step[] = [];
          for (let j = i; j < sibs.length; j++) {
            const s = stepOf(sibs[j]);
            if (!s || s.name !== s0.name) break;
            chain.push(s);
            seen.add(s.stmt.id);
          }
          const dists = chain.map((s) => m.constValue(s.dist));
          if (chain.length < 2 || dists.some((d) => d === null)) continue;
          if (!chain.every((s) => s.op === chain[0].op)) continue;
          if (!fullWidth(dists as number[], width)) continue;
          report(chain[0].stmt, chain[chain.length - 1].stmt, chain[0], dists as number[], true);
        }
      },
    };
  },
});

/** XOR distances a loop walks: a record-time `{16u, 8u, …}` list or halving `for`, or a halving `$while`. */
function loopDistances(m: LuisaModel, loop: SyntaxNode, step: Step, body: SyntaxNode[]): { dists: number[]; safe: boolean } | null {
  const d = unparen(step.dist);
  if (d?.type !== 'identifier') return null;
  const v = d.text;
  if (loop.type === 'for_range_loop') {
    if (m.isDeviceLoop(loop) || loop.childForFieldName('declarator')?.text !== v || body.length !== 1) return null;
    const list = loop.childForFieldName('right');
    if (list?.type !== 'initializer_list') return null;
    const dists = list.namedChildren.map((x) => m.constValue(x));
    return dists.every((x) => x !== null) ? { dists: dists as number[], safe: true } : null;
  }
  const halves = (t: string): boolean => new RegExp(`^${esc(v)}\\s*(>>=\\s*1u?|/=\\s*2u?|=\\s*${esc(v)}\\s*(>>\\s*1u?|/\\s*2u?))$`).test(t.replace(/;$/, '').trim());
  const reachesOne = (c: SyntaxNode | null): boolean => !!c && new RegExp(`^\\(?\\s*${esc(v)}\\s*(>\\s*0u?|>=\\s*1u?|!=\\s*0u?)\\s*\\)?$`).test(c.text.trim());
  const series = (start: number | null): number[] | null => {
    if (start === null || start <= 0) return null;
    const out: number[] = [];
    for (let k = start; k >= 1; k = Math.floor(k / 2)) out.push(k);
    return out;
  };
  if (loop.type === 'for_statement' && !m.isDeviceLoop(loop)) {
    const init = loop.childForFieldName('initializer');
    const decl = init?.type === 'declaration' ? init.namedChildren.find((x) => x.type === 'init_declarator') : null;
    if (!decl || decl.childForFieldName('declarator')?.text !== v || body.length !== 1) return null;
    if (!halves(loop.childForFieldName('update')?.text ?? '') || !reachesOne(loop.childForFieldName('condition'))) return null;
    const dists = series(m.constValue(decl.childForFieldName('value')));
    return dists ? { dists, safe: true } : null;
  }
  if (loop.type === 'while_statement' && m.isDeviceLoop(loop)) {
    if (!reachesOne(m.conditionOf(loop))) return null;
    if (body.length !== 2 || !halves(body.find((x) => x.id !== step.stmt.id)?.text ?? '')) return null;
    const decl = m.declOf(v, loop);
    const init = unparen(decl?.value);
    if (!init) return null;
    // `warp_lane_count() / 2u`: half of whatever width the backend runs.
    if (/^warp_lane_count\s*\(\s*\)\s*(\/\s*2u?|>>\s*1u?)$/.test(init.text.trim())) {
      const w = m.kernelOf(loop)?.warpSize?.value ?? 32;
      return { dists: series(w / 2)!, safe: false };
    }
    const dists = series(m.constValue(init));
    return dists ? { dists, safe: false } : null;
  }
  return null;
}

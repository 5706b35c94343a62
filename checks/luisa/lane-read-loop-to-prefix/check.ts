import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

const isEmpty = (s: SyntaxNode): boolean => (s.type === 'expression_statement' && s.namedChildCount === 0) || s.type === 'comment';

/** `warp_lane_id()`, or a local initialised from it (`UInt lane = warp_lane_id();`). */
function isLaneId(m: LuisaModel, n: SyntaxNode | null | undefined, depth = 0): boolean {
  const e = unparen(n);
  if (!e || depth > 3) return false;
  if (e.type === 'call_expression') return /^warp_lane_id\s*\(\s*\)$/.test(e.text);
  if (e.type === 'identifier') {
    const d = m.declOf(e.text, e);
    return !!d && !d.param && isLaneId(m, d.value, depth + 1);
  }
  return false;
}

/** The loop's end is the lane id (exclusive) or the lane id + 1 (inclusive); null for any other bound. */
function boundKind(m: LuisaModel, end: SyntaxNode | null): 'exclusive' | 'inclusive' | null {
  const e = unparen(end);
  if (!e) return null;
  if (isLaneId(m, e)) return 'exclusive';
  if (e.type === 'binary_expression' && e.childForFieldName('operator')?.type === '+') {
    const l = e.childForFieldName('left');
    const r = e.childForFieldName('right');
    if ((isLaneId(m, l) && m.constValue(r) === 1) || (isLaneId(m, r) && m.constValue(l) === 1)) return 'inclusive';
  }
  return null;
}

/** `acc += warp_read_lane(v, i)` or `acc = acc + warp_read_lane(v, i)`: the accumulator and the value. */
function accumulation(stmt: SyntaxNode, variable: string): { acc: string; value: SyntaxNode; read: SyntaxNode } | null {
  const a = stmt.type === 'expression_statement' ? stmt.namedChildren[0] : null;
  if (a?.type !== 'assignment_expression') return null;
  const l = a.childForFieldName('left');
  if (l?.type !== 'identifier') return null;
  let r = unparen(a.childForFieldName('right'));
  const op = a.childForFieldName('operator')?.type;
  if (op === '=' && r?.type === 'binary_expression' && r.childForFieldName('operator')?.type === '+') {
    const x = unparen(r.childForFieldName('left'));
    const y = unparen(r.childForFieldName('right'));
    r = x?.text === l.text ? y : y?.text === l.text ? x : null;
  } else if (op !== '+=') return null;
  if (r?.type !== 'call_expression' || r.childForFieldName('function')?.text !== 'warp_read_lane') return null;
  const [v, idx] = r.childForFieldName('arguments')?.namedChildren ?? [];
  if (!v || unparen(idx)?.text !== variable) return null;
  // The value must not change per iteration (`warp_read_lane(w[i], i)` is not a prefix of one value).
  if (new RegExp(`\\b${esc(variable)}\\b`).test(v.text)) return null;
  return { acc: l.text, value: v, read: r };
}

const ZERO = /^(0|0u|0\.f|0\.0f?|0\.|0\.0|Float\(0\.f\)|def\(0\.f\)|def\(0u\))$/;

export default defineCheck({
  id: 'luisa/lane-read-loop-to-prefix',
  pass: 3,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §3.4 Sequential Lane Reads → warp_prefix_sum; 000 §7 rule 6',
  summary: 'Device loop of warp_read_lane over the lower lanes builds an exclusive prefix by hand.',
  why: 'A loop of warp_read_lane over the lower lanes costs up to 31 dependent shuffles on a 32-lane warp (lane 31 waits for all of them), while warp_prefix_sum is one WavePrefixSum / OpGroupNonUniform exclusive scan on DX and Vulkan and a 5-step __shfl_up_sync chain on CUDA (000 §3.4, §7 rules 1 and 6).',
  messages: {
    exclusive: 'Loop `{{loop}}` of warp_read_lane calls over the lanes below this one builds an exclusive prefix of `{{value}}` by hand; use `warp_prefix_sum({{value}})`, which is exclusive like the loop.',
    inclusive: 'Loop `{{loop}}` of warp_read_lane calls up to and including this lane builds an inclusive prefix by hand; use `warp_prefix_sum({{value}}) + {{value}}` (warp_prefix_sum is exclusive, so add the lane\'s own value).',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const text = m.source.text;
        const ownLines = (from: SyntaxNode, to: SyntaxNode): boolean => {
          const start = text.lastIndexOf('\n', from.startIndex - 1) + 1;
          let end = text.indexOf('\n', to.endIndex);
          if (end < 0) end = text.length;
          return /^[ \t]*$/.test(text.slice(start, from.startIndex)) && /^[\s;]*(\/\/.*)?$/.test(text.slice(to.endIndex, end));
        };
        const done = new Set<number>();
        for (const c of m.callsNamed('warp_read_lane')) {
          const idx = unparen(c.args[1]);
          if (idx?.type !== 'identifier') continue;
          const loop = m.deviceLoopsAround(c.node)[0];
          if (!loop || done.has(loop.id)) continue;
          const parts = m.loopParts(loop);
          if (!parts || parts.variable !== idx.text) continue;
          if (parts.start && m.constValue(parts.start) !== 0) continue;
          if (parts.step && m.constValue(parts.step) !== 1) continue;
          const kind = boundKind(m, parts.end);
          if (!kind) continue;
          const body = loop.type === 'for_range_loop' ? loop.childForFieldName('body') : loop.childForFieldName('consequence');
          const stmts = body?.type === 'compound_statement' ? body.namedChildren.filter((s) => !isEmpty(s)) : body ? [body] : [];
          const acc = stmts.map((s) => accumulation(s, idx.text)).find((x) => x && x.read.id === c.node.id);
          if (!acc) continue;
          done.add(loop.id);
          const head = loop.type === 'for_range_loop'
            ? `for (${loop.childForFieldName('type')?.text ?? 'auto'} ${parts.variable} : ${loop.childForFieldName('right')?.text ?? ''})`
            : `$for ${loop.childForFieldName('condition')?.text ?? ''}`;
          const value = acc.value.text;
          let fix: { description: string; replace?: { from: SyntaxNode; to?: SyntaxNode; text: string } } = { description: kind === 'exclusive' ? `Use ${acc.acc} = warp_prefix_sum(${value}).` : `Use warp_prefix_sum(${value}) + ${value}.` };
          if (kind === 'exclusive' && stmts.length === 1) {
            const lineStart = text.lastIndexOf('\n', loop.startIndex - 1) + 1;
            // A `$for` was normalized to ` if`: the blank before the keyword is the `$`.
            const indentOf = (n: SyntaxNode): string => /^[ \t]*/.exec(text.slice(text.lastIndexOf('\n', n.startIndex - 1) + 1, n.startIndex - (m.dslKind(n) ? 1 : 0)))![0];
            // `Float acc = 0.f;` right before the loop: fold the two into one declaration.
            let prev = loop.previousNamedSibling;
            while (prev && prev.type === 'expression_statement' && prev.namedChildCount === 0) prev = prev.previousNamedSibling;
            const inits = prev?.type === 'declaration' ? prev.namedChildren.filter((x) => x.type === 'init_declarator') : [];
            const initValue = inits.length === 1 && inits[0].childForFieldName('declarator')?.text === acc.acc ? inits[0].childForFieldName('value') : null;
            const zero = !!initValue && ZERO.test(initValue.text.replace(/^[{(]\s*|\s*[)}]$/g, ''));
            if (zero && ownLines(prev!, loop)) {
              fix = { description: 'Replace the loop with one exclusive warp_prefix_sum.', replace: { from: prev!, to: loop, text: `${indentOf(prev!)}${prev!.childForFieldName('type')!.text} ${acc.acc} = warp_prefix_sum(${value});` } };
            } else if (ownLines(loop, loop) && lineStart <= loop.startIndex) {
              fix = { description: 'Replace the loop with one exclusive warp_prefix_sum.', replace: { from: loop, to: loop, text: `${indentOf(loop)}${acc.acc} += warp_prefix_sum(${value});` } };
            }
          }
          ctx.report({ node: loop, messageId: kind, data: { loop: head, acc: acc.acc, value }, fix });
        }
      },
    };
  },
});

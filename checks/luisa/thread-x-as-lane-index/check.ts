import { luisaModel, type DslBody, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** `thread_x()` or `thread_id().x`. */
function isThreadX(n: SyntaxNode): boolean {
  if (n.type === 'call_expression') return n.childForFieldName('function')?.text === 'thread_x' && (n.childForFieldName('arguments')?.namedChildren.length ?? 0) === 0;
  if (n.type === 'field_expression') return n.childForFieldName('field')?.text === 'x' && /^thread_id\s*\(\s*\)$/.test(n.childForFieldName('argument')?.text ?? '');
  return false;
}

/**
 * Occurrences of thread_x() in `e` that are used as a lane: not reduced to the warp index
 * (`/ warp_lane_count()`, `>> 5u`) or to the lane (`% warp_lane_count()`, `& 31u`).
 */
function rawThreadX(m: LuisaModel, e: SyntaxNode, depth = 0): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const visit = (n: SyntaxNode): void => {
    if (n.type === 'binary_expression' && ['/', '%', '>>', '&'].includes(n.childForFieldName('operator')?.type ?? '')) return;
    if (n.type === 'lambda_expression') return;
    if (isThreadX(n)) {
      out.push(n);
      return;
    }
    if (n.type === 'identifier' && depth < 2) {
      // `auto tid = thread_x();` used later as the lane.
      const d = m.declOf(n.text, n);
      const v = unparen(d?.value ?? null);
      if (v && !d!.param && isThreadX(v)) out.push(n);
      return;
    }
    for (const c of n.namedChildren) visit(c);
  };
  visit(e);
  return out;
}

const multiWarp = (b: DslBody | null): number | null => {
  const p = b?.blockSize?.product ?? null;
  return p !== null && p > 32 ? p : null;
};

export default defineCheck({
  id: 'luisa/thread-x-as-lane-index',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §3.7 step 3, rule 4 ("Use warp_lane_id() as the lane index once the block has more than one warp"); 000 §3.8 Block-Size Scaling',
  summary: 'thread_x() used as a warp lane index in a block of more than one warp.',
  why: 'Once the block has more than one warp (more than 32 threads), thread_x() runs past the lane range of every warp but the first, so a lane index built from it reads the wrong lanes or out of range; warp_lane_id() is the lane and thread_x() / warp_lane_count() only the warp index (000 §3.7 step 3 rule 4, §3.8).',
  messages: {
    lane: 'thread_x() is used as a lane index (`{{code}}`), but the block has {{threads}} threads ({{warps}} warps); use warp_lane_id() (thread_x() only gives the warp index via / warp_lane_count()).',
    select: 'thread_x() is compared against a lane-range constant (`{{code}}`) to select lanes for a warp operation, but the block has {{threads}} threads ({{warps}} warps): only the first warp matches; use warp_lane_id().',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const warpCalls = m.callsNamed(/^warp_(read_lane|read_first_active_lane|active_\w+|prefix_\w+)$/);
        if (!warpCalls.length) return;
        const data = (threads: number, code: string) => ({ threads, warps: Math.ceil(threads / 32), code });
        for (const c of warpCalls) {
          if (c.name !== 'warp_read_lane' || c.receiver || c.args.length !== 2) continue;
          const threads = multiWarp(m.kernelOf(c.node));
          if (threads === null) continue;
          const uses = rawThreadX(m, c.args[1]);
          if (!uses.length) continue;
          let fix: { description: string; replace?: { from: SyntaxNode; text: string } } = { description: 'Use warp_lane_id() as the lane index.' };
          const direct = uses.filter((u) => u.type !== 'identifier');
          if (direct.length === uses.length && c.node.startPosition.row === c.node.endPosition.row) {
            let line = m.lineText(c.node);
            for (const u of [...direct].sort((a, b) => b.startIndex - a.startIndex)) {
              if (line === null || line.slice(u.startPosition.column, u.endPosition.column) !== u.text) {
                line = null;
                break;
              }
              line = line.slice(0, u.startPosition.column) + 'warp_lane_id()' + line.slice(u.endPosition.column);
            }
            if (line !== null) fix = { ...fix, replace: { from: c.node, text: line } };
          }
          ctx.report({ node: c.node, messageId: 'lane', data: data(threads, quote(c.args[1])), fix });
        }
        // `$if (thread_x() < 16u) { … warp op … }`: a lane selection that only matches in warp 0.
        if (!/thread_(x\s*\(\s*\)|id\s*\(\s*\)\s*\.\s*x)\s*[<>]|[<>]=?\s*thread_(x|id)\s*\(/.test(m.source.text)) return;
        const seen = new Set<number>();
        for (const c of warpCalls) {
          if (c.receiver) continue;
          const threads = multiWarp(m.kernelOf(c.node));
          if (threads === null) continue;
          for (const br of m.deviceBranchesAround(c.node)) {
            const cond = br.condition;
            if (!cond || seen.has(cond.id) || !laneRangeTest(m, cond, m.kernelOf(c.node)?.blockSize?.dims[0] ?? null)) continue;
            seen.add(cond.id);
            // Phase 2 of a two-level reduction reads per-warp partials from Shared<T> at thread_x():
            // block-scope indexing, and the first warp is the intended one (000 §3.2, §4.5).
            if (m.shared.some((s) => m.sharedAccesses(s).some((a) => br.stmt.startIndex <= a.node.startIndex && a.node.endIndex <= br.stmt.endIndex))) continue;
            ctx.report({ node: cond, messageId: 'select', data: data(threads, quote(cond)), fix: { description: 'Select lanes with warp_lane_id() (e.g. `warp_lane_id() < 16u`) so every warp of the block runs the warp-scope step.' } });
          }
        }
      },
    };
  },
});

/** `thread_x() < 16u`, `thread_x() >= 8u`, … with a constant strictly inside the warp (1..31). */
function laneRangeTest(m: LuisaModel, cond: SyntaxNode, blockX: number | null): boolean {
  const stack: SyntaxNode[] = [cond];
  while (stack.length) {
    const n = unparen(stack.pop()!)!;
    if (n.type === 'binary_expression') {
      const op = n.childForFieldName('operator')?.type ?? '';
      // DSL conditions combine Bool expressions with `&` / `|` as well.
      if (op === '&&' || op === '||' || op === '&' || op === '|') {
        stack.push(n.childForFieldName('left')!, n.childForFieldName('right')!);
        continue;
      }
      if (['<', '<=', '>', '>='].includes(op)) {
        const l = unparen(n.childForFieldName('left'));
        const r = unparen(n.childForFieldName('right'));
        const [tx, k] = l && isThreadX(l) ? [l, r] : r && isThreadX(r) ? [r, l] : [null, null];
        const v = tx ? m.constValue(k) : null;
        // In a 16×16 block, `thread_x() < 16u` holds for every thread: no lanes are selected.
        if (v !== null && v > 0 && v < 32 && (blockX === null || v < blockX)) return true;
      }
    }
  }
  return false;
}

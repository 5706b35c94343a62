import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { contains, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const BUILTIN: Record<string, string> = { '+': 'warp_active_sum', max: 'warp_active_max', min: 'warp_active_min' };
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `off <<= 1u`, `off *= 2u`, `off = off * 2u`, `off = off << 1u`. */
const doubles = (t: string, v: string): boolean => new RegExp(`^${esc(v)}\\s*(<<=\\s*1u?|\\*=\\s*2u?|=\\s*${esc(v)}\\s*(<<\\s*1u?|\\*\\s*2u?))\\s*;?$`).test(t.trim());

/** `off < warp_lane_count()` (or the pinned width as a constant): the offset runs over the whole warp. */
function boundedByWidth(m: LuisaModel, cond: SyntaxNode | null, width: number): string | null {
  const c = unparen(cond);
  if (c?.type !== 'binary_expression' || c.childForFieldName('operator')?.type !== '<') return null;
  const l = unparen(c.childForFieldName('left'));
  const r = unparen(c.childForFieldName('right'));
  if (l?.type !== 'identifier' || !r) return null;
  if (/^warp_lane_count\s*\(\s*\)$/.test(r.text) || m.constValue(r) === width) return l.text;
  return null;
}

/** The combine step `r = r + o`, `r += o`, `r = max(r, o)`, `r = min(o, r)`: the operator, or null for any other (custom) combine. */
function combineOf(stmt: SyntaxNode, r: string, o: string): string | null {
  const a = stmt.type === 'expression_statement' ? stmt.namedChildren[0] : null;
  if (a?.type !== 'assignment_expression' || a.childForFieldName('left')?.text !== r) return null;
  const op = a.childForFieldName('operator')?.type;
  const rhs = unparen(a.childForFieldName('right'));
  if (!rhs) return null;
  if (op === '+=') return rhs.text === o ? '+' : null;
  if (op !== '=') return null;
  const pair = (x: SyntaxNode | null | undefined, y: SyntaxNode | null | undefined): boolean => {
    const [p, q] = [unparen(x)?.text, unparen(y)?.text];
    return (p === r && q === o) || (p === o && q === r);
  };
  if (rhs.type === 'binary_expression' && rhs.childForFieldName('operator')?.type === '+' && pair(rhs.childForFieldName('left'), rhs.childForFieldName('right'))) return '+';
  if (rhs.type === 'call_expression') {
    const f = rhs.childForFieldName('function')?.text;
    const args = rhs.childForFieldName('arguments')?.namedChildren ?? [];
    if ((f === 'max' || f === 'min') && args.length === 2 && pair(args[0], args[1])) return f;
  }
  return null;
}

export default defineCheck({
  id: 'luisa/manual-shuffle-reduce-to-builtin',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §2.5 Shuffle-Down for Warp Reduction ("fallback pattern; prefer warp_active_sum / min / max when the operation matches the built-in"); 000 §7 rule 1',
  summary: 'Warp reduction emulated with warp_read_lane and a doubling offset instead of warp_active_sum/min/max.',
  why: 'The emulated shuffle-down takes 5 dependent warp_read_lane rounds on a 32-lane warp, while warp_active_sum/min/max is one WaveActive*/OpGroupNonUniform* instruction on DX and Vulkan and the builtin 5-step __shfl_xor_sync butterfly (one __reduce_*_sync for integers on SM 8.0+) on CUDA, with no barrier (000 §2.5, §7 rule 1).',
  messages: {
    emulated: 'Shuffle-down reduction `{{loop}}` is emulated with warp_read_lane and a doubling offset; use the built-in collective `{{result}} = {{builtin}}({{result}});` (every active lane then holds the result).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const seen = new Set<number>();
        for (const c of m.callsNamed('warp_read_lane')) {
          if (!m.inDeviceCode(c.node)) continue;
          let loop: SyntaxNode | null = c.node.parent;
          while (loop && loop.type !== 'while_statement' && loop.type !== 'for_statement' && loop.type !== 'lambda_expression') loop = loop.parent;
          if (!loop || loop.type === 'lambda_expression' || seen.has(loop.id)) continue;
          seen.add(loop.id);
          const width = m.kernelOf(loop)?.warpSize?.value ?? 32;
          const body = loop.childForFieldName('body');
          if (body?.type !== 'compound_statement') continue;
          const stmts = body.namedChildren.filter((s) => !(s.type === 'expression_statement' && s.namedChildCount === 0) && s.type !== 'comment');
          let off: string | null = null;
          if (loop.type === 'while_statement' && m.dslKind(loop) === 'dsl-while') {
            off = boundedByWidth(m, m.conditionOf(loop), width);
            if (!off || !stmts.some((s) => doubles(s.text, off!))) continue;
          } else if (loop.type === 'for_statement' && m.isRecordTimeLoop(loop)) {
            off = boundedByWidth(m, loop.childForFieldName('condition'), width);
            const init = loop.childForFieldName('initializer');
            if (!off || !init || m.constValue(init.namedChildren.find((x) => x.type === 'init_declarator')?.childForFieldName('value')) !== 1 || !doubles(loop.childForFieldName('update')?.text ?? '', off)) continue;
          } else continue;
          // The source lane is `lane + off`, directly or through a local (`UInt src_lane = lane_id + offset;`).
          const offRe = new RegExp(`\\b${esc(off)}\\b`);
          let src = unparen(c.args[1]);
          if (src?.type === 'identifier') src = unparen(m.declOf(src.text, src)?.value);
          // `min(lane + off, warp_lane_count() - 1u)`: the clamped form of the same read.
          if (src?.type === 'call_expression' && src.childForFieldName('function')?.text === 'min') src = unparen(src.childForFieldName('arguments')?.namedChildren[0]);
          if (src?.type !== 'binary_expression' || src.childForFieldName('operator')?.type !== '+' || !offRe.test(src.text)) continue;
          const result = unparen(c.args[0])?.text;
          if (!result) continue;
          // The value read, as combined: the call itself or the local it was stored in.
          const holder = c.node.parent?.type === 'init_declarator' ? c.node.parent.childForFieldName('declarator')?.text : null;
          const readAs = holder ?? c.node.text;
          let op: string | null = null;
          let combine: SyntaxNode | null = null;
          for (const s of body.descendantsOfType('expression_statement')) {
            const k = combineOf(s, result, readAs);
            if (k) { op = k; combine = s; break; }
          }
          if (!op || !combine) continue;
          // A partial reduction bounded by data (`lane_id + offset <= valid_item`) is not plain
          // conditional participation; a guard against the warp width is.
          const partial = m.deviceBranchesAround(combine).concat(m.deviceBranchesAround(c.node))
            .filter((b) => contains(body, b.stmt))
            .some((b) => !!b.condition && [...b.condition.descendantsOfType('identifier')].some((id) => id.text !== off && !m.laneDependent(id) && !/^warp_lane_count$/.test(id.text)));
          const fixups = body.descendantsOfType('if_statement').some((s) => m.isDeviceBranch(s) && contains(body, s) && !!m.conditionOf(s) && [...m.conditionOf(s)!.descendantsOfType('identifier')].some((id) => /valid|count|num|size|n_|len/i.test(id.text) && id.text !== off && id.text !== 'warp_lane_count'));
          if (partial || fixups) continue;
          const head = loop.type === 'while_statement' ? `$while ${loop.childForFieldName('condition')?.text ?? ''}` : `for (${loop.childForFieldName('initializer')?.text.replace(/;$/, '')}; ${loop.childForFieldName('condition')?.text}; ${loop.childForFieldName('update')?.text})`;
          ctx.report({ node: loop, messageId: 'emulated', data: { loop: head, result, builtin: BUILTIN[op] } });
        }
      },
    };
  },
});

import { cudaModel, type CudaFunction, type CudaModel } from '../../../src/analysis/cuda.js';
import { computeTOnlyDouble, computeTTypedef, declaredType } from '../../../src/analysis/precision-kernel.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

/** Names a Kahan / Neumaier compensation term goes by (003 §6.5 uses `kahan_c`). */
function isCompensationName(name: string): boolean {
  return name
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[_\d]+/)
    .some((w) => w === 'kahan' || w === 'comp' || w.startsWith('compensat'));
}

/** `c = (t - sum) - y`: the update that recovers the low-order bits lost by `t = sum + y` (003 §6.5). */
function isKahanUpdate(a: SyntaxNode): boolean {
  if (a.childForFieldName('operator')?.text !== '=') return false;
  const r = a.childForFieldName('right');
  if (r?.type !== 'binary_expression' || r.childForFieldName('operator')?.text !== '-') return false;
  let l = r.childForFieldName('left');
  while (l?.type === 'parenthesized_expression') l = l.namedChildren[0] ?? null;
  return l?.type === 'binary_expression' && l.childForFieldName('operator')?.text === '-';
}

function hasCompensation(fn: CudaFunction): boolean {
  for (const d of fn.body?.descendantsOfType('declaration') ?? []) {
    for (const decl of d.childrenForFieldName('declarator')) {
      const inner = decl.type === 'init_declarator' ? decl.childForFieldName('declarator') : decl;
      if (inner?.type === 'identifier' && isCompensationName(inner.text)) return true;
    }
  }
  return (fn.body?.descendantsOfType('assignment_expression') ?? []).some(isKahanUpdate);
}

/**
 * CUB/CCCL reductions combine partials as a tree, whose error grows with log n rather than n; a
 * per-thread partial sum feeding one is a short serial chain (003 §6.5 do-not-flag: CCCL `reduce`).
 */
const TREE_REDUCTION = /\b(BlockReduce|WarpReduce|DeviceReduce|DeviceSegmentedReduce|cg::reduce|cooperative_groups::reduce)\b/;

/** A loop whose trip count is a literal ≤ 8 (catalog §1.4 IN_INNER_LOOP): O(n·ε) with n ≤ 8 is nothing. */
function shortLoop(m: CudaModel, loop: SyntaxNode): boolean {
  if (loop.type !== 'for_statement') return false;
  const cond = loop.childForFieldName('condition');
  if (cond?.type !== 'binary_expression' || !/^<=?$/.test(cond.childForFieldName('operator')?.text ?? '')) return false;
  const bound = m.constValue(cond.childForFieldName('right'));
  return bound !== null && bound <= 8;
}

function analyse(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const typedef = computeTTypedef(ctx.source.root);
  // Compiled only as fp64 (datacenter path, `typedef double compute_t`): Kahan buys nothing.
  if (computeTOnlyDouble(ctx.source, typedef)) return;
  const metric = new RegExp(alternation(ctx.config.vocab.metric_kernel_names), 'i');
  const fpTypes = new Set(['float', ...ctx.config.vocab.precision_typedefs]);
  for (const fn of m.functions) {
    if (!(fn.isKernel || fn.isDevice) || !fn.body || !metric.test(fn.name)) continue;
    if (TREE_REDUCTION.test(fn.body.text) || hasCompensation(fn)) continue;
    const seen = new Set<string>();
    for (const a of fn.body.descendantsOfType('assignment_expression')) {
      const op = a.childForFieldName('operator')?.text;
      const left = a.childForFieldName('left');
      if ((op !== '+=' && op !== '-=') || left?.type !== 'identifier' || seen.has(left.text)) continue;
      const decl = declaredType(fn, left.text);
      if (!decl || decl.pointer || !fpTypes.has(decl.type.replace(/^const\s+/, ''))) continue;
      const loop = m.loopOf(a);
      if (!loop || !fn.body || loop.startIndex < fn.body.startIndex || shortLoop(m, loop)) continue;
      // The accumulator must outlive the loop: a local declared inside the body restarts every iteration.
      if (declaredInside(left.text, loop)) continue;
      seen.add(left.text);
      ctx.report({
        node: a,
        messageId: 'plainSum',
        data: { code: oneLine(a.text), acc: left.text, type: decl.type, kernel: fn.name },
        fix: {
          description: `Carry a compensation term: \`${decl.type} y = v - c; ${decl.type} t = ${left.text} + y; c = (t - ${left.text}) - y; ${left.text} = t;\` (4 extra FLOPs per step), selected when plan.compensation is KAHAN.`,
        },
      });
    }
  }
}

function declaredInside(name: string, loop: SyntaxNode): boolean {
  for (const d of loop.descendantsOfType('declaration')) {
    for (const decl of d.childrenForFieldName('declarator')) {
      const inner = decl.type === 'init_declarator' ? decl.childForFieldName('declarator') : decl;
      if (inner?.type === 'identifier' && inner.text === name) return true;
    }
  }
  return false;
}

function oneLine(t: string): string {
  const s = t.replace(/\s+/g, ' ').trim();
  return s.length > 70 ? `${s.slice(0, 67)}…` : s;
}

export default defineCheck({
  id: 'precision/missing-kahan',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['nvrtc-in-python', 'cuda'],
  citation:
    '003 §6.5 Kahan Summation for fp32 Accumulation; 003 §6.2 Mixed Precision Strategy (METRIC: fp32 with Kahan compensation); 003 §6.6 ("Kahan compensation for METRIC accumulations when plan.compensation is KAHAN")',
  summary: 'METRIC kernel sums in compute_t/float with a plain += loop and no Kahan compensation.',
  why: 'A plain fp32 sum has O(n·ε) error where Kahan compensation keeps it O(ε) for 4 extra FLOPs per step (003 §6.5), and even compensated fp32 reaches ~8e-4 error at 1e6-magnitude coordinates (003 §6.4).',
  messages: {
    plainSum:
      'METRIC kernel {{kernel}} accumulates in {{type}} (possibly fp32) with a plain += loop (`{{code}}`); use Kahan compensation when plan.compensation is KAHAN.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

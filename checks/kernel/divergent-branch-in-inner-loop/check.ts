import { cudaModel, type CudaFunction, type CudaModel } from '../../../src/analysis/cuda.js';
import { pythonLaunches } from '../../../src/analysis/pylaunch.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { constantBlockOf, uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import type { Source } from '../../../src/sources/types.js';

const ident = /\b[A-Za-z_]\w*\b/g;

const JUMPS = ['break_statement', 'continue_statement', 'return_statement', 'goto_statement'];

/** Statements of an arm: a compound statement's children, or the single statement. A jump (`continue;`,
 * `break;`, `return;`) ends the lane's iteration rather than adding work, so it does not count. */
function statementsOf(arm: SyntaxNode | null): SyntaxNode[] {
  if (!arm) return [];
  const st = arm.type === 'compound_statement' ? arm.namedChildren.filter((c) => c.type !== 'comment') : [arm];
  return st.filter((c) => !JUMPS.includes(c.type) || (c.type === 'return_statement' && c.namedChildren.some((r) => r.type === 'call_expression')));
}

/** Names an arm assigns (`x = ...`, `x += ...`, `++x`) anywhere inside it. */
function assignedIn(arm: SyntaxNode | null): Set<string> {
  const out = new Set<string>();
  for (const a of arm?.descendantsOfType(['assignment_expression', 'update_expression']) ?? []) {
    const name = (a.childForFieldName('left') ?? a.childForFieldName('argument'))?.text.match(/^[A-Za-z_]\w*$/)?.[0];
    if (name) out.add(name);
  }
  return out;
}

/**
 * A one-shot flag: the condition tests a plain local (`!check`, `first`, `state == 0`) that one arm sets to a
 * literal at its top level while the other arm never writes it. The branch flips once per thread (a first-
 * iteration set-up), so it is not paid on every iteration; peeling the first iteration is the only rewrite.
 */
function oneShotFlag(cond: SyntaxNode, thenArm: SyntaxNode | null, elseArm: SyntaxNode | null): boolean {
  const t = cond.text.replace(/^\((.*)\)$/s, '$1').trim();
  const v = /^!?\s*([A-Za-z_]\w*)$/.exec(t)?.[1] ?? /^([A-Za-z_]\w*)\s*[!=]=\s*(?:-?\d+|true|false|nullptr|NULL)$/.exec(t)?.[1];
  if (!v) return false;
  const setsLiteral = (arm: SyntaxNode | null) =>
    statementsOf(arm).some((s) => {
      const e = s.type === 'expression_statement' ? s.namedChildren[0] : null;
      return e?.type === 'assignment_expression' && e.childForFieldName('operator')?.text === '=' && e.childForFieldName('left')?.text === v && /^(-?\d+|true|false|nullptr|NULL)$/.test(e.childForFieldName('right')?.text ?? '');
    });
  return (setsLiteral(thenArm) && !assignedIn(elseArm).has(v)) || (setsLiteral(elseArm) && !assignedIn(thenArm).has(v));
}

const COMPARE = new Set(['<', '<=', '>', '>=']);
/** Monotonic in the thread index, so consecutive lanes stay ordered; `%` and `&` wrap inside a warp (`lane < 16` splits every warp). */
const INDEX_OPS = new Set(['+', '-', '*', '/', '<<', '>>']);
/** Helpers that return the calling thread's own index (`thread::get_thread_id_flat<int>()`, `lane_id()`). */
const INDEX_CALL = /(thread_?id|lane_?id|global_?id|thread_?rank|thread_?index)\w*$/i;

/**
 * `e` is index arithmetic: thread, block and loop indices combined with uniform values, never a value loaded
 * from memory (`kind[row]`, `*p`) or returned by a data-dependent call. Locals are followed to their
 * definitions in `body` (a few levels deep).
 */
function indexArithmetic(e: SyntaxNode | null, body: SyntaxNode, depth = 0): boolean {
  if (!e || depth > 4) return false;
  switch (e.type) {
    case 'number_literal':
    case 'sizeof_expression':
      return true;
    case 'parenthesized_expression':
    case 'cast_expression':
      return indexArithmetic(e.namedChildren[e.namedChildren.length - 1] ?? null, body, depth);
    case 'field_expression':
      return /^(threadIdx|blockIdx|blockDim|gridDim)$/.test(e.childForFieldName('argument')?.text ?? '');
    case 'binary_expression':
      return INDEX_OPS.has(e.childForFieldName('operator')?.text ?? '') && indexArithmetic(e.childForFieldName('left'), body, depth) && indexArithmetic(e.childForFieldName('right'), body, depth);
    case 'call_expression': {
      const fn = e.childForFieldName('function');
      const name = fn?.descendantsOfType(['identifier', 'field_identifier']).pop()?.text ?? fn?.text ?? '';
      return INDEX_CALL.test(name) && (e.childForFieldName('arguments')?.namedChildCount ?? 0) === 0;
    }
    case 'identifier': {
      const defs: SyntaxNode[] = [];
      for (const d of body.descendantsOfType('init_declarator')) if (d.childForFieldName('declarator')?.text === e.text) defs.push(d.childForFieldName('value')!);
      for (const a of body.descendantsOfType('assignment_expression')) if (a.childForFieldName('left')?.text === e.text) defs.push(a.childForFieldName('right')!);
      // A parameter or a name the body never defines is uniform or external; the uniformity analysis decided it.
      return defs.every((v) => v && (v.type === 'initializer_list' ? false : indexArithmetic(v, body, depth + 1)));
    }
    default:
      return false;
  }
}

/**
 * A bounds or tail guard: a thread index compared with a warp-uniform bound (`i2 < n2`, `col >= width`),
 * possibly several joined by `&&`. Consecutive lanes hold consecutive indices, so the comparison splits only
 * the warp that straddles the bound, once per boundary: not the per-iteration serialisation this rule is about.
 */
function boundsGuard(cond: SyntaxNode | null, body: SyntaxNode, u: { isWarpUniform(e: SyntaxNode): boolean }): boolean {
  let c = cond;
  while (c && (c.type === 'parenthesized_expression' || c.type === 'condition_clause')) c = c.namedChildren[c.namedChildren.length - 1] ?? null;
  if (c?.type !== 'binary_expression') return false;
  const op = c.childForFieldName('operator')?.text ?? '';
  const l = c.childForFieldName('left');
  const r = c.childForFieldName('right');
  if (!l || !r) return false;
  if (op === '&&') return (boundsGuard(l, body, u) || u.isWarpUniform(l)) && (boundsGuard(r, body, u) || u.isWarpUniform(r)) && !(u.isWarpUniform(l) && u.isWarpUniform(r));
  if (!COMPARE.has(op)) return false;
  return (u.isWarpUniform(r) && indexArithmetic(l, body)) || (u.isWarpUniform(l) && indexArithmetic(r, body));
}

/** A heavy arm costs a serialized pass: ≥ 2 statements, or any call or loop (catalog detect). */
function heavy(arm: SyntaxNode | null): boolean {
  const st = statementsOf(arm);
  if (st.length >= 2) return true;
  return st.some((s) => s.descendantsOfType(['call_expression', 'for_statement', 'while_statement', 'do_statement', 'for_range_loop']).length > 0 || ['for_statement', 'while_statement', 'do_statement', 'if_statement'].includes(s.type));
}

/** The arms of an `else` side: for an `else if` chain, each consequence and the final `else`, so a chain of
 * light arms (`else if (cell < n) { depth--; continue; }`) weighs as light as each of them. */
function elseArms(alt: SyntaxNode | null): (SyntaxNode | null)[] {
  const out: (SyntaxNode | null)[] = [];
  while (alt?.type === 'if_statement') {
    out.push(alt.childForFieldName('consequence'));
    const next = alt.childForFieldName('alternative');
    alt = next ? (next.type === 'else_clause' ? next.namedChildren.find((c) => c.type !== 'comment') ?? null : next) : null;
    if (!alt) return out;
  }
  out.push(alt);
  return out;
}

/** A loop whose bound is a literal (or `#define`) ≤ 8 is fully unrolled and runs a handful of times: not an inner loop (§1.3). */
function smallConstantLoop(loop: SyntaxNode, m: CudaModel): boolean {
  if (loop.type !== 'for_statement') return false;
  let cond = loop.childForFieldName('condition');
  while (cond && (cond.type === 'parenthesized_expression' || cond.type === 'expression_statement')) cond = cond.namedChildren[0] ?? null;
  if (cond?.type !== 'binary_expression' || !['<', '<='].includes(cond.childForFieldName('operator')?.text ?? '')) return false;
  const v = m.constValue(cond.childForFieldName('right'));
  return v !== null && v <= 8;
}

/** Names the loop advances or assigns: a condition on none of them is the same on every iteration. */
function loopVaryingNames(loop: SyntaxNode): Set<string> {
  const out = new Set<string>();
  const init = loop.childForFieldName('initializer');
  for (const d of init?.descendantsOfType('identifier') ?? []) if (d.parent?.type === 'init_declarator' && d.parent.childForFieldName('declarator')?.id === d.id) out.add(d.text);
  for (const u of [loop.childForFieldName('update'), loop.childForFieldName('condition')]) for (const t of u?.text.match(ident) ?? []) out.add(t);
  if (loop.type === 'for_range_loop') for (const t of loop.childForFieldName('declarator')?.text.match(ident) ?? []) out.add(t);
  const body = loop.childForFieldName('body');
  for (const a of body?.descendantsOfType(['assignment_expression', 'update_expression', 'init_declarator']) ?? []) {
    const lhs = a.childForFieldName('left') ?? a.childForFieldName('argument') ?? a.childForFieldName('declarator');
    const name = lhs?.text.match(/^[A-Za-z_]\w*/)?.[0];
    if (name) out.add(name);
  }
  return out;
}

function inPythonLoop(n: SyntaxNode): boolean {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'for_statement' || p.type === 'while_statement') return true;
    if (p.type === 'function_definition') return false;
  }
  return false;
}

/** Launched inside a host loop (over geometry types or `_WORK_BINS`): the kernel is already dispatched per type or bin. */
function dispatchedPerBin(source: Source, m: CudaModel, f: CudaFunction, config: Parameters<typeof pythonLaunches.compute>[1]): boolean {
  if (m.launches.some((l) => l.kernel === f.name && m.loopOf(l.node))) return true;
  if (!source.parent) return false;
  return pythonLaunches.compute(source.parent, config).launches.some((l) => l.cudaName === f.name && inPythonLoop(l.node));
}

export default defineCheck({
  id: 'kernel/divergent-branch-in-inner-loop',
  pass: 3,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §8.5 Branch Divergence in Inner Loops; 003 §5.3 Warp Divergence Minimization; 003 §9 Pass 3 bullet 5; 004 §H3.1 Causes of Warp Divergence; 004 §H3.2 Techniques to Avoid Warp Divergence (Restructure conditions; Separate into multiple kernels)',
  summary: 'Thread-dependent if/else or switch with non-trivial arms inside a kernel loop.',
  why: 'A warp runs both sides of a thread-dependent branch one after the other, so a 50/50 split halves warp efficiency (~2× slower) and every divergent branch costs about 32 cycles on Kepler and 26 on Maxwell, paid again on each loop iteration (003 §5.3, §8.5; 004 §H3.1).',
  messages: {
    divergent: 'Thread-dependent {{what}} `{{cond}}` inside an inner loop: lanes of a warp take different paths and both paths run serially on every iteration{{hoist}}{{figure}}.',
  },
  fix: 'judgment',
  create(ctx) {
    const visit = (n: SyntaxNode) => {
      const m = ctx.get(cudaModel);
      const f = m.functionOf(n);
      if (!f || !(f.isKernel || f.isDevice)) return;
      const isIf = n.type === 'if_statement';
      // An `else if` is reported once, at the head of the chain.
      if (isIf && n.parent?.type === 'else_clause') return;
      const cond = n.childForFieldName('condition');
      if (!cond) return;
      if (isIf) {
        const alt = n.childForFieldName('alternative');
        if (!alt) return;
        const altBody = alt.type === 'else_clause' ? alt.namedChildren.find((c) => c.type !== 'comment') ?? null : alt;
        if (!heavy(n.childForFieldName('consequence')) || !elseArms(altBody).some(heavy)) return;
        if (oneShotFlag(cond, n.childForFieldName('consequence'), altBody)) return;
      } else {
        const body = n.childForFieldName('body');
        const cases = body?.namedChildren.filter((c) => c.type === 'case_statement') ?? [];
        const heavyCases = cases.filter((c) => {
          const st = c.namedChildren.filter((s) => s.type !== 'comment' && s.id !== c.childForFieldName('value')?.id && s.type !== 'break_statement');
          return st.length >= 2 || st.some((s) => s.descendantsOfType('call_expression').length > 0 || s.type === 'call_expression');
        });
        if (heavyCases.length < 2) return;
      }
      const loops = m.loopsOf(n);
      if (!loops.length || smallConstantLoop(loops[0]!, m)) return;
      const u = ctx.get(uniformity);
      if (u.level(cond) !== 'thread') return;
      if (f.body && boundsGuard(cond, f.body, u)) return;
      if (dispatchedPerBin(ctx.source, m, f, ctx.config)) return;
      const varying = loopVaryingNames(loops[0]!);
      const invariant = !(cond.text.match(ident) ?? []).some((t) => varying.has(t));
      const b = constantBlockOf(ctx.source, ctx.config, f);
      const threads = b ? b[0] * b[1] * b[2] : 0;
      ctx.report({
        node: cond,
        messageId: 'divergent',
        data: {
          what: isIf ? 'if/else' : 'switch',
          cond: quoteCode(cond.text.replace(/^\((.*)\)$/s, '$1'), 60),
          hoist: invariant ? ' (the condition is loop-invariant — hoist it and duplicate the loop, or launch one kernel per case)' : '',
          figure: b ? `; in each of the ${Math.ceil(threads / 32)} warps of the ${threads}-thread blocks it is launched with, a 50/50 split halves warp efficiency (~2× slower)` : '',
        },
        fix: { description: 'Sort or partition items by the condition and launch one kernel per case; hoist a loop-invariant condition out of the loop; or predicate when both paths are cheap.' },
      });
    };
    return { if_statement: visit, switch_statement: visit };
  },
});

import { cudaModel, type CudaFunction } from '../../../src/analysis/cuda.js';
import { castOf, computeTTypedef, declaredType, isExactArithmeticHelper, lineRewritable, unparenC } from '../../../src/analysis/precision-kernel.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

const FP_TYPES = /^(double|float|compute_t|__FMT_\w+__|half|__half)$/;
// `::sqrt` / `std::exp` are the same fp64 math as the unqualified call.
const MATH_CALL = /^(?:(?:std)?::)?(sqrt|fabs|hypot|sin|cos|tan|atan2?|exp|log|pow|fma|fmin|fmax|floor|ceil|rsqrt|cbrt)f?$/;
const ARITH = new Set(['+', '-', '*', '/']);
const AUG = /^[-+*/]=$/;
const LOW_PRECISION_RETURN = /^(float|half|__half|__nv_bfloat16|nv_bfloat16|bfloat16)$/;

/**
 * `__device__ double atomicAddDouble(double* address, double val)`: the pre-sm_60 atomicCAS loop on
 * the bits of a `double*` updates fp64 storage; its type is the storage's, not a compute choice
 * (003 §7.1 keeps storage fp64). A function that merely ends in an atomic still computes.
 */
function isFp64AtomicWrapper(fn: CudaFunction): boolean {
  if (fn.isKernel || !fn.params.some((p) => /^(const\s+)?double$/.test(p.childForFieldName('type')?.text ?? '') && /\*/.test(p.childForFieldName('declarator')?.text ?? ''))) return false;
  const callees = new Set((fn.body?.descendantsOfType('call_expression') ?? []).map((c) => c.childForFieldName('function')?.text ?? ''));
  return callees.has('atomicCAS') && (callees.has('__double_as_longlong') || callees.has('__longlong_as_double'));
}

/**
 * The fp64 member of a type-dispatched overload set — `double sm_exp(double)` beside
 * `float sm_exp(float)`, or `template <> double sqrt_(double)`: the caller's type picks the
 * precision, so the helper is not where double is hard-coded.
 */
function isFp64Overload(fn: CudaFunction, all: readonly CudaFunction[]): boolean {
  const tpl = fn.node.parent?.type === 'template_declaration' ? fn.node.parent : null;
  if (tpl && /^<\s*>$/.test(tpl.childForFieldName('parameters')?.text ?? '')) return true;
  return all.some((g) => g !== fn && g.name === fn.name && LOW_PRECISION_RETURN.test(g.node.childForFieldName('type')?.text ?? ''));
}

/** Does `e` involve a floating-point value of `fn` (a fp-typed name, a float literal or a math call)? */
function floaty(fn: CudaFunction, e: SyntaxNode, types: Map<string, boolean>): boolean {
  const stack = [e];
  while (stack.length) {
    const n = stack.pop()!;
    if (n.type === 'number_literal' && /^[\d.]*\.[\d]*|e[-+]?\d|^\d+f$/i.test(n.text) && !/^0x/i.test(n.text)) return true;
    if (n.type === 'identifier') {
      let fp = types.get(n.text);
      if (fp === undefined) types.set(n.text, (fp = FP_TYPES.test(declaredType(fn, n.text)?.type.replace(/^const\s+/, '') ?? '')));
      if (fp) return true;
    }
    if (n.type === 'call_expression' && MATH_CALL.test(n.childForFieldName('function')?.text ?? '')) return true;
    if (n.type === 'cast_expression' && FP_TYPES.test(castOf(n)?.type ?? '')) return true;
    stack.push(...n.namedChildren);
  }
  return false;
}

/** Kernels that only count, index or set flags (003 §6.3) do no floating-point arithmetic. */
function hasFpArithmetic(fn: CudaFunction): boolean {
  const types = new Map<string, boolean>();
  for (const b of fn.body?.descendantsOfType(['binary_expression', 'assignment_expression']) ?? []) {
    const op = b.childForFieldName('operator')?.text ?? '';
    if (b.type === 'binary_expression' ? ARITH.has(op) && floaty(fn, b, types) : AUG.test(op) && floaty(fn, b, types)) return true;
  }
  return (fn.body?.descendantsOfType('call_expression') ?? []).some((c) => MATH_CALL.test(c.childForFieldName('function')?.text ?? ''));
}

/** `out[i] = (double)r`, `*p = (double)r`, `atomicAdd(&out[k], (double)v)`: the fp64 write-back (003 §7.1). */
function isWriteBack(cast: SyntaxNode): boolean {
  let top = cast;
  while (top.parent?.type === 'parenthesized_expression') top = top.parent;
  const p = top.parent;
  if (p?.type === 'assignment_expression' && p.childForFieldName('right')?.id === top.id) {
    const left = p.childForFieldName('left');
    return left?.type === 'subscript_expression' || left?.type === 'pointer_expression' || left?.type === 'field_expression';
  }
  if (p?.type === 'argument_list') return /^atomic(Add|Exch)/.test(p.parent?.childForFieldName('function')?.text ?? '');
  // `return (double)acc;` in a `double` helper is reported once, at the helper's return type.
  return p?.type === 'return_statement';
}

function analyse(ctx: CheckContext): void {
  if (ctx.source.language === 'cuda' && !ctx.config.precision.requireComputeT) return;
  const m = ctx.get(cudaModel);
  const typedef = computeTTypedef(ctx.source.root);
  const constructive = new RegExp(alternation(ctx.config.vocab.constructive_kernel_names), 'i');
  const file = ctx.source.path.split('/').pop() ?? '';
  if (constructive.test(file)) return;
  const msg = typedef === null ? 'noTypedef' : 'hardcoded';
  for (const fn of m.functions) {
    if (!(fn.isKernel || fn.isDevice) || !fn.body || constructive.test(fn.name) || !hasFpArithmetic(fn) || isFp64AtomicWrapper(fn) || (!fn.isKernel && isExactArithmeticHelper(fn.name, fn.body))) continue;
    const reported: SyntaxNode[] = [];
    const retType = fn.node.childForFieldName('type');
    if (!fn.isKernel && retType?.text === 'double' && !isFp64Overload(fn, m.functions) && fn.node.childForFieldName('declarator')?.type === 'function_declarator') {
      ctx.report({ node: retType, messageId: msg, data: { code: `double ${fn.name}(…)`, fn: fn.name }, fix: { description: 'Return `compute_t` from the helper; callers that store the result widen it back to double.' } });
    }
    for (const decl of fn.body.descendantsOfType('declaration')) {
      const type = decl.childForFieldName('type');
      if (type?.text !== 'double') continue;
      const declarators = decl.childrenForFieldName('declarator');
      // `double* p = …` walks fp64 storage (003 §7.1): only scalar locals compute.
      if (declarators.every((d) => (d.type === 'init_declarator' ? d.childForFieldName('declarator') : d)?.type !== 'identifier')) continue;
      reported.push(decl);
      ctx.report({ node: decl, messageId: msg, data: { code: oneLine(decl.text), fn: fn.name }, fix: declFix(ctx, decl, type, typedef !== null) });
    }
    for (const c of fn.body.descendantsOfType(['cast_expression', 'call_expression'])) {
      const cast = castOf(c);
      if (cast?.type !== 'double' || isWriteBack(c) || reported.some((r) => r.startIndex <= c.startIndex && r.endIndex >= c.endIndex)) continue;
      ctx.report({ node: c, messageId: msg, data: { code: oneLine(c.text), fn: fn.name }, fix: { description: 'Cast to `compute_t` instead; keep `double` only for storage reads and the final write-back.' } });
    }
  }
}

function oneLine(t: string): string {
  const s = t.replace(/\s+/g, ' ').trim();
  return s.length > 70 ? `${s.slice(0, 67)}…` : s;
}

/** Catalog rewrite `double t = …` → `compute_t t = …`: safe-one-line only when the template declares compute_t. */
function declFix(ctx: CheckContext, decl: SyntaxNode, type: SyntaxNode, hasTypedef: boolean): FixSpec {
  const description = 'Declare the local as `compute_t` so the fp32 variant of the template computes in fp32.';
  if (!hasTypedef) return { description: `${description} The template has no \`typedef {compute_type} compute_t;\` yet: add it first.` };
  const line = ctx.linesOf(decl);
  if (!lineRewritable(ctx, decl, line) || unparenC(decl)?.text.includes('__FMT_')) return { description };
  const col = type.startPosition.column;
  const text = line.slice(0, col) + 'compute_t' + line.slice(col + type.text.length);
  return { description, replace: { from: decl, text } };
}

export default defineCheck({
  id: 'precision/hardcoded-double',
  pass: 4,
  severity: 'medium-high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['nvrtc-in-python', 'cuda'],
  citation:
    '003 §6.6 Review Checklist for Precision ("Kernel source uses compute_t typedef, not hardcoded double"); 003 §7.1 Template Specialization for Precision Dispatch; 003 §0 (critical implication: fp64 at 1/64 rate on RTX 3090/4090); 003 §6.1 FP64:FP32 Throughput Ratios',
  summary: 'Kernel arithmetic hard-coded to double instead of the compute_t precision typedef.',
  why: 'On RTX 3090/4090 fp64 runs at 1:64 of fp32 (~0.6 vs 35.6 TFLOPS on a 3090), so a kernel that computes in double runs its math at ~1.6 % of the fp32 rate (003 §6.1, §10).',
  messages: {
    hardcoded:
      'Kernel arithmetic is hard-coded to double (`{{code}}` in {{fn}}); on RTX 3090/4090 fp64 runs at 1/64 of fp32. Use the compute_t typedef from the precision template.',
    noTypedef:
      'Kernel arithmetic is hard-coded to double (`{{code}}` in {{fn}}) and the template declares no compute_t typedef; on RTX 3090/4090 fp64 runs at 1/64 of fp32. Use the compute_t typedef from the precision template.',
  },
  fix: 'safe',
  group: 'function',
  needsProjectVocabulary: true,
  // A `.cu` file without the vocabulary is reviewed only when the project opts in (`precision.require_compute_t`).
  vocabularyOptIn: (config, language) => language === 'cuda' && config.precision.requireComputeT,
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

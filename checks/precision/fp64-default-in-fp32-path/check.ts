import { FP32_DTYPE_MENTION, pyDtypeWidth, pyStringValue } from '../../../src/analysis/precision-dispatch.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { calleePath, commentsAround, lastName, oneLine, pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/**
 * CuPy constructors whose dtype defaults to float64, with the position of their `dtype` argument.
 * `arange` and `full` take their dtype from the values, so they are float64 only when a value is a float.
 */
const DEFAULT_FP64: Record<string, number> = { zeros: 1, ones: 1, empty: 1, linspace: 5, logspace: 6, eye: 3, identity: 1, full: 2, arange: 3 };
/** CuPy calls that take a dtype (position of the positional `dtype`), for an explicit fp64 choice. */
const DTYPE_POS: Record<string, number> = {
  ...DEFAULT_FP64, indices: 1, asarray: 1, array: 1, ascontiguousarray: 1, zeros_like: 1, ones_like: 1, empty_like: 1, full_like: 2,
};
const FROM_VALUES = new Set(['arange', 'full']);
const UPLOADS = new Set(['asarray', 'array']);
/** A condition that picks a precision: the code under it chose fp64 on purpose. */
const FP64_CONDITION = /float64|complex128|\bdouble\b|fp64|\bx64\b|==\s*['"][dD]['"]/i;
/** Comments that document why a buffer is fp64 (accumulation, exactness, conditioning). */
const FP64_COMMENT = /fp64|float64|complex128|double|precision|accumulat|exact|overflow|cancell|ill-?conditioned|stabil/i;
/** Names of accumulators, which are often fp64 on purpose. */
const ACCUMULATOR = /(^|_)(acc|accum\w*|sums?|totals?|kahan|moments?|hist\w*)($|_)/i;
const COMPUTE_DTYPE_PARAM = /^(compute_dtype|compute_type|precision|precision_dtype)$/;
const NUMBA_CUDA_JIT = /(^|\.)cuda\.jit\b|\bjit\([^)]*target\s*=\s*['"]cuda/;
const NUMBA_FP64_CONST = /^(math|cmath|np|numpy)\.(pi|e|tau)$/;
const NARROWING_CALL = /(^|\.)(float32|complex64|single|csingle)$/;

/** A comment next to the statement says why it is fp64 (rule ids in suppressions and markers do not count). */
function documented(stmt: SyntaxNode): boolean {
  return commentsAround(stmt).some((t) => FP64_COMMENT.test(t.replace(/\b[\w-]+\/[\w-]+\b/g, '')));
}

function isComplexLiteral(n: SyntaxNode): boolean {
  return (n.type === 'integer' || n.type === 'float') && /[jJ]$/.test(n.text);
}

function isDocstring(n: SyntaxNode): boolean {
  return n.type === 'string' && n.parent?.type === 'expression_statement' && n.parent.namedChildCount === 1;
}

/** A string or name in a dtype position: `dtype='f'`, `x.astype('F')`, `cp.zeros(n, 'f')`. */
function inDtypePosition(n: SyntaxNode): boolean {
  const p = n.parent;
  if (p?.type === 'keyword_argument') return p.childForFieldName('name')?.text === 'dtype';
  if (p?.type !== 'argument_list' || p.parent?.type !== 'call') return false;
  const name = lastName(calleePath(p.parent.childForFieldName('function'))) ?? '';
  return name === 'astype' || (name in DTYPE_POS && p.namedChildren.indexOf(n) === DTYPE_POS[name]);
}

/** First float32 / complex64 dtype named in code (not comments or docstrings) under `scope`. */
function fp32Mention(scope: SyntaxNode): SyntaxNode | null {
  for (const n of scope.descendantsOfType(['attribute', 'identifier', 'string'])) {
    if (n.type === 'string') {
      if (isDocstring(n) || pyDtypeWidth(n) !== 'fp32') continue;
      // One-letter codes ('f', 'F') are also memory orders and modes: only in a dtype position.
      if ((pyStringValue(n) ?? '').length > 1 || inDtypePosition(n)) return n;
      continue;
    }
    if (n.type === 'identifier') {
      if (n.parent?.type !== 'attribute' && /^(float32|complex64)$/.test(n.text)) return n;
      continue;
    }
    if (pyDtypeWidth(n) === 'fp32') return n;
  }
  return null;
}

/**
 * A dtype taken from the input: `dtype=x.dtype`, `astype(x.real.dtype)` where `x` is a parameter not
 * rebound before that point, `promote_types(...)`, `result_type(...)`: the function follows its input's
 * precision, so float32 input stays float32. The dtype of a local (integer labels, a buffer the function
 * itself made fp64) says nothing about the input.
 */
function derivedDtype(fn: SyntaxNode, m: PyModel): SyntaxNode | null {
  const params = paramNames(fn);
  for (const c of fn.descendantsOfType('call')) {
    const name = lastName(calleePath(c.childForFieldName('function'))) ?? '';
    if (name === 'promote_types' || name === 'result_type') return c;
    const { positional, keywords } = pyArgs(c);
    const d = keywords.get('dtype') ?? (name === 'astype' ? positional[0] : undefined);
    const recv = d ? /^(\w+)(?:\.real|\.imag)?\.dtype$/.exec(d.text)?.[1] : undefined;
    if (!recv || !params.has(recv)) continue;
    if ((m.assignmentsIn(fn).get(recv) ?? []).some((a) => a.node.startIndex < c.startIndex)) continue;
    return c;
  }
  return null;
}

/** A shape made of `x.ndim` and small integers: a transform matrix or a per-axis vector, not bulk data. */
function tinyShape(shape: SyntaxNode | undefined): boolean {
  const u = unparen(shape);
  if (!u) return false;
  const parts = u.type === 'tuple' || u.type === 'list' ? u.namedChildren : [u];
  return parts.length > 0 && parts.every((p) => /^(?:[\w.]+\.ndim|ndim|\d)(?:\s*[-+]\s*\d)?$/.test(p.text.trim()) || (p.type === 'integer' && Number(p.text) <= 16));
}

function statementOf(n: SyntaxNode): SyntaxNode {
  let s = n;
  while (s.parent && !/_statement$|^(assignment|augmented_assignment)$/.test(s.type) && s.parent.type !== 'block' && s.parent.type !== 'module') s = s.parent;
  while (s.parent && s.parent.type !== 'block' && s.parent.type !== 'module') s = s.parent;
  return s;
}

/** Under an `if` that tests for fp64 (`if x.dtype == cp.float64:`), or in the `else` of a float32 test. */
function deliberateBranch(n: SyntaxNode, scope: SyntaxNode): boolean {
  for (let p = n.parent; p && p.id !== scope.id; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause' || p.type === 'conditional_expression') {
      const cond = p.type === 'conditional_expression' ? p.namedChildren[1] : p.childForFieldName('condition');
      if (cond && FP64_CONDITION.test(cond.text)) return true;
    }
    if (p.type === 'else_clause' || p.type === 'elif_clause') {
      const cond = p.parent?.childForFieldName('condition');
      if (cond && (FP64_CONDITION.test(cond.text) || FP32_DTYPE_MENTION.test(cond.text))) return true;
    }
  }
  return false;
}

/** `cp.linspace(...).astype(cp.float32)`, `cp.float32(cp.pi * x)`: the value is narrowed on the spot. */
function narrowedAtOnce(n: SyntaxNode): boolean {
  let top = n;
  while (top.parent && (top.parent.type === 'parenthesized_expression' || top.parent.type === 'binary_operator' || top.parent.type === 'unary_operator')) top = top.parent;
  const p = top.parent;
  if (p?.type === 'attribute' && p.childForFieldName('attribute')?.text === 'astype' && p.parent?.type === 'call') {
    const arg = pyArgs(p.parent).positional[0] ?? pyArgs(p.parent).keywords.get('dtype');
    return pyDtypeWidth(arg) === 'fp32' || !!arg && /dtype/.test(arg.text);
  }
  if (p?.type === 'argument_list' && p.parent?.type === 'call') return NARROWING_CALL.test(calleePath(p.parent.childForFieldName('function')) ?? '');
  return false;
}

/** Float-valued arguments of `arange` / `full`: a float literal, a true division, `cp.pi`. */
function floatValued(args: SyntaxNode[]): boolean {
  return args.some((a) => a.type === 'float' || a.descendantsOfType(['float']).length > 0 || a.descendantsOfType('binary_operator').some((b) => b.children.some((c) => c.type === '/')) || /\.(pi|e)\b/.test(a.text));
}

/** Python float values in a literal sequence: `(0.5, 0.25)`, `[[1.0, 0.0], [0.0, 1.0]]`. */
function floatSequence(n: SyntaxNode | null | undefined): boolean {
  const u = unparen(n);
  if (!u || (u.type !== 'tuple' && u.type !== 'list')) return false;
  return u.descendantsOfType('float').length > 0 && u.descendantsOfType(['identifier', 'call']).length === 0;
}

function cupyCall(m: PyModel, call: SyntaxNode): string | null {
  const path = calleePath(call.childForFieldName('function'));
  if (!path) return null;
  const parts = path.split('.');
  if (parts.length !== 2) return null;
  const mod = parts[0] === 'cupy' ? 'cupy' : m.moduleOf(parts[0]);
  return mod === 'cupy' ? parts[1] : null;
}

function functionOf(n: SyntaxNode): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition') return p;
  return null;
}

function paramNames(fn: SyntaxNode): Map<string, SyntaxNode | null> {
  const out = new Map<string, SyntaxNode | null>();
  for (const p of fn.childForFieldName('parameters')?.namedChildren ?? []) {
    if (p.type === 'identifier') out.set(p.text, null);
    else if (p.type === 'default_parameter' || p.type === 'typed_default_parameter') {
      const name = p.childForFieldName('name')?.text;
      if (name) out.set(name, p.childForFieldName('value'));
    } else if (p.type === 'typed_parameter') {
      const name = p.namedChildren.find((c) => c.type === 'identifier')?.text;
      if (name) out.set(name, null);
    }
  }
  return out;
}

/** Is `recv` a host (NumPy) value: spelled `np.…`, or a name bound in the scope from a NumPy call or a D→H read? */
function hostValue(m: PyModel, recv: SyntaxNode, scope: SyntaxNode): boolean {
  const u = unparen(recv);
  if (!u) return false;
  if (u.type === 'call' && (m.isNumpyPath(calleePath(u.childForFieldName('function'))) || /(^|\.)(get|asnumpy|tolist)$/.test(calleePath(u.childForFieldName('function')) ?? ''))) return true;
  if (u.type !== 'identifier') return false;
  const assigns = m.assignmentsIn(scope).get(u.text) ?? [];
  return assigns.length > 0 && assigns.every((a) => {
    const v = unparen(a.value);
    const p = v?.type === 'call' ? calleePath(v.childForFieldName('function')) : null;
    return !!p && (m.isNumpyPath(p) || /(^|\.)(get|asnumpy|tolist)$/.test(p));
  });
}

interface Candidate {
  node: SyntaxNode;
  messageId: 'defaulted' | 'explicit' | 'astype';
  code: string;
  dtype: string;
}

function analysePython(ctx: CheckContext, m: PyModel): void {
  const root = m.source.root;
  const planNames = new Set(ctx.config.vocab.precision_plan_names);
  const evidenceMemo = new Map<number, SyntaxNode | null>();
  const evidenceOf = (fn: SyntaxNode): SyntaxNode | null => {
    if (!evidenceMemo.has(fn.id)) evidenceMemo.set(fn.id, fp32Mention(fn) ?? derivedDtype(fn, m));
    return evidenceMemo.get(fn.id) ?? null;
  };
  let moduleMemo: SyntaxNode | null | undefined;
  const moduleEvidence = () => (moduleMemo === undefined ? (moduleMemo = fp32Mention(root)) : moduleMemo);
  const candidates: Candidate[] = [];
  for (const call of root.descendantsOfType('call')) {
    const name = cupyCall(m, call);
    const { positional, keywords } = pyArgs(call);
    if (name !== null && name in DTYPE_POS) {
      const dtype = keywords.get('dtype') ?? positional[DTYPE_POS[name]];
      if (dtype) {
        if (pyDtypeWidth(dtype) === 'fp64') candidates.push({ node: call, messageId: 'explicit', code: oneLine(call.text), dtype: dtype.text });
        continue;
      }
      if (keywords.has('like') || positional.some((p) => p.type === 'list_splat' || p.type === 'dictionary_splat') || call.childForFieldName('arguments')?.namedChildren.some((a) => a.type === 'dictionary_splat')) continue;
      if (name in DEFAULT_FP64) {
        if (FROM_VALUES.has(name) && !floatValued(name === 'full' ? positional.slice(1, 2) : positional)) continue;
        if (name === 'full' && !positional[1]) continue;
        if (name !== 'linspace' && name !== 'logspace' && name !== 'arange' && tinyShape(positional[0])) continue;
        candidates.push({ node: call, messageId: 'defaulted', code: oneLine(call.text), dtype: 'float64' });
        continue;
      }
      if (UPLOADS.has(name)) {
        const obj = unparen(positional[0]);
        let floats = floatSequence(obj);
        if (!floats && obj?.type === 'identifier') {
          const fn = functionOf(call);
          const def = fn ? paramNames(fn).get(obj.text) : null;
          // A parameter whose default is a tuple of Python floats, never reassigned before the upload.
          floats = !!def && floatSequence(def) && !(m.assignmentsIn(fn!).get(obj.text) ?? []).some((a) => a.node.startIndex < call.startIndex);
        }
        if (floats) candidates.push({ node: call, messageId: 'defaulted', code: oneLine(call.text), dtype: 'float64' });
      }
      continue;
    }
    // `x.astype(float)`, `x.astype('d')`, `x.astype(cp.float64)` on a device array.
    const f = call.childForFieldName('function');
    if (f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'astype') {
      const dtype = positional[0] ?? keywords.get('dtype');
      if (pyDtypeWidth(dtype) !== 'fp64') continue;
      const fn = functionOf(call);
      if (!fn || hostValue(m, f.childForFieldName('object')!, fn)) continue;
      candidates.push({ node: call, messageId: 'astype', code: oneLine(call.text), dtype: dtype!.text });
    }
  }

  for (const c of candidates) {
    const fn = functionOf(c.node);
    if (!fn) continue; // module-level constants are set up once
    if (m.inCpuFallback(c.node) || m.debugGated(c.node)) continue;
    const params = paramNames(fn);
    if ([...params.keys()].some((p) => planNames.has(p) || COMPUTE_DTYPE_PARAM.test(p))) continue;
    // A Python float table uploaded without a dtype is float64 whatever the function does; the module's
    // float32 work (a `dtype=cp.float32` default elsewhere) is what it gets mixed into.
    const upload = c.messageId === 'defaulted' && UPLOADS.has(cupyCall(m, c.node) ?? '') && unparen(pyArgs(c.node).positional[0])?.type === 'identifier';
    const evidence = evidenceOf(fn) ?? (upload ? moduleEvidence() : null);
    if (!evidence || (evidence.startIndex >= c.node.startIndex && evidence.endIndex <= c.node.endIndex)) continue;
    if (deliberateBranch(c.node, fn) || narrowedAtOnce(c.node)) continue;
    const stmt = statementOf(c.node);
    if (documented(stmt)) continue;
    if (c.messageId !== 'defaulted' && stmt.type === 'expression_statement') {
      const a = stmt.namedChildren[0];
      const target = a?.type === 'assignment' || a?.type === 'augmented_assignment' ? a.childForFieldName('left')?.text ?? '' : '';
      if (ACCUMULATOR.test(target)) continue;
      // `m2 += x.astype(cp.float64) ** 2` into a buffer the function made fp64 on purpose: same choice.
      if (c.messageId === 'astype' && (m.assignmentsIn(fn).get(target) ?? []).some((b) => b.value.type === 'call' && pyDtypeWidth(pyArgs(b.value).keywords.get('dtype')) === 'fp64')) continue;
    }
    ctx.report({
      node: c.node,
      messageId: c.messageId,
      data: { code: c.code, dtype: c.dtype, evidence: oneLine(evidence.text, 50) },
      fix: { description: 'Give the array the dtype the rest of the function computes in (the input\'s dtype, or the float type the function selected); keep float64 only where the result needs it, and say why in a comment.' },
    });
  }
}

/** `cp.ElementwiseKernel('T x', 'float64 h', …)`: one parameter pinned to fp64 beside type-generic ones. */
function analyseElementwise(ctx: CheckContext, m: PyModel): void {
  for (const call of m.source.root.descendantsOfType('call')) {
    const name = cupyCall(m, call) ?? lastName(calleePath(call.childForFieldName('function')));
    if (name !== 'ElementwiseKernel' && name !== 'ReductionKernel') continue;
    if (!cupyCall(m, call) && !m.importsCupy) continue;
    const { positional, keywords } = pyArgs(call);
    const sigs = [positional[0] ?? keywords.get('in_params'), positional[1] ?? keywords.get('out_params')];
    // `array`: an output, or a `raw` input, is always an array; a plain input may be a scalar, whose
    // fp64 type costs arithmetic but not the fp64 storage and traffic of an array.
    const params: Array<{ type: string; name: string; node: SyntaxNode; array: boolean }> = [];
    sigs.forEach((s, k) => {
      const text = pyStringValue(s);
      if (text === null || !s) return;
      for (const p of text.split(',')) {
        const all = p.trim().split(/\s+/);
        const toks = all.filter((t) => t !== 'raw');
        if (toks.length >= 2) params.push({ type: toks[toks.length - 2], name: toks[toks.length - 1], node: s, array: k === 1 || all.includes('raw') });
      }
    });
    const generic = params.find((p) => /^[A-Z]\w?$/.test(p.type) || /^(float32|complex64|float16)$/.test(p.type));
    if (!generic) continue;
    for (const p of params) {
      if (!p.array || !/^(float64|complex128|double)$/.test(p.type)) continue;
      if (documented(statementOf(call))) continue;
      ctx.report({
        node: p.node,
        messageId: 'kernelParam',
        data: { param: `${p.type} ${p.name}`, generic: `${generic.type} ${generic.name}` },
        fix: { description: `Type the parameter with the kernel's type placeholder (\`${generic.type} ${p.name}\`) so float32 inputs stay float32; keep float64 only for a documented accumulator.` },
      });
    }
  }
}

/** Numba CUDA kernels whose body promotes float32 data to double through Python constants (`1j`, `math.pi`). */
function analyseNumba(ctx: CheckContext, m: PyModel): void {
  const root = m.source.root;
  if (!/\bnumba\b/.test(m.source.text)) return;
  const fileFp32 = fp32Mention(root);
  if (!fileFp32) return;
  for (const d of root.descendantsOfType('decorated_definition')) {
    const decos = d.namedChildren.filter((c) => c.type === 'decorator');
    const jit = decos.find((c) => NUMBA_CUDA_JIT.test(c.text.replace(/^@\s*/, '')));
    if (!jit) continue;
    // A kernel whose signature is fp64-only computes in fp64 by design.
    if (/float64|complex128|f8|c16/.test(jit.text) && !FP32_DTYPE_MENTION.test(jit.text)) continue;
    const fn = d.childForFieldName('definition');
    const body = fn?.childForFieldName('body');
    if (!fn || !body) continue;
    const rows = new Set<number>();
    for (const n of body.descendantsOfType(['integer', 'float', 'attribute'])) {
      const lit = n.type === 'attribute' ? NUMBA_FP64_CONST.test(n.text) : isComplexLiteral(n);
      if (!lit || narrowedAtOnce(n) || rows.has(n.startPosition.row)) continue;
      // Only values that take part in arithmetic promote the expression.
      if (n.parent?.type !== 'binary_operator' && n.parent?.type !== 'unary_operator') continue;
      rows.add(n.startPosition.row);
      ctx.report({
        node: n,
        messageId: 'numbaConst',
        data: { lit: n.text, fn: fn.childForFieldName('name')?.text ?? '' },
        fix: { description: 'Bind the constant once as float32/complex64 (`PI = numba.float32(math.pi)`, `J = numba.complex64(1j)`) or use the float32 math (`math.sin` on float32 values, `cmath.exp` on complex64) so the inner loop stays single precision.' },
      });
    }
  }
}

export default defineCheck({
  id: 'precision/fp64-default-in-fp32-path',
  pass: 4,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation:
    '003 §0 Target Hardware Reference Card (fp64 at 1:64 of fp32 on RTX 3090/4090); 003 §6.1 FP64:FP32 Throughput Ratios; 003 §6.3 When fp32 Is Sufficient; 004 Roofline analysis (a memory-bound kernel is limited by bytes moved)',
  summary: 'float64/complex128 arriving through a default (`astype(float)`, `cp.zeros(n)`, `cp.linspace`, `"D"`, `1j`) in code that otherwise computes in float32.',
  why: 'A float64 array mixed into float32 work promotes the whole expression to float64: twice the bytes for memory-bound kernels (004 Roofline) and 1/64 of the fp32 arithmetic rate on RTX 3090/4090 (003 §0, §6.1).',
  messages: {
    defaulted:
      '`{{code}}` has no dtype, so CuPy makes it float64, in a function that otherwise works in float32 or in its input\'s dtype (`{{evidence}}`); mixing it in promotes the float32 work to double.',
    explicit:
      '`{{code}}` pins {{dtype}} in a function that otherwise works in float32 or in its input\'s dtype (`{{evidence}}`); float32 input gets promoted to double here.',
    astype:
      '`{{code}}` converts to float64 (`{{dtype}}` is double precision) in a function that also handles float32 (`{{evidence}}`); every GPU operation downstream then runs in double.',
    kernelParam:
      'ElementwiseKernel parameter `{{param}}` is fixed to double beside the type-generic `{{generic}}`: single-precision inputs are promoted to fp64 inside the kernel.',
    numbaConst:
      '`{{lit}}` in CUDA kernel {{fn}} is a double-precision Python constant; in a kernel on float32/complex64 data it promotes the arithmetic to fp64.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        if (m.importsCupy) {
          analysePython(ctx, m);
          analyseElementwise(ctx, m);
        }
        analyseNumba(ctx, m);
      },
    };
  },
});

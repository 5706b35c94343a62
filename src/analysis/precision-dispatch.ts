import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { memoized, pythonModel, type PyModel } from './python.js';
import { calleePath, lastName, matchesVocab, pyArgs, unparen } from './syntax.js';

/**
 * The precision-dispatch vocabulary of a Python module (catalog §2.4, 003 §6.2/§7.1): kernel templates
 * formatted with a compute type, the values that compute type can take, and the PrecisionPlan a dispatch
 * function receives. The names come from the `precision_*` vocabularies so other projects can map theirs.
 */

export interface TypeValues {
  /** Can be the string "float" (fp32 build). */
  float: boolean;
  /** Can be the string "double". */
  double: boolean;
  /** Depends on something not traced (a parameter, another module). */
  unknown: boolean;
  /** Derived from the plan's compute-precision field. */
  fromPlan: boolean;
}

export interface PrecisionFormat {
  /** The `TEMPLATE.format(...)` call. */
  call: SyntaxNode;
  /** The compute-type keyword argument's value, when passed. */
  typeArg: SyntaxNode | null;
  /** Name of the template variable (`_CLIP_SRC`), when the receiver is a name. */
  templateName: string | null;
  /** Source text of the template literal, when it is defined in this module. */
  templateText: string | null;
  /** `__global__` functions the template defines. */
  kernelNames: string[];
  /** Function (or module) the call sits in. */
  scope: SyntaxNode;
}

export interface PrecisionFacts {
  formats: PrecisionFormat[];
  /** Values a compute-type expression can take at `expr`, following names assigned in its scope. */
  typeValues(expr: SyntaxNode | null): TypeValues;
  /** Names under which a dispatch function holds a PrecisionPlan (parameters, factory results). */
  planNames(scope: SyntaxNode): string[];
  /** Attribute reads `<plan>.<field>` inside `scope` for one of `fields`. */
  planFieldReads(scope: SyntaxNode, fields: readonly string[]): SyntaxNode[];
  /** The template text declares the compute typedef (or takes the compute-type placeholder). */
  declaresComputeT(text: string): boolean;
  /** The template uses the compute typedef beyond declaring it (it does arithmetic in compute_t). */
  usesComputeT(text: string): boolean;
  /** A string literal's content ("float" for `"float"`), or null. */
  stringValue(n: SyntaxNode | null | undefined): string | null;
  py: PyModel;
}

export const precisionFacts: Analysis<PrecisionFacts> = {
  name: 'precision-dispatch-facts',
  compute: (source, config) => memoized(memo, source, config, build),
};
const memo = new WeakMap<Source, { config: ResolvedConfig; value: PrecisionFacts }>();

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Regex matching any vocabulary word inside a name (`_CLIP_SRC`, `overlay_kernel`). */
export function nameRegex(words: readonly string[]): RegExp {
  return new RegExp(`(${words.map(esc).join('|')})`, 'i');
}

/** `__global__ void name(` declarations of a kernel string (Python source text, before extraction). */
export function globalKernelNames(text: string): string[] {
  return [...text.matchAll(/__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?\w[\w\s:<>*]*?\b(\w+)\s*\(/g)].map((m) => m[1]);
}

function build(source: Source, config: ResolvedConfig): PrecisionFacts {
  const py = pythonModel.compute(source, config);
  const vocab = config.vocab;
  const root = source.root;
  const typedefs = vocab.precision_typedefs;
  const typeParams = vocab.precision_type_params;
  const typedefRe = new RegExp(`(typedef\\s+[^;]*\\b(${typedefs.map(esc).join('|')})\\s*;|using\\s+(${typedefs.map(esc).join('|')})\\s*=)`);
  const placeholderRe = new RegExp(`\\{(${typeParams.map(esc).join('|')})\\}`);
  const declaresComputeT = (t: string) => typedefRe.test(t) || placeholderRe.test(t);
  const useRe = new RegExp(`\\b(${typedefs.map(esc).join('|')})\\b`, 'g');
  const usesComputeT = (t: string) => (t.match(useRe)?.length ?? 0) > (t.match(new RegExp(typedefRe.source, 'g'))?.length ?? 0);

  const stringValue = (n: SyntaxNode | null | undefined): string | null => {
    const s = unparen(n);
    if (s?.type !== 'string' || s.namedChildren.some((x) => x.type === 'interpolation')) return null;
    return s.namedChildren.filter((x) => x.type === 'string_content').map((x) => x.text).join('');
  };

  // Module-level string bindings (templates), following `A = B + "..."` by text.
  const moduleStrings = new Map<string, SyntaxNode>();
  for (const [name, list] of py.assignmentsIn(root)) {
    const v = list.length === 1 ? unparen(list[0].value) : null;
    if (v && (v.type === 'string' || v.type === 'concatenated_string' || v.type === 'binary_operator')) moduleStrings.set(name, v);
  }
  const templateTextOf = (recv: SyntaxNode): { name: string | null; text: string | null } => {
    const u = unparen(recv);
    if (!u) return { name: null, text: null };
    if (u.type === 'string' || u.type === 'concatenated_string') return { name: null, text: u.text };
    if (u.type === 'identifier' || u.type === 'attribute') {
      const local = u.type === 'identifier' ? py.assignmentsIn(py.scopeOf(u)).get(u.text) : undefined;
      const v = local?.length === 1 ? unparen(local[0].value) : moduleStrings.get(u.text.replace(/^(self|cls)\./, ''));
      const text = v && (v.type === 'string' || v.type === 'concatenated_string' || v.type === 'binary_operator') ? v.text : null;
      return { name: lastName(u.text), text };
    }
    return { name: null, text: null };
  };

  const formats: PrecisionFormat[] = [];
  for (const call of root.descendantsOfType('call')) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'format') continue;
    const recv = fn.childForFieldName('object');
    if (!recv) continue;
    const { keywords } = pyArgs(call);
    const typeArg = typeParams.map((k) => keywords.get(k)).find((x) => x) ?? null;
    const { name, text } = templateTextOf(recv);
    if (!typeArg && !(text && declaresComputeT(text))) continue;
    formats.push({ call, typeArg, templateName: name, templateText: text, kernelNames: text ? globalKernelNames(text) : [], scope: py.scopeOf(call) });
  }
  // f-string kernels: `f"typedef {compute_type} compute_t; ..."` interpolates the type where .format would.
  const fTypedef = new RegExp(`typedef\\s*$`);
  for (const s of root.descendantsOfType('string')) {
    const interps = s.namedChildren.filter((c) => c.type === 'interpolation');
    if (!interps.length || !typedefRe.test(s.text)) continue;
    for (const i of interps) {
      const before = source.text.slice(Math.max(s.startIndex, i.startIndex - 40), i.startIndex);
      const after = source.text.slice(i.endIndex, i.endIndex + 40);
      if (!fTypedef.test(before) || !new RegExp(`^\\s*(${typedefs.map(esc).join('|')})\\s*;`).test(after)) continue;
      let top: SyntaxNode = s;
      while (top.parent && (top.parent.type === 'concatenated_string' || top.parent.type === 'parenthesized_expression')) top = top.parent;
      const asg = top.parent?.type === 'assignment' ? top.parent.childForFieldName('left') : null;
      const typeArg = i.namedChildren.find((c) => c.type !== 'format_specifier' && c.type !== 'type_conversion') ?? null;
      formats.push({ call: s, typeArg, templateName: asg?.type === 'identifier' ? asg.text : null, templateText: s.text, kernelNames: globalKernelNames(s.text), scope: py.scopeOf(s) });
    }
  }

  const computeFields = vocab.precision_compute_fields;
  const fieldRe = new RegExp(`\\.(${computeFields.map(esc).join('|')})\\b`);
  // `plan.compute_type`, `precision_plan.ctype`: a field of the plan carries its precision choice.
  const planFieldRe = new RegExp(`^(${vocab.precision_plan_names.map(esc).join('|')})\\.\\w+$`);
  const valueMemo = new Map<number, TypeValues>();
  const typeValues = (expr: SyntaxNode | null, depth = 0): TypeValues => {
    const none: TypeValues = { float: false, double: false, unknown: true, fromPlan: false };
    const u = unparen(expr);
    if (!u || depth > 8) return none;
    const hit = valueMemo.get(u.id);
    if (hit) return hit;
    valueMemo.set(u.id, none);
    const merge = (parts: TypeValues[]): TypeValues => ({
      float: parts.some((p) => p.float),
      double: parts.some((p) => p.double),
      unknown: parts.some((p) => p.unknown),
      fromPlan: parts.some((p) => p.fromPlan),
    });
    let r: TypeValues;
    const s = stringValue(u);
    if (s !== null) {
      r = { float: s === 'float', double: s === 'double', unknown: s !== 'float' && s !== 'double', fromPlan: false };
    } else if (u.type === 'conditional_expression') {
      const [a, cond, b] = u.namedChildren;
      const m = merge([typeValues(a, depth + 1), typeValues(b, depth + 1)]);
      r = { ...m, fromPlan: m.fromPlan || fieldRe.test(cond?.text ?? '') };
    } else if (u.type === 'identifier') {
      const scope = py.scopeOf(u);
      const list = py.assignmentsIn(scope).get(u.text) ?? (scope !== root ? [] : undefined);
      const before = (list ?? []).filter((a) => a.node.startIndex < u.startIndex && a.value.type !== 'assignment');
      if (before.length) r = merge(before.map((a) => typeValues(a.value, depth + 1)));
      else {
        const mod = py.assignmentsIn(root).get(u.text);
        r = mod?.length ? merge(mod.filter((a) => a.value.type !== 'assignment').map((a) => typeValues(a.value, depth + 1))) : none;
      }
    } else if (fieldRe.test(u.text) || (u.type === 'attribute' && planFieldRe.test(u.text))) {
      // A helper mapping the plan's precision to a C type (`ctype_for(plan.compute_precision)`) yields either.
      r = { float: true, double: true, unknown: false, fromPlan: true };
    } else {
      r = none;
    }
    valueMemo.set(u.id, r);
    return r;
  };

  const planNames = (scope: SyntaxNode): string[] => {
    if (scope.type !== 'function_definition') return [];
    const out = new Set<string>();
    for (const p of scope.childForFieldName('parameters')?.namedChildren ?? []) {
      const name = p.type === 'identifier' ? p.text : (p.namedChildren.find((c) => c.type === 'identifier')?.text ?? '');
      const ty = p.childForFieldName('type')?.text ?? '';
      if (!name) continue;
      if (vocab.precision_plan_names.includes(name) || (ty && vocab.precision_plan_factories.some((f) => ty.includes(lastName(f) ?? f)))) out.add(name);
    }
    for (const [name, list] of py.assignmentsIn(scope)) {
      for (const a of list) {
        const v = unparen(a.value);
        if (v?.type === 'call' && matchesVocab(calleePath(v.childForFieldName('function')), vocab.precision_plan_factories)) out.add(name);
      }
    }
    return [...out];
  };

  const planFieldReads = (scope: SyntaxNode, fields: readonly string[]): SyntaxNode[] =>
    scope.descendantsOfType('attribute').filter((a) => fields.includes(a.childForFieldName('attribute')?.text ?? ''));

  return { formats, typeValues: (e) => typeValues(e), planNames, planFieldReads, declaresComputeT, usesComputeT, stringValue, py };
}

/**
 * Python dtype spellings by width. `float` / `complex` (the builtins) and the one-letter codes `'d'` /
 * `'D'` are NumPy/CuPy's float64 / complex128; `'f'` / `'F'` are float32 / complex64.
 */
const DTYPE_MODULES = /^(?:np|numpy|cp|cupy|xp|jnp|numba|nb|types|numba\.types|nb\.types|torch)$/;
const PY_FP64_NAMES = new Set(['float64', 'complex128', 'double', 'cdouble', 'float_', 'complex_', 'longdouble']);
const PY_FP32_NAMES = new Set(['float32', 'complex64', 'single', 'csingle']);
const PY_FP64_STRINGS = new Set(['float64', 'complex128', 'double', 'd', 'D', 'f8', 'c16', '<f8', '<c16', 'float', 'complex']);
const PY_FP32_STRINGS = new Set(['float32', 'complex64', 'single', 'f', 'F', 'f4', 'c8', '<f4', '<c8']);

/** Content of a plain Python string literal (no f-string interpolation), else null. */
export function pyStringValue(n: SyntaxNode | null | undefined): string | null {
  if (n?.type !== 'string' || n.namedChildren.some((c) => c.type === 'interpolation')) return null;
  return n.namedChildren.filter((c) => c.type === 'string_content').map((c) => c.text).join('');
}

/**
 * Width of a Python dtype expression: `'fp64'` for `cp.float64`, `np.complex128`, `float`, `complex`,
 * `'d'`, `"complex128"`; `'fp32'` for `cp.float32`, `'f'`, `"complex64"`; null for anything else (a
 * variable, `x.dtype`, an integer type).
 */
export function pyDtypeWidth(n: SyntaxNode | null | undefined): 'fp64' | 'fp32' | null {
  if (!n) return null;
  const s = pyStringValue(n);
  if (s !== null) return PY_FP64_STRINGS.has(s) ? 'fp64' : PY_FP32_STRINGS.has(s) ? 'fp32' : null;
  if (n.type === 'identifier') return n.text === 'float' || n.text === 'complex' ? 'fp64' : null;
  if (n.type === 'attribute') {
    const a = n.childForFieldName('attribute')?.text ?? '';
    // `cp.float64`, `numpy.complex128`, `numba.types.float32`: a dtype of an array or JIT module, not
    // any attribute that happens to be called `single`.
    if (!DTYPE_MODULES.test(n.childForFieldName('object')?.text ?? '')) return null;
    if (PY_FP64_NAMES.has(a)) return 'fp64';
    if (PY_FP32_NAMES.has(a)) return 'fp32';
    return null;
  }
  if (n.type === 'call') {
    // `cp.dtype('float32')`, `np.dtype(np.float64)`.
    const f = n.childForFieldName('function')?.text ?? '';
    const arg = n.childForFieldName('arguments')?.namedChildren[0];
    if (/(^|\.)dtype$/.test(f)) return pyDtypeWidth(arg);
  }
  return null;
}

/** Does `text` name a float32 / complex64 dtype (as an attribute, a bare name or a dtype string)? */
export const FP32_DTYPE_MENTION = /\b(?:float32|complex64|csingle)\b|(['"])(?:f|F|f4|c8|single)\1/;

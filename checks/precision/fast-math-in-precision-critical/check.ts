import { kernelTemplates, terminalRefs } from '../../../src/analysis/kernel-templates.js';
import { globalKernelNames, precisionFacts } from '../../../src/analysis/precision-dispatch.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

// `--use_fast_math` = ftz + approximate div/sqrt + fmad; the others are its parts (003 §7.4). `--fmad=true` is
// nvcc/NVRTC's default, so only an explicit spelling is a choice worth questioning.
const FAST_FLAG = /^-{1,2}(use[_-]fast[_-]math|prec[_-]div=(false|0)|prec[_-]sqrt=(false|0)|ftz=(true|1)|fmad=(true|1))$/i;
const PY_COMPILE = ['*.compile_kernels', 'compile_kernels', 'cp.RawModule', 'cupy.RawModule', 'cp.RawKernel', 'cupy.RawKernel', 'cp.ElementwiseKernel', 'cupy.ElementwiseKernel', 'cp.ReductionKernel', 'cupy.ReductionKernel'];
const CXX_NAME_CALLS = new Set(['nvrtcAddNameExpression', 'nvrtcGetLoweredName', 'cuModuleGetFunction', 'cuLibraryGetKernel', 'cudaLibraryGetKernel']);

interface Flag {
  node: SyntaxNode;
  /** Included only under a condition read from the precision plan (`plan.allow_fast_math`). */
  fromPlan: boolean;
}

const strText = (s: SyntaxNode): string => s.text.replace(/^[a-zA-Z]*("""|'''|"|')/, '').replace(/("""|'''|"|')$/, '');
/** The fast-math flag in an option string; one string may carry several space-separated flags (`"-O3 --use_fast_math"`). */
const fastFlagIn = (text: string): string | null => text.trim().split(/\s+/).find((t) => FAST_FLAG.test(t)) ?? null;

/** Kernel-name words, token-aligned: `pip` matches `pip_kernel` but not `pipeline`; `intersect` matches `intersection`. */
function classifier(words: readonly string[]): (name: string) => boolean {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const long = words.filter((w) => w.length >= 5).map(esc);
  const short = words.filter((w) => w.length < 5).map(esc);
  const parts = [long.length ? `(${long.join('|')})` : '', short.length ? `(${short.join('|')})(s|es|ed|ing|ping|ion|ions)?(?=_|$)` : ''].filter(Boolean);
  const re = new RegExp(`(^|_)(${parts.join('|')})`, 'i'); // regex-safe: parts are built from escaped words
  return (name) => re.test(name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[-.\s]+/g, '_'));
}

function kernelClass(ctx: CheckContext, names: string[]): { name: string; cls: string } | null {
  const v = ctx.config.vocab;
  const exempt = classifier([...v.coarse_kernel_names, ...v.integer_like_kernel_names]);
  const classes: Array<[string, (n: string) => boolean]> = [
    ['CONSTRUCTIVE', classifier(v.constructive_kernel_names)],
    ['METRIC', classifier(v.metric_kernel_names)],
    ['PREDICATE', classifier(v.predicate_kernel_names)],
  ];
  for (const n of names) {
    if (exempt(n)) continue;
    for (const [cls, test] of classes) if (test(n)) return { name: n, cls };
  }
  return null;
}

/** A condition reads the precision plan (`plan.allow_fast_math`, or a name bound from it). */
function planCondition(ctx: CheckContext, m: PyModel, cond: SyntaxNode, depth = 0): boolean {
  const planNames = ctx.config.vocab.precision_plan_names;
  for (const ref of terminalRefs(cond)) {
    const root = ref.split('.');
    if (root.some((seg) => planNames.includes(seg) || /_plan$/.test(seg))) return true;
    if (root.length === 1 && depth < 3) {
      for (const scope of [m.scopeOf(cond), m.source.root]) {
        const list = m.assignmentsIn(scope).get(ref);
        if (list?.length === 1 && planCondition(ctx, m, list[0].value, depth + 1)) return true;
      }
    }
  }
  return false;
}

/** Conditions between a node and its statement scope (if/elif tests, `a if c else b`), that guard it. */
function guardedByPlan(ctx: CheckContext, m: PyModel, n: SyntaxNode): boolean {
  for (let p: SyntaxNode | null = n, child: SyntaxNode | null = null; p && p.type !== 'function_definition' && p.type !== 'module'; child = p, p = p.parent) {
    if (p.type === 'conditional_expression' && child && child.id !== p.namedChildren[1]?.id && planCondition(ctx, m, p.namedChildren[1])) return true;
    if ((p.type === 'if_statement' || p.type === 'elif_clause') && child?.type === 'block') {
      const c = p.childForFieldName('condition');
      if (c && planCondition(ctx, m, c)) return true;
    }
  }
  return false;
}

/** Fast-math option strings reachable from an `options=` value: literals, bound names (with their `+=`/`.append`s), `+`, conditionals. */
function pyFlags(ctx: CheckContext, m: PyModel, value: SyntaxNode, at: SyntaxNode, fromPlan: boolean, out: Flag[], seen: Set<number>, depth = 0): void {
  const v = unparen(value);
  if (!v || depth > 8 || seen.has(v.id)) return;
  seen.add(v.id);
  if (v.type === 'string') {
    if (fastFlagIn(strText(v))) out.push({ node: v, fromPlan: fromPlan || guardedByPlan(ctx, m, v) });
    return;
  }
  if (v.type === 'conditional_expression') {
    const [a, c, b] = v.namedChildren;
    const plan = planCondition(ctx, m, c);
    pyFlags(ctx, m, a, at, fromPlan || plan, out, seen, depth + 1);
    pyFlags(ctx, m, b, at, fromPlan || plan, out, seen, depth + 1);
    return;
  }
  if (v.type === 'identifier') {
    for (const scope of [m.scopeOf(at), m.source.root]) {
      const list = m.assignmentsIn(scope).get(v.text);
      if (!list?.length) continue;
      for (const a of list) pyFlags(ctx, m, a.value, a.node, fromPlan || guardedByPlan(ctx, m, a.node), out, seen, depth + 1);
      // `opts.append("--use_fast_math")` / `.extend((...))` / `.insert(i, ...)`
      for (const use of m.usesOf(v.text, scope)) {
        const attr = use.parent;
        const call = attr?.type === 'attribute' ? attr.parent : null;
        const meth = attr?.childForFieldName('attribute')?.text;
        if (call?.type !== 'call' || !['append', 'extend', 'insert'].includes(meth ?? '')) continue;
        for (const arg of pyArgs(call).positional) pyFlags(ctx, m, arg, call, fromPlan || guardedByPlan(ctx, m, call), out, seen, depth + 1);
      }
      break;
    }
    return;
  }
  for (const c of v.namedChildren) if (c.type !== 'comment') pyFlags(ctx, m, c, at, fromPlan, out, seen, depth + 1);
}

/** A value resolved through single bindings (local, then module). */
function resolvePy(m: PyModel, n: SyntaxNode | null | undefined, depth = 0): SyntaxNode | null {
  const v = unparen(n);
  if (!v || depth > 6 || v.type !== 'identifier') return v;
  for (const scope of [m.scopeOf(v), m.source.root]) {
    const list = m.assignmentsIn(scope).get(v.text)?.filter((a) => a.node.type === 'assignment');
    if (list?.length) return list.length === 1 ? resolvePy(m, list[0].value, depth + 1) : null;
  }
  return null;
}

function stringsIn(n: SyntaxNode | null): string[] {
  if (!n) return [];
  if (n.type === 'string') return [strText(n)];
  return n.descendantsOfType('string').map(strText);
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const pf = ctx.get(precisionFacts);
  const kt = ctx.get(kernelTemplates);
  const reported = new Set<number>();
  for (const call of m.source.root.descendantsOfType('call')) {
    if (!m.callMatches(call, PY_COMPILE)) continue;
    const { positional, keywords } = pyArgs(call);
    const opt = keywords.get('options');
    if (!opt) continue;
    const flags: Flag[] = [];
    pyFlags(ctx, m, opt, call, false, flags, new Set());
    const live = flags.filter((f) => !f.fromPlan && !reported.has(f.node.id));
    if (!live.length) continue;

    const isRawKernel = /RawKernel$/.test(m.callPath(call) ?? '');
    const isCompile = /compile_kernels$/.test(m.callPath(call) ?? '');
    const names: string[] = [];
    names.push(...stringsIn(resolvePy(m, keywords.get('kernel_names'))));
    names.push(...stringsIn(resolvePy(m, keywords.get('name_expressions'))));
    const nameArg = keywords.get('name') ?? (isRawKernel ? positional[1] : undefined);
    names.push(...stringsIn(resolvePy(m, nameArg)));
    const srcArg = keywords.get('source') ?? keywords.get('code') ?? (isRawKernel || !isCompile ? positional[0] : undefined);
    const src = resolvePy(m, srcArg);
    let template: SyntaxNode | null = src;
    if (src?.type === 'call' && src.childForFieldName('function')?.childForFieldName('attribute')?.text === 'format') {
      template = resolvePy(m, src.childForFieldName('function')?.childForFieldName('object'));
    }
    if (template && (template.type === 'string' || template.type === 'concatenated_string' || template.type === 'binary_operator')) names.push(...globalKernelNames(template.text));
    // `mod = cp.RawModule(...)`; `mod.get_function("name")`
    const bound = call.parent?.type === 'assignment' ? call.parent.childForFieldName('left') : null;
    if (bound?.type === 'identifier') {
      for (const use of m.usesOf(bound.text, m.scopeOf(call))) {
        const attr = use.parent;
        if (attr?.type !== 'attribute' || attr.childForFieldName('attribute')?.text !== 'get_function' || attr.parent?.type !== 'call') continue;
        names.push(...stringsIn(pyArgs(attr.parent).positional[0] ?? null));
      }
    }

    let hit = kernelClass(ctx, names);
    if (!hit) {
      // fp64: the source is a precision template whose compute type can be "double" (003 §7.1).
      const fmt = src && pf.formats.find((f) => f.call.id === src.id || (template && f.templateName && f.templateName === (unparen(srcArg)?.text ?? '')));
      const site = kt.keySites.find((s) => s.compiles.some((c) => c.id === call.id));
      const fmtCall = fmt ?? (site ? pf.formats.find((f) => site.formats.some((x) => x.id === f.call.id)) : undefined);
      const exempt = classifier([...ctx.config.vocab.coarse_kernel_names, ...ctx.config.vocab.integer_like_kernel_names]);
      if (fmtCall && (!names.length || !names.every(exempt))) {
        const tv = pf.typeValues(fmtCall.typeArg);
        if (tv.double || tv.unknown || tv.fromPlan) hit = { name: names[0] ?? fmtCall.kernelNames[0] ?? fmtCall.templateName ?? 'template', cls: 'fp64 template' };
      }
    }
    if (!hit) continue;
    for (const f of live) {
      reported.add(f.node.id);
      ctx.report({ node: f.node, messageId: 'fastMath', data: { flag: fastFlagIn(strText(f.node)) ?? strText(f.node), kernel: hit.name, cls: hit.cls } });
    }
  }
}

// ---- C++ host code compiling with NVRTC ------------------------------------------------------------

const cxxStr = (s: SyntaxNode): string => {
  if (s.type === 'raw_string_literal') return s.text.replace(/^R"([^(]*)\(/, '').replace(/\)[^)"]*"$/, '');
  return s.text.replace(/^(u8|u|U|L)?"/, '').replace(/"$/, '');
};
const STRING_TYPES = ['string_literal', 'raw_string_literal', 'concatenated_string'];

function enclosingFunction(n: SyntaxNode): SyntaxNode {
  for (let p: SyntaxNode | null = n.parent; p; p = p.parent) if (p.type === 'function_definition') return p;
  return n.tree.rootNode;
}

function identOf(n: SyntaxNode | null): string | null {
  let v = n;
  while (v && (v.type === 'parenthesized_expression' || v.type === 'pointer_expression' || v.type === 'cast_expression')) v = v.namedChildren[v.namedChildren.length - 1] ?? null;
  if (!v) return null;
  if (v.type === 'identifier') return v.text;
  // `opts.data()`, `&opts[0]`
  if (v.type === 'call_expression') return identOf(v.childForFieldName('function')?.childForFieldName('argument') ?? null);
  if (v.type === 'field_expression') return identOf(v.childForFieldName('argument'));
  if (v.type === 'subscript_expression') return identOf(v.childForFieldName('argument'));
  return null;
}

/** Declarations of `name` (by declarator identifier) in the function, else the file. */
function declsOf(scope: SyntaxNode, name: string): SyntaxNode[] {
  const find = (s: SyntaxNode) =>
    s.descendantsOfType('init_declarator').filter((d) => {
      let dd: SyntaxNode | null = d.childForFieldName('declarator');
      while (dd && dd.type !== 'identifier') dd = dd.childForFieldName('declarator') ?? dd.namedChildren[0] ?? null;
      return dd?.text === name;
    });
  const local = find(scope);
  return local.length ? local : find(scope.tree.rootNode);
}

function cxxPlanGuard(ctx: CheckContext, n: SyntaxNode, stop: SyntaxNode): boolean {
  const plan = new RegExp(`\\b(${alternation(ctx.config.vocab.precision_plan_names)}|\\w+_plan)\\s*(\\.|->)`);
  for (let p: SyntaxNode | null = n.parent; p && p.id !== stop.id; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'conditional_expression') {
      const c = p.childForFieldName('condition');
      if (c && plan.test(c.text)) return true;
    }
  }
  return false;
}

function checkCuda(ctx: CheckContext): void {
  const root = ctx.source.root;
  const reported = new Set<number>();
  for (const call of root.descendantsOfType('call_expression')) {
    if (call.childForFieldName('function')?.text !== 'nvrtcCompileProgram') continue;
    const args = call.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
    const optName = identOf(args[2] ?? null);
    const prog = identOf(args[0] ?? null);
    if (!optName) continue;
    const fn = enclosingFunction(call);
    const flags: Flag[] = [];
    const addFrom = (n: SyntaxNode, stop: SyntaxNode) => {
      for (const s of n.type === 'string_literal' ? [n] : n.descendantsOfType('string_literal')) {
        if (fastFlagIn(cxxStr(s))) flags.push({ node: s, fromPlan: cxxPlanGuard(ctx, s, stop) });
      }
    };
    for (const d of declsOf(fn, optName)) addFrom(d, enclosingFunction(d));
    for (const c of fn.descendantsOfType('call_expression')) {
      const f = c.childForFieldName('function');
      if (f?.type !== 'field_expression' || !['push_back', 'emplace_back', 'insert'].includes(f.childForFieldName('field')?.text ?? '')) continue;
      if (identOf(f.childForFieldName('argument')) !== optName) continue;
      addFrom(c.childForFieldName('arguments')!, fn);
    }
    const live = flags.filter((f) => !f.fromPlan && !reported.has(f.node.id));
    if (!live.length) continue;

    const names: string[] = [];
    for (const c of fn.descendantsOfType('call_expression')) {
      const name = c.childForFieldName('function')?.text ?? '';
      const cargs = c.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
      if (CXX_NAME_CALLS.has(name)) {
        for (const a of cargs) if (a.type === 'string_literal') names.push(cxxStr(a));
      } else if (name === 'nvrtcCreateProgram' && (!prog || identOf(cargs[0] ?? null) === prog)) {
        if (cargs[2]?.type === 'string_literal') names.push(cxxStr(cargs[2]).replace(/\.(cu|cuh|cpp)$/, ''));
        const src = cargs[1];
        const srcNodes = src && STRING_TYPES.includes(src.type) ? [src] : src ? declsOf(fn, identOf(src) ?? '') : [];
        for (const n of srcNodes) for (const s of [n, ...n.descendantsOfType(STRING_TYPES)]) if (STRING_TYPES.includes(s.type)) names.push(...globalKernelNames(cxxStr(s)));
      }
    }
    const hit = kernelClass(ctx, names);
    if (!hit) continue;
    for (const f of live) {
      reported.add(f.node.id);
      ctx.report({ node: f.node, messageId: 'fastMath', data: { flag: fastFlagIn(cxxStr(f.node)) ?? cxxStr(f.node), kernel: hit.name, cls: hit.cls } });
    }
  }
}

export default defineCheck({
  id: 'precision/fast-math-in-precision-critical',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation:
    '003 §7.4 Useful NVRTC Compiler Flags (`--use_fast_math`, `--prec-div=false`, `--prec-sqrt=false`: "Non-precision-critical kernels only"; `--ftz=true`: "fp32 kernels where denormals are noise")',
  summary: 'Fast-math / reduced-precision NVRTC flags on a METRIC, PREDICATE, CONSTRUCTIVE or fp64-template kernel module.',
  why: '003 §7.4 limits --use_fast_math (ftz, approximate div/sqrt, fmad) and --prec-div/--prec-sqrt=false to non-precision-critical kernels: the fp32 path of a METRIC kernel already sits near its ~8e-4 error budget at 1e6-magnitude coordinates (003 §6.4), and approximate division and flushed denormals change predicate and construction results.',
  messages: {
    fastMath:
      'Fast-math / reduced-precision compile flag `{{flag}}` applied to a precision-critical kernel (`{{kernel}}`: {{cls}}); METRIC, PREDICATE, CONSTRUCTIVE and fp64 kernels need exact IEEE division, square root and denormals.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'python') checkPython(ctx);
        else if (ctx.source.language === 'cuda') checkCuda(ctx);
      },
    };
  },
});

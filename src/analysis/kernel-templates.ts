import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { memoized, pythonModel } from './python.js';
import { calleePath, lastName, matchesVocab, pyArgs, unparen } from './syntax.js';

/**
 * Kernel templates and their module-cache keys (003 §7.1, §7.2, §7.5). A kernel is a Python
 * `str.format` template (or an f-string); NVRTC compiles the *formatted* text, so every `.format`
 * keyword and every compile option that varies changes the binary. A key hashes what it is given:
 * the name and the source argument of `make_kernel_cache_key(name, src)`, or just the string passed as
 * `compile_kernels(cache_key=...)`. This analysis follows a template to its `.format(...)` call and to
 * the key, within one file, and says which parameters the key covers and which it misses.
 */

export interface KeyParam {
  /** `.format` keyword (`tile`, `compute_type`) or `options`. */
  name: string;
  /** Source text of the value (`plan.tile`), or of the varying references in the options. */
  value: string;
  origin: 'format' | 'options';
  /** The parameter selects the precision variant (`compute_type=...`, vocabulary `precision_names`). */
  precision: boolean;
  /** The keyword argument / options expression. */
  node: SyntaxNode;
  /** Terminal references of the value (`plan.tile`, `tile`), used to match them in the key name. */
  refs: string[];
}

export type NameKind = 'literal' | 'fstring' | 'format' | 'concat' | 'unknown' | 'none';
/**
 * `formatted`: the hashed source is a formatted template or an f-string (it holds every format value);
 * `template`: the unformatted template; `constant`: a fixed string; `none`: the key hashes no source;
 * `unknown`: anything the file does not tell (a parameter, a helper's result).
 */
export type SourceKind = 'formatted' | 'template' | 'constant' | 'none' | 'unknown';

export interface KeySite {
  /** Where the key is built: the key call, or the string passed as `cache_key=`. */
  node: SyntaxNode;
  /** The key-helper call (`make_kernel_cache_key(...)`), if the key comes from one. */
  keyCall: SyntaxNode | null;
  /** Compile calls that use this key. */
  compiles: SyntaxNode[];
  nameArg: SyntaxNode | null;
  nameKind: NameKind;
  /** Terminal references interpolated into the name. */
  nameRefs: string[];
  sourceArg: SyntaxNode | null;
  sourceKind: SourceKind;
  /** The template variable the kernel comes from, when known. */
  template: string | null;
  /** `.format(...)` calls that produce the compiled source. */
  formats: SyntaxNode[];
  params: KeyParam[];
  /** Parameters that change the compiled binary but not the key. */
  missing: KeyParam[];
}

export interface KernelTemplateFacts {
  keySites: KeySite[];
  /** Every compile call of the file (vocabulary `kernel_compile_calls`). */
  compileCalls: SyntaxNode[];
  /** Template variables (receivers of `.format` or strings with `{{`) to their placeholder names. */
  templates: Map<string, string[]>;
}

export const kernelTemplates: Analysis<KernelTemplateFacts> = {
  name: 'kernel-templates',
  compute: (source, config) => memoized(memo, source, config, build),
};
const memo = new WeakMap<Source, { config: ResolvedConfig; value: KernelTemplateFacts }>();

const LITERAL_TYPES = new Set(['string', 'concatenated_string', 'integer', 'float', 'true', 'false', 'none']);
const STRINGY = new Set(['string', 'concatenated_string']);

/** `{name}` placeholders of a template text (doubled braces are literal C++ braces). */
export function placeholdersOf(text: string): string[] {
  const t = text.replace(/\{\{|\}\}/g, '');
  const out = new Set<string>();
  for (const m of t.matchAll(/\{([A-Za-z_]\w*)[^{}]*\}/g)) out.add(m[1]);
  return [...out];
}

function isFString(n: SyntaxNode): boolean {
  const parts = n.type === 'concatenated_string' ? n.namedChildren.filter((c) => c.type === 'string') : [n];
  return parts.some((p) => /^[a-zA-Z]*[fF]/.test(p.children.find((c) => c.type === 'string_start')?.text ?? '') && p.children.some((c) => c.type === 'interpolation'));
}

/** Maximal attribute chains and lone identifiers inside an expression (`plan.tile`, `ct`); call names excluded. */
export function terminalRefs(n: SyntaxNode): string[] {
  const out = new Set<string>();
  const visit = (x: SyntaxNode): void => {
    if (x.type === 'attribute') {
      const p = calleePath(x);
      if (p) {
        out.add(p);
        return;
      }
    }
    if (x.type === 'identifier') {
      const par = x.parent;
      if (par?.type === 'keyword_argument' && par.childForFieldName('name')?.id === x.id) return;
      out.add(x.text);
      return;
    }
    if (x.type === 'call') {
      const fn = x.childForFieldName('function');
      // `str(tile)`, `_arch()`: the arguments are the data; a method call's receiver is too.
      if (fn?.type === 'attribute') visit(fn.childForFieldName('object')!);
      const args = x.childForFieldName('arguments');
      if (args) visit(args);
      return;
    }
    for (const c of x.namedChildren) visit(c);
  };
  visit(n);
  return [...out];
}

function build(source: Source, config: ResolvedConfig): KernelTemplateFacts {
  const m = pythonModel.compute(source, config);
  const vocab = config.vocab;
  const root = source.root;
  const calls = root.descendantsOfType('call');

  // Templates: receivers of `.format` by name, plus strings with doubled braces.
  const formatCallsByName = new Map<string, SyntaxNode[]>();
  for (const c of calls) {
    const fn = c.childForFieldName('function');
    if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'format') continue;
    const o = unparen(fn.childForFieldName('object'));
    if (o?.type === 'identifier') formatCallsByName.set(o.text, [...(formatCallsByName.get(o.text) ?? []), c]);
  }
  const templates = new Map<string, string[]>();

  /** The value bound to `name` where `at` reads it: the latest earlier assignment in its function, else the module's. */
  const resolve = (name: string, at: SyntaxNode): SyntaxNode | null => {
    const scope = m.scopeOf(at);
    const pick = (list: Array<{ node: SyntaxNode; value: SyntaxNode }> | undefined, before: boolean) => {
      if (!list?.length) return null;
      const earlier = before ? list.filter((a) => a.node.endIndex <= at.startIndex) : list;
      const a = earlier[earlier.length - 1];
      if (!a || a.node.type === 'augmented_assignment' || a.value.type === 'assignment') return null;
      return a.value;
    };
    const local = m.assignmentsIn(scope).get(name);
    if (local?.length) return scope === root ? pick(local, false) : pick(local, true);
    if (scope === root) return null;
    const mod = m.assignmentsIn(root).get(name);
    return mod && mod.length === 1 ? pick(mod, false) : null;
  };

  const isTemplateString = (name: string | null, str: SyntaxNode): boolean => !isFString(str) && ((!!name && formatCallsByName.has(name)) || str.text.includes('{{'));

  interface SourceInfo {
    kind: SourceKind;
    template: string | null;
    formats: SyntaxNode[];
    placeholders: string[];
    /** f-string kernels: their interpolations are the parameters. */
    fstrings: SyntaxNode[];
  }
  const classifySource = (expr: SyntaxNode | null, depth = 0, boundTo: string | null = null): SourceInfo => {
    const e = unparen(expr);
    const none: SourceInfo = { kind: 'unknown', template: null, formats: [], placeholders: [], fstrings: [] };
    if (!e || depth > 8) return none;
    if (e.type === 'call') {
      const fn = e.childForFieldName('function');
      if (fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'format') {
        const recv = unparen(fn.childForFieldName('object'));
        const inner = recv ? classifySource(recv, depth + 1) : none;
        const tpl = recv?.type === 'identifier' ? recv.text : inner.template;
        return { kind: 'formatted', template: tpl, formats: [e, ...inner.formats], placeholders: inner.placeholders, fstrings: [] };
      }
      return none;
    }
    if (STRINGY.has(e.type)) {
      if (isFString(e)) return { kind: 'formatted', template: null, formats: [], placeholders: [], fstrings: [e] };
      if (isTemplateString(boundTo, e)) {
        const ph = placeholdersOf(e.text);
        if (boundTo) templates.set(boundTo, ph);
        return { kind: ph.length ? 'template' : 'constant', template: boundTo, formats: [], placeholders: ph, fstrings: [] };
      }
      return { kind: 'constant', template: null, formats: [], placeholders: [], fstrings: [] };
    }
    if (e.type === 'binary_operator' && e.childForFieldName('operator')?.type === '+') {
      const l = classifySource(e.childForFieldName('left'), depth + 1);
      const r = classifySource(e.childForFieldName('right'), depth + 1);
      const kinds = [l.kind, r.kind];
      const kind: SourceKind = kinds.includes('unknown') ? 'unknown' : kinds.includes('template') ? 'template' : kinds.includes('formatted') ? 'formatted' : 'constant';
      return { kind, template: l.template ?? r.template, formats: [...l.formats, ...r.formats], placeholders: [...l.placeholders, ...r.placeholders], fstrings: [...l.fstrings, ...r.fstrings] };
    }
    if (e.type === 'identifier') {
      const v = resolve(e.text, e);
      if (!v) return none;
      const info = classifySource(v, depth + 1, e.text);
      return info.kind === 'template' && !info.template ? { ...info, template: e.text } : info;
    }
    return none;
  };

  const classifyName = (expr: SyntaxNode | null, depth = 0): { kind: NameKind; refs: string[] } => {
    const e = unparen(expr);
    if (!e) return { kind: 'none', refs: [] };
    if (depth > 8) return { kind: 'unknown', refs: [] };
    if (STRINGY.has(e.type)) {
      if (isFString(e)) return { kind: 'fstring', refs: e.descendantsOfType('interpolation').flatMap((i) => terminalRefs(i)) };
      return { kind: 'literal', refs: [] };
    }
    if (e.type === 'call') {
      const fn = e.childForFieldName('function');
      if (fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'format' && STRINGY.has(unparen(fn.childForFieldName('object'))?.type ?? '')) {
        return { kind: 'format', refs: terminalRefs(e.childForFieldName('arguments')!) };
      }
      // A helper that builds the name (`_kernel_name(plan)`) may add anything: the file does not say.
      return { kind: 'unknown', refs: [] };
    }
    if (e.type === 'binary_operator') {
      const op = e.childForFieldName('operator')?.type;
      if (op === '+' || op === '%') {
        const parts = [e.childForFieldName('left'), e.childForFieldName('right')].map((p) => classifyName(p, depth + 1));
        if (parts.some((p) => p.kind === 'unknown')) {
          // `"ring-" + ct`: a name joined in is part of the key.
          const refs = terminalRefs(e);
          return { kind: 'concat', refs };
        }
        return { kind: 'concat', refs: parts.flatMap((p) => p.refs) };
      }
      return { kind: 'unknown', refs: [] };
    }
    if (e.type === 'identifier') {
      const v = resolve(e.text, e);
      if (!v) return { kind: 'unknown', refs: [] };
      return classifyName(v, depth + 1);
    }
    return { kind: 'unknown', refs: [] };
  };

  const isPrecision = (name: string, value: SyntaxNode | null): boolean => {
    if (vocab.precision_names.includes(name)) return true;
    return !!value && terminalRefs(value).some((r) => r.split('.').some((seg) => vocab.precision_names.includes(seg)));
  };

  /** Module-wide constants: literals, and names bound once at module scope to literal tuples/strings. */
  const isConstantRef = (ref: string, at: SyntaxNode): boolean => {
    if (ref.includes('.')) return false;
    if (m.scopeOf(at) !== root && m.assignmentsIn(m.scopeOf(at)).has(ref)) return false;
    const mod = m.assignmentsIn(root).get(ref);
    if (!mod || mod.length !== 1) return false;
    const v = unparen(mod[0].value);
    if (!v) return false;
    if (LITERAL_TYPES.has(v.type)) return !isFString(v);
    if (v.type === 'tuple' || v.type === 'list') return v.namedChildren.every((c) => LITERAL_TYPES.has(c.type) && !isFString(c));
    return false;
  };

  const formatParams = (fmt: SyntaxNode, placeholders: string[]): KeyParam[] => {
    const out: KeyParam[] = [];
    const given = new Set<string>();
    let splat: SyntaxNode | null = null;
    for (const a of fmt.childForFieldName('arguments')?.namedChildren ?? []) {
      if (a.type === 'dictionary_splat') splat = a;
      if (a.type !== 'keyword_argument') continue;
      const name = a.childForFieldName('name')?.text ?? '';
      const v = unparen(a.childForFieldName('value'));
      given.add(name);
      if (!v || (LITERAL_TYPES.has(v.type) && !isFString(v))) continue;
      const refs = terminalRefs(v);
      if (refs.length && refs.every((r) => isConstantRef(r, fmt))) continue;
      out.push({ name, value: v.text, origin: 'format', precision: isPrecision(name, v), node: a, refs });
    }
    // `.format(**kw)`: every placeholder not given literally may vary.
    if (splat) for (const p of placeholders) if (!given.has(p)) out.push({ name: p, value: splat.text, origin: 'format', precision: isPrecision(p, null), node: splat, refs: [p] });
    return out;
  };

  /** Interpolations of an f-string kernel that are not module-wide constants. */
  const fstringParams = (f: SyntaxNode): KeyParam[] => {
    const out: KeyParam[] = [];
    for (const i of f.descendantsOfType('interpolation')) {
      const expr = i.namedChildren.find((c) => c.type !== 'format_specifier' && c.type !== 'type_conversion');
      if (!expr) continue;
      const refs = terminalRefs(expr);
      if (!refs.length || refs.every((r) => isConstantRef(r, f))) continue;
      const name = lastName(refs[0]) ?? refs[0];
      out.push({ name, value: expr.text, origin: 'format', precision: isPrecision(name, expr), node: i, refs });
    }
    return out;
  };

  /** Options that vary at run time: references that are not module-wide constants. */
  const optionParam = (compile: SyntaxNode): KeyParam | null => {
    const opt = pyArgs(compile).keywords.get('options');
    if (!opt) return null;
    let e = unparen(opt);
    for (let i = 0; e?.type === 'identifier' && i < 4; i++) {
      if (isConstantRef(e.text, compile)) return null;
      const v = resolve(e.text, e);
      if (!v) break;
      e = unparen(v);
    }
    if (!e) return null;
    const refs = terminalRefs(e).filter((r) => !isConstantRef(r, e!));
    if (!refs.length) return null;
    return { name: 'options', value: refs.join(', '), origin: 'options', precision: false, node: opt, refs: [...refs, opt.text] };
  };

  const compileCalls = calls.filter((c) => matchesVocab(m.callPath(c), vocab.kernel_compile_calls));
  const isKeyCall = (n: SyntaxNode | null): boolean => !!n && n.type === 'call' && matchesVocab(m.callPath(n), vocab.kernel_cache_key_calls);

  // Pair each compile call with the key it uses.
  const sites = new Map<number, KeySite>();
  const siteFor = (node: SyntaxNode, keyCall: SyntaxNode | null): KeySite => {
    let s = sites.get(node.id);
    if (!s) {
      s = { node, keyCall, compiles: [], nameArg: null, nameKind: 'none', nameRefs: [], sourceArg: null, sourceKind: 'none', template: null, formats: [], params: [], missing: [] };
      sites.set(node.id, s);
    }
    return s;
  };
  for (const c of compileCalls) {
    const k = unparen(pyArgs(c).keywords.get('cache_key'));
    if (!k) continue;
    let keyNode: SyntaxNode | null = k;
    if (k.type === 'identifier') keyNode = unparen(resolve(k.text, k));
    if (keyNode && isKeyCall(keyNode)) siteFor(keyNode, keyNode).compiles.push(c);
    else if (keyNode && (STRINGY.has(keyNode.type) || keyNode.type === 'binary_operator' || (keyNode.type === 'call' && keyNode.childForFieldName('function')?.type === 'attribute' && keyNode.childForFieldName('function')?.childForFieldName('attribute')?.text === 'format'))) {
      // The string itself is the key: no source is hashed into it.
      siteFor(keyNode, null).compiles.push(c);
    }
  }
  for (const c of calls) if (isKeyCall(c)) siteFor(c, c);

  for (const s of sites.values()) {
    const compileSource = (c: SyntaxNode) => pyArgs(c).keywords.get('source') ?? pyArgs(c).keywords.get('code') ?? pyArgs(c).positional[0] ?? null;
    if (s.keyCall) {
      const { positional, keywords } = pyArgs(s.keyCall);
      s.nameArg = positional[0] ?? keywords.get('name') ?? null;
      s.sourceArg = positional[1] ?? keywords.get('source') ?? keywords.get('src') ?? null;
    } else {
      s.nameArg = s.node;
    }
    const nm = classifyName(s.nameArg);
    s.nameKind = nm.kind;
    s.nameRefs = nm.refs;
    const src: SourceInfo = s.sourceArg ? classifySource(s.sourceArg) : { kind: 'none', template: null, formats: [], placeholders: [], fstrings: [] };
    s.sourceKind = src.kind;
    s.template = src.template;
    // The compiled source: what the paired compile calls build, else the key's own source.
    const compiled = s.compiles.map((c) => classifySource(compileSource(c)));
    const fromCompile = compiled.filter((x) => x.kind === 'formatted');
    let formats = fromCompile.flatMap((x) => x.formats);
    let placeholders = [...src.placeholders, ...fromCompile.flatMap((x) => x.placeholders)];
    if (!s.template) s.template = fromCompile.find((x) => x.template)?.template ?? null;
    if (src.kind === 'formatted') formats.push(...src.formats);
    if (!formats.length && src.kind === 'template' && src.template) {
      // Key from the bare template: the formats of that template in the same function (any, at module scope).
      const all = formatCallsByName.get(src.template) ?? [];
      const scope = m.scopeOf(s.node);
      formats = scope === root ? all : all.filter((f) => m.scopeOf(f) === scope);
      if (!formats.length && !all.length) {
        // Formatted in another module: every placeholder may vary.
        for (const p of src.placeholders) s.params.push({ name: p, value: p, origin: 'format', precision: isPrecision(p, null), node: s.sourceArg!, refs: [p] });
      }
    }
    formats = [...new Map(formats.map((f) => [f.id, f])).values()];
    placeholders = [...new Set(placeholders)];
    s.formats = formats;
    const seen = new Set(s.params.map((p) => p.name));
    for (const f of formats) for (const p of formatParams(f, placeholders)) if (!seen.has(p.name)) (seen.add(p.name), s.params.push(p));
    const fstrings = [...fromCompile.flatMap((x) => x.fstrings), ...(src.kind === 'formatted' ? src.fstrings : [])];
    for (const f of [...new Map(fstrings.map((x) => [x.id, x])).values()]) for (const p of fstringParams(f)) if (!seen.has(p.name)) (seen.add(p.name), s.params.push(p));
    for (const c of s.compiles) {
      const o = optionParam(c);
      if (o && !seen.has('options')) (seen.add('options'), s.params.push(o));
    }
    const srcRefs = s.sourceArg ? new Set(terminalRefs(s.sourceArg)) : new Set<string>();
    const nameLast = new Set(s.nameRefs.map((r) => lastName(r) ?? r));
    const covered = (p: KeyParam): boolean => {
      if (s.nameKind === 'unknown') return true;
      if (p.origin === 'format' && (src.kind === 'formatted' || src.kind === 'unknown')) return true;
      if (p.refs.some((r) => s.nameRefs.includes(r) || srcRefs.has(r))) return true;
      if (nameLast.has(p.name)) return true;
      if (p.precision && s.nameRefs.some((r) => r.split('.').some((seg) => vocab.precision_names.includes(seg)))) return true;
      return false;
    };
    s.missing = s.params.filter((p) => !covered(p));
  }

  return { keySites: [...sites.values()].sort((a, b) => a.node.startIndex - b.node.startIndex), compileCalls, templates };
}


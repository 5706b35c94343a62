import { pyConstNumber } from '../../../src/analysis/counts.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { hostFunctionOf } from '../../../src/analysis/flow.js';
import { mentionNodes } from '../../../src/analysis/mentions.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { calleePath, lastName, quote, unparen } from '../../../src/analysis/syntax.js';
import type { GpuSpec } from '../../../src/config/gpus.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

const MB = 1024 * 1024;
const FIELDS = ['base_ptr', 'num_bytes', 'hitRatio', 'hitProp', 'missProp'] as const;
type Field = (typeof FIELDS)[number];
const PERSISTING = /\b(cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING)\b/;
const LIMIT_NAMES = ['cudaLimitPersistingL2CacheSize', 'CU_LIMIT_PERSISTING_L2_CACHE_SIZE'];
// The seed's own name for the reserved bytes (003 §4.3: `hitRatio = set_aside_bytes / data_bytes`).
const SET_ASIDE_NAME = /set_?aside|setAside|SetAside|SET_ASIDE/;
const CLAMPS = /^(min|fmin|fminf|MIN|clamp|minimum)$/;

interface WindowField {
  field: Field;
  /** The assignment (or initializer element) that sets it. */
  node: SyntaxNode;
  value: SyntaxNode;
}

interface Window {
  key: string;
  fields: WindowField[];
}

interface Lang {
  /** Value of a number literal (`1.0f`, `1.0`, `1`), or of a constant expression when `folded`. */
  number(e: SyntaxNode, folded: boolean): number | null;
  /** Right-hand sides bound to a local name earlier in the function (`bytes = ...`, `size_t bytes = ...`). */
  bindings(name: SyntaxNode): SyntaxNode[];
  /** Text of what a local name was bound to (empty for other expressions). */
  bindingsText(e: SyntaxNode): string;
  isConditional(n: SyntaxNode): boolean;
  ifConditions(n: SyntaxNode): SyntaxNode[];
}

/** `std::min(a, b)`, `min(a, b)`, `MIN(a, b)`, `np.minimum(a, b)`, `std::clamp(...)`. */
function isClampCall(n: SyntaxNode): boolean {
  if (n.type !== 'call' && n.type !== 'call_expression') return false;
  return CLAMPS.test(lastName(calleePath(n.childForFieldName('function'))) ?? '');
}

/**
 * Names that hold the set-aside or the figures it is sized from, as seen from a node: the vocabulary,
 * `set_aside`-like names, and variables bound from those (`size_t budget = std::min(...)`), by function
 * (a local `window` of one function says nothing about another's) plus file-level ones.
 */
function setAsideTerms(root: SyntaxNode, vocabNames: readonly string[]): (at: SyntaxNode) => RegExp {
  const python = root.type === 'module';
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const GLOBAL = -1;
  const byScope = new Map<number, Set<string>>([[GLOBAL, new Set(vocabNames)]]);
  const pairs: Array<{ scope: number; targets: SyntaxNode[]; value: SyntaxNode }> = [];
  const fnId = (n: SyntaxNode) => hostFunctionOf(n)?.id ?? GLOBAL;
  if (python) {
    for (const a of root.descendantsOfType('assignment')) {
      const left = a.childForFieldName('left');
      const right = a.childForFieldName('right');
      if (!left || !right) continue;
      const targets = (left.type === 'pattern_list' || left.type === 'tuple_pattern' ? left.namedChildren : [left]).filter((t) => t.type === 'identifier' || t.type === 'attribute');
      // `self.budget = ...` is read by other methods.
      for (const t of targets) pairs.push({ scope: t.type === 'attribute' ? GLOBAL : fnId(a), targets: [t], value: right });
    }
  } else {
    const declared = new Map<number, Set<string>>();
    const localIn = (fn: SyntaxNode | null, name: string) => {
      if (!fn) return false;
      let set = declared.get(fn.id);
      if (!set) {
        set = new Set(fn.descendantsOfType(['init_declarator', 'parameter_declaration']).map((d) => (d.childForFieldName('declarator')?.text ?? '').replace(/^[&*\s]+/, '')));
        declared.set(fn.id, set);
      }
      return set.has(name);
    };
    for (const d of root.descendantsOfType('init_declarator')) {
      const t = d.childForFieldName('declarator');
      const v = d.childForFieldName('value');
      if (t?.type === 'identifier' && v) pairs.push({ scope: fnId(d), targets: [t], value: v });
    }
    for (const a of root.descendantsOfType('assignment_expression')) {
      const t = a.childForFieldName('left');
      const v = a.childForFieldName('right');
      if (!t || !v || (t.type !== 'identifier' && t.type !== 'field_expression')) continue;
      const fn = hostFunctionOf(a);
      pairs.push({ scope: t.type === 'identifier' && localIn(fn, t.text) ? fnId(a) : GLOBAL, targets: [t], value: v });
    }
    // `cudaDeviceGetLimit(&persist, cudaLimitPersistingL2CacheSize)`, `cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, set)`.
    for (const c of root.descendantsOfType('call_expression')) {
      if (!/^(cudaDeviceGetLimit|cudaDeviceSetLimit|cuCtxGetLimit|cuCtxSetLimit)$/.test(lastName(calleePath(c.childForFieldName('function'))) ?? '')) continue;
      const args = c.childForFieldName('arguments')?.namedChildren ?? [];
      if (!args.some((a) => LIMIT_NAMES.some((l) => a.text.includes(l)))) continue;
      for (const a of args) {
        const id = a.type === 'pointer_expression' ? a.childForFieldName('argument') : a;
        if (id?.type !== 'identifier' && id?.type !== 'field_expression') continue;
        const scope = id.type === 'identifier' && localIn(hostFunctionOf(c), id.text) ? fnId(c) : GLOBAL;
        if (!byScope.has(scope)) byScope.set(scope, new Set());
        byScope.get(scope)!.add(id.text);
      }
    }
  }
  const cache = new Map<number, RegExp>();
  const regexFor = (scope: number): RegExp => {
    let re = cache.get(scope);
    if (!re) {
      const names = [...(byScope.get(GLOBAL) ?? []), ...(scope === GLOBAL ? [] : byScope.get(scope) ?? [])];
      re = new RegExp(`\\b(${alternation(names)})\\b|${SET_ASIDE_NAME.source}`);
      cache.set(scope, re);
    }
    return re;
  };
  // Derived names, to a fixpoint: a binding whose value mentions a visible term makes its target one.
  for (let changed = true, rounds = 0; changed && rounds < 4; rounds++) {
    changed = false;
    for (const p of pairs) {
      const valueScope = fnId(p.value);
      if (!regexFor(valueScope).test(p.value.text)) continue;
      for (const t of p.targets) {
        const set = byScope.get(p.scope) ?? new Set<string>();
        byScope.set(p.scope, set);
        if (set.has(t.text)) continue;
        set.add(t.text);
        changed = true;
      }
    }
    if (changed) cache.clear();
  }
  return (at) => regexFor(fnId(at));
}

/** Is `e` (a num_bytes value) bounded by the set-aside: a clamp against it, the set-aside itself, or a local bound to either. */
function bounded(lang: Lang, termsAt: (at: SyntaxNode) => RegExp, e: SyntaxNode, depth = 0): boolean {
  const terms = termsAt(e);
  const u = unparen(e) ?? e;
  if (depth > 4) return false;
  const clamp = (n: SyntaxNode) => (isClampCall(n) || lang.isConditional(n)) && terms.test(n.text);
  if (clamp(u) || [...u.descendantsOfType(['call', 'call_expression', 'conditional_expression'])].some(clamp)) return true;
  if ((u.type === 'identifier' || u.type === 'field_expression' || u.type === 'attribute' || u.type === 'subscript') && terms.test(u.text)) return true;
  if (u.type === 'identifier') return lang.bindings(u).some((v) => bounded(lang, termsAt, v, depth + 1));
  return false;
}

/** Targets with a persisting-L2 set-aside: cc < 8.0 (V100, T4) has none, so a window there is not this rule's concern. */
const withSetAside = (targets: readonly GpuSpec[]): GpuSpec[] => targets.filter((g) => g.l2SetAsideMaxMb > 0);

function setAsideLimits(targets: readonly GpuSpec[]): string {
  const min = withSetAside(targets).sort((a, b) => a.l2SetAsideMaxMb - b.l2SetAsideMaxMb)[0];
  if (!min) return 'at most 75 % of L2';
  const share = Math.round((min.l2SetAsideMaxMb / min.l2Mb) * 1000) / 10;
  return `at most ${min.l2SetAsideMaxMb} MB on ${min.name}, ${share} % of its ${min.l2Mb} MB L2`;
}

function analyze(ctx: CheckContext, windows: Window[], lang: Lang, termsAt: (at: SyntaxNode) => RegExp, limitMentioned: boolean): void {
  const targets = ctx.config.targets;
  for (const w of windows) {
    const hits = w.fields.filter((f) => f.field === 'hitRatio');
    const sizes = w.fields.filter((f) => f.field === 'num_bytes');
    const props = w.fields.filter((f) => f.field === 'hitProp');
    let reported = false;
    // A hitRatio computed anywhere for this window (`min(1.0f, set_aside / bytes)`) is the fix itself.
    if (hits.length && sizes.length && hits.every((h) => lang.number(h.value, false) === 1)) {
      const hit = hits[0];
      const size = sizes[sizes.length - 1];
      const guarded = lang.ifConditions(hit.node).some((c) => termsAt(c).test(c.text));
      const bytes = lang.number(size.value, true);
      if (!guarded && !bounded(lang, termsAt, size.value)) {
        const code = quote(hit.node);
        if (bytes !== null) {
          const over = withSetAside(targets).filter((g) => bytes > g.l2SetAsideMaxMb * MB);
          if (over.length) {
            ctx.report({
              node: hit.node,
              messageId: 'constant',
              data: { code, bytes: quote(size.value), mb: +(bytes / MB).toFixed(1), gpus: over.map((g) => `${g.name} (${g.l2SetAsideMaxMb} MB)`).join(', ') },
              fix: { description: FIX },
            });
            reported = true;
          }
        } else {
          const capOnly = /accessPolicyMaxWindowSize/.test(size.value.text) || lang.bindingsText(size.value).includes('accessPolicyMaxWindowSize');
          ctx.report({
            node: hit.node,
            messageId: capOnly ? 'windowCapOnly' : 'unbounded',
            data: { code, bytes: quote(size.value), limit: setAsideLimits(targets) },
            fix: { description: FIX },
          });
          reported = true;
        }
      }
    }
    if (reported || limitMentioned || !ctx.source.wholeFile) continue;
    const persisting = props.find((p) => PERSISTING.test(p.value.text));
    if (persisting) {
      ctx.report({ node: persisting.node, messageId: 'noSetAside', data: { code: quote(persisting.node) }, fix: { description: SET_ASIDE_FIX } });
    }
  }
}

const FIX = 'Scale the hit ratio to the set-aside: `window.hitRatio = std::min(1.0f, float(set_aside) / float(window.num_bytes));` (Python: `min(1.0, set_aside / num_bytes)`), or clamp num_bytes to the set-aside.';
const SET_ASIDE_FIX = 'Reserve the set-aside once at setup: `cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, std::min(size_t(prop.l2CacheSize * 0.75), size_t(prop.persistingL2CacheMaxSize)));`.';

// ---------------------------------------------------------------------------------------------

/** `1.0f`, `1.f`, `1`, `0.5` → number. */
function cNumber(text: string): number | null {
  const t = text.trim().replace(/[fFlLuU]+$/, '');
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? Number(t) : null;
}

const windowType = /AccessPolicyWindow$/i;

function checkCuda(ctx: CheckContext): void {
  const text = ctx.source.text;
  if (!/hitRatio|hitProp/.test(text)) return;
  const m = ctx.get(cudaModel);
  const groups = new Map<string, Window>();
  const add = (owner: SyntaxNode, key: string, f: WindowField) => {
    if (m.inDeviceCode(owner)) return;
    const k = `${hostFunctionOf(owner)?.id ?? 0}|${key.replace(/\s+/g, '')}`;
    let w = groups.get(k);
    if (!w) groups.set(k, (w = { key, fields: [] }));
    w.fields.push(f);
  };
  const fromInitializer = (owner: SyntaxNode, key: string, list: SyntaxNode) => {
    const items = list.namedChildren.filter((c) => c.type !== 'comment');
    items.forEach((it, i) => {
      if (it.type === 'initializer_pair') {
        const name = it.childForFieldName('designator')?.text.replace(/^\./, '') ?? '';
        const value = it.childForFieldName('value');
        if (value && (FIELDS as readonly string[]).includes(name)) add(owner, key, { field: name as Field, node: it, value });
      } else if (i < FIELDS.length) add(owner, key, { field: FIELDS[i], node: it, value: it });
    });
  };
  for (const a of ctx.source.root.descendantsOfType('assignment_expression')) {
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (left?.type !== 'field_expression' || !right) continue;
    const field = left.childForFieldName('field')?.text ?? '';
    const owner = left.childForFieldName('argument');
    if (!owner) continue;
    if ((FIELDS as readonly string[]).includes(field)) add(a, owner.text, { field: field as Field, node: a, value: right });
    else if (field === 'accessPolicyWindow' && right.type === 'initializer_list') fromInitializer(a, left.text, right);
  }
  for (const d of ctx.source.root.descendantsOfType('declaration')) {
    if (!windowType.test(d.childForFieldName('type')?.text ?? '')) continue;
    for (const decl of d.namedChildren.filter((c) => c.type === 'init_declarator')) {
      const value = decl.childForFieldName('value');
      const name = decl.childForFieldName('declarator')?.text;
      if (name && value?.type === 'initializer_list') fromInitializer(d, name, value);
    }
  }
  if (!groups.size) return;
  const terms = setAsideTerms(ctx.source.root, ctx.config.vocab.l2_set_aside_names);
  const limitMentioned = mentionNodes(ctx.source, LIMIT_NAMES).some((n) => n.type === 'identifier' || n.type === 'field_identifier');
  const bindings = (id: SyntaxNode): SyntaxNode[] => {
    const fn = hostFunctionOf(id);
    if (!fn) return [];
    const out: SyntaxNode[] = [];
    for (const d of fn.descendantsOfType('init_declarator')) if (d.childForFieldName('declarator')?.text === id.text && d.endIndex <= id.startIndex && d.childForFieldName('value')) out.push(d.childForFieldName('value')!);
    for (const a of fn.descendantsOfType('assignment_expression')) if (a.childForFieldName('left')?.text === id.text && a.endIndex <= id.startIndex) out.push(a.childForFieldName('right')!);
    return out;
  };
  analyze(ctx, [...groups.values()], {
    number: (e, folded) => cNumber(e.text) ?? (folded ? m.constValue(e) : null),
    bindings,
    bindingsText: (e) => (e.type === 'identifier' ? bindings(e).map((b) => b.text).join(' ') : ''),
    isConditional: (n) => n.type === 'conditional_expression',
    ifConditions: (n) => {
      const out: SyntaxNode[] = [];
      for (let p = n.parent; p && p.type !== 'function_definition'; p = p.parent) if (p.type === 'if_statement' && p.childForFieldName('condition')) out.push(p.childForFieldName('condition')!);
      return out;
    },
  }, terms, limitMentioned);
}

function checkPython(ctx: CheckContext): void {
  const text = ctx.source.text;
  if (!/hitRatio|hitProp/.test(text)) return;
  const m = ctx.get(pythonModel);
  const groups = new Map<string, Window>();
  for (const a of ctx.source.root.descendantsOfType('assignment')) {
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (left?.type !== 'attribute' || !right) continue;
    const field = left.childForFieldName('attribute')?.text ?? '';
    const owner = left.childForFieldName('object');
    if (!owner || !(FIELDS as readonly string[]).includes(field)) continue;
    const k = `${m.scopeOf(a).id}|${owner.text.replace(/\s+/g, '')}`;
    let w = groups.get(k);
    if (!w) groups.set(k, (w = { key: owner.text, fields: [] }));
    w.fields.push({ field: field as Field, node: a, value: right });
  }
  if (!groups.size) return;
  const terms = setAsideTerms(ctx.source.root, ctx.config.vocab.l2_set_aside_names);
  const limitMentioned = mentionNodes(ctx.source, LIMIT_NAMES).some((n) => n.type === 'identifier');
  const bindings = (id: SyntaxNode): SyntaxNode[] =>
    (m.assignmentsIn(m.scopeOf(id)).get(id.text) ?? []).filter((a) => a.node.endIndex <= id.startIndex).map((a) => (a.value.type === 'assignment' ? a.value.childForFieldName('right')! : a.value));
  analyze(ctx, [...groups.values()], {
    number: (e, folded) => {
      const u = unparen(e);
      if (u && (u.type === 'float' || u.type === 'integer')) return Number(u.text.replace(/_/g, ''));
      return folded ? pyConstNumber(m, e) : null;
    },
    bindings,
    bindingsText: (e) => (e.type === 'identifier' ? bindings(e).map((b) => b.text).join(' ') : ''),
    isConditional: (n) => n.type === 'conditional_expression',
    ifConditions: (n) => {
      const out: SyntaxNode[] = [];
      for (let p = n.parent; p && p.type !== 'function_definition'; p = p.parent) if ((p.type === 'if_statement' || p.type === 'elif_clause') && p.childForFieldName('condition')) out.push(p.childForFieldName('condition')!);
      return out;
    },
  }, terms, limitMentioned);
}

export default defineCheck({
  id: 'memory/l2-persisting-window-unbounded',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  citation: '003 §4.3 L2 Cache Residency Hints (CC 8.0+) (sizing rules: set-aside ≤ min(0.75·L2, persistingL2CacheMaxSize); hitRatio = set_aside/data when data > set-aside; RTX 3090 6 MB "severely limited")',
  summary: 'L2 persisting access-policy window with hitRatio 1.0 and num_bytes not bounded by the set-aside, or persisting hits with no set-aside reserved.',
  why: 'The persisting set-aside is at most min(0.75·L2, persistingL2CacheMaxSize) (30 MB on A100, 4.5 MB on RTX 3090), and a window larger than it with hitRatio 1.0 thrashes L2 for ~10 % lost performance, where a right-sized hitRatio = set_aside / data gains ~50 % (003 §4.3, §10).',
  messages: {
    unbounded: 'L2 persisting window uses hitRatio 1.0 (`{{code}}`) for num_bytes `{{bytes}}` that can exceed the set-aside ({{limit}}); this thrashes L2 (~10% slower). Use hitRatio = set_aside / num_bytes.',
    windowCapOnly: 'L2 persisting window uses hitRatio 1.0 (`{{code}}`) for num_bytes `{{bytes}}`, clamped only to accessPolicyMaxWindowSize (the largest window the API accepts, ~128 MB, not the set-aside), so it can exceed the set-aside ({{limit}}); this thrashes L2 (~10% slower). Use hitRatio = set_aside / num_bytes.',
    constant: 'L2 persisting window uses hitRatio 1.0 (`{{code}}`) for num_bytes `{{bytes}}` ({{mb}} MB), which exceeds the set-aside on {{gpus}}; this thrashes L2 (~10% slower). Use hitRatio = set_aside / num_bytes.',
    noSetAside: 'L2 persisting window marks hits persisting (`{{code}}`) but this file never reserves a set-aside (`cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, …)`); the set-aside defaults to 0, so nothing persists. Reserve min(0.75·l2CacheSize, persistingL2CacheMaxSize).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'cuda') checkCuda(ctx);
        else if (ctx.source.language === 'python') checkPython(ctx);
      },
    };
  },
});

import type { SyntaxNode } from '../core/types.js';
import type { CudaModel } from './cuda.js';
import type { PyModel } from './python.js';
import { calleePath, lastName, pyArgs, unparen } from './syntax.js';

/**
 * Constant counts for the rules that compare a size with a threshold (`> 8 streams`, a window against
 * the L2 set-aside): the value of a Python constant expression, the trip count of a Python or C++
 * loop, the element count of a C++ array. Only what the source states counts; everything else is null.
 */

const CONFIG_GETTERS = /^(get|getenv|pop|setdefault)$/;

/**
 * Value of a Python number expression: literals, arithmetic, names and `self.x` bound once (in the
 * function, the class's methods, or at module scope), parameter defaults, `int()/float()/min()/max()`,
 * `len()` of a literal, and the default of a configuration read (`cfg.get("n", 4)`,
 * `os.environ.get("N", "4")`, `getattr(cfg, "n", 4)`): the value the code runs with unless configured.
 */
export function pyConstNumber(m: PyModel, e: SyntaxNode | null | undefined, depth = 0, text = false): number | null {
  const u = unparen(e);
  if (!u || depth > 10) return null;
  switch (u.type) {
    case 'integer':
    case 'float': {
      const v = Number(u.text.replace(/_/g, '').replace(/[jJ]$/, ''));
      return Number.isFinite(v) ? v : null;
    }
    case 'true':
      return 1;
    case 'false':
      return 0;
    case 'string': {
      if (!text) return null;
      const body = u.namedChildren.find((c) => c.type === 'string_content')?.text.trim() ?? '';
      return /^[-+]?\d+(\.\d*)?([eE][-+]?\d+)?$/.test(body) ? Number(body) : null;
    }
    case 'unary_operator': {
      const v = pyConstNumber(m, u.childForFieldName('argument'), depth + 1, text);
      const op = u.child(0)?.type;
      return v === null ? null : op === '-' ? -v : op === '+' ? v : op === '~' ? ~v : null;
    }
    case 'binary_operator': {
      const l = pyConstNumber(m, u.childForFieldName('left'), depth + 1);
      const r = pyConstNumber(m, u.childForFieldName('right'), depth + 1);
      if (l === null || r === null) return null;
      switch (u.childForFieldName('operator')?.type) {
        case '+': return l + r;
        case '-': return l - r;
        case '*': return l * r;
        case '/': return r ? l / r : null;
        case '//': return r ? Math.floor(l / r) : null;
        case '%': return r ? l % r : null;
        case '**': return l ** r;
        case '<<': return l * 2 ** r;
        case '>>': return Math.floor(l / 2 ** r);
        default: return null;
      }
    }
    case 'identifier':
      return pyNameValue(m, u, depth);
    case 'attribute': {
      const obj = u.childForFieldName('object');
      const attr = u.childForFieldName('attribute')?.text ?? '';
      if (obj?.type !== 'identifier' || !/^(self|cls)$/.test(obj.text)) return null;
      const cls = enclosingClassDef(u);
      if (!cls) return null;
      // `self.n = n` in one method (typically `__init__(self, n=4)`), or `N = 4` in the class body.
      const sets: Array<{ node: SyntaxNode; value: SyntaxNode }> = [];
      for (const fn of cls.descendantsOfType('function_definition')) sets.push(...(m.assignmentsIn(fn).get(u.text) ?? []));
      if (sets.length === 1 && sets[0].value.type !== 'assignment' && sets[0].node.type === 'assignment') return pyConstNumber(m, sets[0].value, depth + 1, text);
      if (sets.length) return null;
      const body = cls.childForFieldName('body');
      const own = body?.namedChildren
        .map((s) => (s.type === 'expression_statement' ? s.namedChildren[0] : null))
        .filter((a): a is SyntaxNode => a?.type === 'assignment' && a.childForFieldName('left')?.text === attr);
      return own?.length === 1 ? pyConstNumber(m, own[0].childForFieldName('right'), depth + 1, text) : null;
    }
    case 'call': {
      const fn = u.childForFieldName('function');
      const path = calleePath(fn) ?? '';
      const { positional, keywords } = pyArgs(u);
      if (/^(int|float|round)$/.test(path) && positional.length >= 1) {
        const v = pyConstNumber(m, positional[0], depth + 1, true);
        return v === null ? null : path === 'int' ? Math.trunc(v) : path === 'round' ? Math.round(v) : v;
      }
      if (/^(min|max)$/.test(path) && positional.length >= 2) {
        const vals = positional.map((a) => pyConstNumber(m, a, depth + 1, text));
        if (vals.some((v) => v === null)) return null;
        return path === 'min' ? Math.min(...(vals as number[])) : Math.max(...(vals as number[]));
      }
      if (path === 'len' && positional.length === 1) return pyLiteralLength(m, positional[0], depth + 1);
      if (path === 'getattr' && positional.length === 3) return pyConstNumber(m, positional[2], depth + 1, text);
      if (fn?.type === 'attribute' && CONFIG_GETTERS.test(lastName(path) ?? '')) {
        const d = keywords.get('default') ?? positional[1];
        return d ? pyConstNumber(m, d, depth + 1, true) : null;
      }
      return null;
    }
    default:
      return null;
  }
}

function enclosingClassDef(n: SyntaxNode): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) if (p.type === 'class_definition') return p;
  return null;
}

/** A name bound exactly once (in its function, else as a parameter default, else at module scope). */
function pyNameValue(m: PyModel, id: SyntaxNode, depth: number): number | null {
  const scope = m.scopeOf(id);
  const local = m.assignmentsIn(scope).get(id.text);
  if (local?.length) {
    if (local.length !== 1 || local[0].node.type !== 'assignment' || local[0].value.type === 'assignment') return null;
    return pyConstNumber(m, local[0].value, depth + 1);
  }
  if (scope.type === 'function_definition') {
    for (const p of scope.childForFieldName('parameters')?.namedChildren ?? []) {
      if (p.type !== 'default_parameter' && p.type !== 'typed_default_parameter') continue;
      if (p.childForFieldName('name')?.text === id.text) return pyConstNumber(m, p.childForFieldName('value'), depth + 1);
    }
    // A loop target or other local binding shadows the module name.
    for (let p: SyntaxNode | null = id.parent; p && p.id !== scope.id; p = p.parent) {
      const left = p.type === 'for_statement' || p.type === 'for_in_clause' ? p.childForFieldName('left') : null;
      if (left && left.descendantsOfType('identifier').some((x) => x.text === id.text)) return null;
    }
  }
  const root = id.tree.rootNode;
  if (scope.id === root.id) return null;
  const top = m.assignmentsIn(root).get(id.text);
  if (top?.length !== 1 || top[0].node.type !== 'assignment' || top[0].value.type === 'assignment') return null;
  return pyConstNumber(m, top[0].value, depth + 1);
}

/** Length of a list/tuple/set literal (or a name bound once to one). */
function pyLiteralLength(m: PyModel, e: SyntaxNode | null | undefined, depth: number): number | null {
  let u = unparen(e);
  if (u?.type === 'identifier' && depth < 10) {
    const sets = m.assignmentsIn(m.scopeOf(u)).get(u.text) ?? m.assignmentsIn(u.tree.rootNode).get(u.text);
    u = sets?.length === 1 && sets[0].value.type !== 'assignment' ? unparen(sets[0].value) : null;
  }
  if (!u || !['list', 'tuple', 'set', 'dictionary'].includes(u.type)) return null;
  const items = u.namedChildren.filter((c) => c.type !== 'comment');
  return items.some((c) => c.type === 'list_splat' || c.type === 'dictionary_splat') ? null : items.length;
}

/** Iterations of a Python iterable: `range(...)`, a literal, `enumerate`/`zip`/`reversed` of those, `x[:k]` (at most k). */
export function pyIterableCount(m: PyModel, e: SyntaxNode | null | undefined, depth = 0): number | null {
  const u = unparen(e);
  if (!u || depth > 6) return null;
  if (u.type === 'call') {
    const path = calleePath(u.childForFieldName('function')) ?? '';
    const { positional } = pyArgs(u);
    if (path === 'range') {
      const v = positional.map((a) => pyConstNumber(m, a));
      if (v.length === 0 || v.some((x) => x === null)) return null;
      const [a, b, s] = v.length === 1 ? [0, v[0]!, 1] : [v[0]!, v[1]!, v[2] ?? 1];
      return s > 0 ? Math.max(0, Math.ceil((b - a) / s)) : s < 0 ? Math.max(0, Math.ceil((a - b) / -s)) : null;
    }
    if (/^(enumerate|reversed|sorted|list|tuple|iter)$/.test(path) && positional.length >= 1) return pyIterableCount(m, positional[0], depth + 1);
    if (path === 'zip' && positional.length >= 1) {
      const v = positional.map((a) => pyIterableCount(m, a, depth + 1));
      return v.some((x) => x === null) ? null : Math.min(...(v as number[]));
    }
    return null;
  }
  if (u.type === 'subscript') {
    const slice = u.childForFieldName('subscript');
    // `x[:k]` (no start, no step): at most k items.
    if (slice?.type === 'slice' && /^:[^:]+$/.test(slice.text.replace(/\s+/g, '')) && slice.namedChildren.length === 1) {
      const k = pyConstNumber(m, slice.namedChildren[0]);
      return k !== null && k >= 0 ? k : null;
    }
    return null;
  }
  return pyLiteralLength(m, u, depth + 1);
}

/** Iterations of a Python loop: a `for` statement, or a comprehension (product of its `for` clauses). */
export function pyTripCount(m: PyModel, loop: SyntaxNode): number | null {
  if (loop.type === 'for_statement') return pyIterableCount(m, loop.childForFieldName('right'));
  if (/comprehension|generator_expression/.test(loop.type)) {
    let n = 1;
    for (const c of loop.namedChildren.filter((x) => x.type === 'for_in_clause')) {
      const k = pyIterableCount(m, c.childForFieldName('right'));
      if (k === null) return null;
      n *= k;
    }
    return n;
  }
  return null;
}

/** The iterable or bound text of a loop header (`range(n_streams)`, `i < n_tiles`), for naming heuristics. */
export function loopHeaderText(loop: SyntaxNode): string {
  if (loop.type === 'for_statement' && loop.childForFieldName('right')) return loop.childForFieldName('right')!.text;
  if (loop.type === 'for_statement') return [loop.childForFieldName('initializer'), loop.childForFieldName('condition')].map((n) => n?.text ?? '').join(';');
  if (loop.type === 'for_range_loop') return loop.childForFieldName('right')?.text ?? '';
  if (loop.type === 'while_statement' || loop.type === 'do_statement') return loop.childForFieldName('condition')?.text ?? '';
  return loop.namedChildren.filter((c) => c.type === 'for_in_clause').map((c) => c.childForFieldName('right')?.text ?? '').join(';');
}

// ---------------------------------------------------------------------------------------------
// C++

/** Constant value, falling back to the default of a parameter of the enclosing function (`int n_streams = 4`). */
export function cppConstOrDefault(m: CudaModel, e: SyntaxNode | null | undefined): number | null {
  if (!e) return null;
  const v = m.constValue(e);
  if (v !== null || e.type !== 'identifier') return v;
  const fn = m.functionOf(e);
  for (const p of fn?.params ?? []) {
    if (p.type !== 'optional_parameter_declaration' || p.childForFieldName('declarator')?.text !== e.text) continue;
    return m.constValue(p.childForFieldName('default_value'));
  }
  return null;
}

const arrayCounts = new WeakMap<CudaModel, Map<string, number | null>>();

/** Array sizes declared under `root` (declarations, members, parameters); a name declared twice with different sizes is null. */
function collectArrayCounts(m: CudaModel, root: SyntaxNode): Map<string, number | null> {
  const counts = new Map<string, number | null>();
  const put = (k: string, v: number | null) => counts.set(k, counts.has(k) && counts.get(k) !== v ? null : v);
  const unwrap = (t: SyntaxNode | null) => {
    // `std::array<cudaStream_t, 12>& lanes`, `cudaStream_t (&lanes)[4]`.
    while (t && (t.type === 'reference_declarator' || t.type === 'parenthesized_declarator')) t = t.namedChildren[t.namedChildren.length - 1] ?? null;
    return t;
  };
  for (const d of root.descendantsOfType(['declaration', 'field_declaration', 'parameter_declaration'])) {
    const type = d.childForFieldName('type');
    const templ = type?.type === 'qualified_identifier' ? type.childForFieldName('name') : type;
    const targs = templ?.type === 'template_type' ? templ.childForFieldName('arguments')?.namedChildren ?? [] : [];
    const tname = templ?.type === 'template_type' ? templ.childForFieldName('name')?.text ?? '' : '';
    for (const decl of d.childrenForFieldName('declarator')) {
      const target = unwrap(decl.type === 'init_declarator' ? decl.childForFieldName('declarator') : decl);
      const value = decl.type === 'init_declarator' ? decl.childForFieldName('value') : null;
      if (target?.type === 'array_declarator') {
        const size = target.childForFieldName('size');
        const inner = unwrap(target.childForFieldName('declarator'));
        if (inner) put(inner.text, size ? m.constValue(size) : value?.type === 'initializer_list' ? value.namedChildren.length : null);
        continue;
      }
      if (!target) continue;
      if (tname === 'array' && targs[1]) put(target.text, m.constValue(targs[1]));
      else if (tname === 'vector' && value?.type === 'argument_list' && value.namedChildren.length >= 1) put(target.text, m.constValue(value.namedChildren[0]));
      else if (tname === 'vector' && value?.type === 'initializer_list') put(target.text, value.namedChildren.length);
    }
  }
  return counts;
}

/**
 * Element count of a C++ array: `T a[16]`, `std::array<T, 16> a`, `std::vector<T> a(16)`, declared in
 * the function around `at` (locals and parameters) or else anywhere in the source (members, globals).
 */
export function cppElementCount(m: CudaModel, name: string, at?: SyntaxNode): number | null {
  const key = name.replace(/^this->/, '');
  const fn = at ? m.functionOf(at) : null;
  if (fn) {
    const local = collectArrayCounts(m, fn.node);
    if (local.has(key)) return local.get(key) ?? null;
  }
  let counts = arrayCounts.get(m);
  if (!counts) arrayCounts.set(m, (counts = collectArrayCounts(m, m.source.root)));
  return counts.get(key) ?? null;
}

/**
 * Iterations of a C++ loop: `for (int i = A; i < B; ++i)` (also `<=`, `!=`, `i += k`, counting down
 * with `--i` and `>`/`>=`), or a range-for over an array of known size or a braced list.
 */
export function cppTripCount(m: CudaModel, loop: SyntaxNode): number | null {
  if (loop.type === 'for_range_loop') {
    const right = loop.childForFieldName('right');
    if (!right) return null;
    if (right.type === 'initializer_list') return right.namedChildren.length;
    return right.type === 'identifier' || right.type === 'field_expression' ? cppElementCount(m, right.text, loop) : null;
  }
  if (loop.type !== 'for_statement') return null;
  const init = loop.childForFieldName('initializer');
  let v: string | null = null;
  let start: number | null = null;
  if (init?.type === 'declaration') {
    const d = init.namedChildren.find((c) => c.type === 'init_declarator');
    v = d?.childForFieldName('declarator')?.text ?? null;
    start = cppConstOrDefault(m, d?.childForFieldName('value'));
  } else if (init?.type === 'assignment_expression') {
    v = init.childForFieldName('left')?.text ?? null;
    start = cppConstOrDefault(m, init.childForFieldName('right'));
  }
  const cond = loop.childForFieldName('condition');
  if (!v || start === null || cond?.type !== 'binary_expression') return null;
  let op = cond.childForFieldName('operator')?.type ?? '';
  let bound = cond.childForFieldName('right');
  if (cond.childForFieldName('right')?.text === v) {
    bound = cond.childForFieldName('left');
    op = ({ '>': '<', '>=': '<=', '<': '>', '<=': '>=' } as Record<string, string>)[op] ?? op;
  } else if (cond.childForFieldName('left')?.text !== v) return null;
  const end = cppConstOrDefault(m, bound);
  if (end === null) return null;
  const upd = loop.childForFieldName('update')?.text.replace(/\s+/g, '') ?? '';
  const step = upd === `++${v}` || upd === `${v}++` ? 1 : upd === `--${v}` || upd === `${v}--` ? -1 : (() => {
    const s = new RegExp(`^${v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([+-])=(\\d+)$`).exec(upd);
    return s ? (s[1] === '+' ? 1 : -1) * Number(s[2]) : 0;
  })();
  if (step > 0 && (op === '<' || op === '!=')) return Math.max(0, Math.ceil((end - start) / step));
  if (step > 0 && op === '<=') return Math.max(0, Math.floor((end - start) / step) + 1);
  if (step < 0 && op === '>') return Math.max(0, Math.ceil((start - end) / -step));
  if (step < 0 && op === '>=') return Math.max(0, Math.floor((start - end) / -step) + 1);
  return null;
}

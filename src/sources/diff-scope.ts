import type { Language } from '../core/types.js';

/**
 * Cost follows the diff (issue #20). With `--scope added` only findings on added lines are
 * reported, so the bodies of functions the diff does not touch, and that the touched ones do not
 * need, are blanked before the parse: same-length masking (spaces, newlines kept), so every kept
 * line and column stays exact, and the parser and the checks skip the blanked code.
 *
 * Kept: every function whose extent meets an added line; the functions that call one of them
 * (their launch configuration, the arguments they pass); all functions those reach by name,
 * transitively (callees, kernels a host function launches, device helpers, the `_get_kernel()`
 * a Python function takes its kernel string from); for a method, every method of its class
 * (members set in one method are read in another); module-level code always (includes, macros,
 * constants, types, module-level kernel strings). Names are matched as identifier tokens, so
 * overloads and same-named methods are all kept: over-keeping costs time, never findings.
 *
 * The structure comes from a lexical pass (comments, strings, preprocessor lines, brackets,
 * Python indentation), not from a parse: the point is to parse less. Whatever the pass is unsure
 * of (unbalanced braces, a function body split by `#if`/`#else`, a brace it cannot classify) is
 * kept; a file it cannot follow at all is not masked. Rules whose findings rest on facts about the
 * whole file get those facts kept (see `launchSites`), else the whole file.
 *
 * GPU_REVIEW_DIFF_SCOPE=0 switches it off (the corpus script compares both).
 */

/** A top-level function (or method) found by the lexical pass. */
export interface FunctionExtent {
  name: string;
  /** Class (C++ class/struct/union or Python class) it is a member of, if any. */
  owner: string | null;
  /** String index of the first character of the head (C family: after the previous `;`/`{`/`}`). */
  headStart: number;
  /** [bodyStart, bodyEnd): the characters that masking blanks. */
  bodyStart: number;
  bodyEnd: number;
  /** False when the body must not be blanked (split by a preprocessor conditional, say). */
  maskable: boolean;
}

export interface Structure {
  functions: FunctionExtent[];
  /** C family: class/struct/union bodies by name ([start, end) string ranges). */
  classes?: Map<string, Array<[number, number]>>;
  /** The text with comments, string contents and preprocessor lines blanked (same length). */
  code: string;
}

export interface ScopeResult {
  /** The text to parse: `text` with the untouched bodies blanked. */
  text: string;
  kept: number;
  masked: number;
  maskedChars: number;
}

export function diffScopeEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.GPU_REVIEW_DIFF_SCOPE !== '0';
}

const PYTHON_SCOPE = false;

/** Files shorter than this are parsed whole (the lexical pass is cheap enough that none is, by default). */
const MIN_CHARS = 0;

/**
 * `text` with the function bodies the added lines (1-based) do not need blanked; null when nothing
 * would be blanked (or the file could not be followed), so the caller parses `text` unchanged.
 */
export function maskUntouched(text: string, language: Language, added: ReadonlySet<number>, minChars = MIN_CHARS): ScopeResult | null {
  if (text.length < minChars || added.size === 0) return null;
  // Python is parsed whole for now: its model follows values across functions in more ways than
  // the kept set covers (launch counts, cache keys, CCCL options; see test/sources/diff-scope.test.ts).
  const s = language === 'cuda' || language === 'luisa-dsl' ? cStructure(text) : language === 'python' && PYTHON_SCOPE ? pythonStructure(text) : null;
  if (!s || s.functions.length < 2) return null;
  const keep = keptFunctions(s, text, added, language);
  if (!keep) return null;
  const ranges: Array<[number, number]> = [];
  let maskedChars = 0;
  s.functions.forEach((f, i) => {
    if (keep.has(i) || !f.maskable) return;
    // Python: a block needs one statement, `0` where the first one started (bodyStart).
    ranges.push([language === 'python' ? f.bodyStart + 1 : f.bodyStart, f.bodyEnd]);
    maskedChars += f.bodyEnd - f.bodyStart;
  });
  if (!ranges.length) return null;
  ranges.sort((a, b) => a[0] - b[0]);
  let out = blankRanges(text, ranges);
  if (language === 'python') {
    const parts: string[] = [];
    let at = 0;
    for (const [a] of ranges) {
      parts.push(out.slice(at, a - 1), '0');
      at = a;
    }
    parts.push(out.slice(at));
    out = parts.join('');
  }
  return { text: out, kept: s.functions.length - ranges.length, masked: ranges.length, maskedChars };
}

/** `text` with the [start, end) ranges (sorted, disjoint) blanked: spaces, newlines kept. */
function blankRanges(text: string, ranges: Array<[number, number]>): string {
  const parts: string[] = [];
  let at = 0;
  for (const [a, b] of ranges) {
    if (b <= a) continue;
    parts.push(text.slice(at, a));
    for (let k = a; k < b; ) {
      let nl = text.indexOf('\n', k);
      if (nl < 0 || nl >= b) nl = b;
      parts.push(' '.repeat(nl - k));
      if (nl < b) parts.push('\n');
      k = nl + 1;
    }
    at = b;
  }
  parts.push(text.slice(at));
  return parts.join('');
}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;

function identifiers(code: string, from: number, to: number): Set<string> {
  const out = new Set<string>();
  IDENT.lastIndex = 0;
  const part = code.slice(from, to);
  for (const m of part.matchAll(IDENT)) out.add(m[0]);
  return out;
}

/** Line (1-based) of each string index, by binary search over line starts. */
function lineIndex(text: string): (index: number) => number {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return (index: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

const PY_CONSTRUCTION = new Set(['__init__', '__new__', '__post_init__', '__call__']);

/** Module-level words that say nothing about which function a line matters to. */
const COMMON = new Set([
  'int', 'float', 'double', 'char', 'void', 'bool', 'unsigned', 'signed', 'long', 'short', 'const', 'static', 'auto', 'return', 'if', 'else', 'for', 'while',
  'self', 'def', 'class', 'import', 'from', 'as', 'None', 'True', 'False', 'in', 'is', 'not', 'and', 'or', 'define', 'include', 'struct', 'template', 'typename',
]);

function keptFunctions(s: Structure, text: string, added: ReadonlySet<number>, language: Language): Set<number> | null {
  const lineOf = lineIndex(text);
  const fns = s.functions;
  const firstChar = (i: number) => {
    while (i < s.code.length && /\s/.test(s.code[i])) i++;
    return i;
  };
  const span = fns.map((f) => [lineOf(firstChar(f.headStart)), lineOf(Math.max(f.bodyStart, f.bodyEnd - 1))] as const);
  const touched = new Set<number>();
  const moduleWords = new Set<string>();
  const lines = s.code.split('\n');
  for (const l of added) {
    const i = span.findIndex(([a, b]) => a <= l && l <= b);
    if (i >= 0) touched.add(i);
    else if (l >= 1 && l <= lines.length && lines[l - 1].trim()) {
      // Module-level code changed: every function that names what the line names needs it.
      for (const w of lines[l - 1].match(IDENT) ?? []) if (!COMMON.has(w)) moduleWords.add(w);
    }
  }
  if (!touched.size && !moduleWords.size) return null;
  const bodyIds = fns.map((f) => identifiers(s.code, f.bodyStart, f.bodyEnd));
  const byName = new Map<string, number[]>();
  const byOwner = new Map<string, number[]>();
  fns.forEach((f, i) => {
    byName.set(f.name, [...(byName.get(f.name) ?? []), i]);
    if (f.owner) byOwner.set(f.owner, [...(byOwner.get(f.owner) ?? []), i]);
  });
  // Python: `self.x` read here and set in another method of the class (the model follows
  // attributes across methods); a class called by name: its constructor methods.
  const py = language === 'python';
  const selfUses = py ? fns.map((f) => new Set([...s.code.slice(f.bodyStart, f.bodyEnd).matchAll(/\bself\.(\w+)/g)].map((m) => m[1]))) : [];
  const selfSets = py ? fns.map((f) => new Set([...s.code.slice(f.bodyStart, f.bodyEnd).matchAll(/\bself\.(\w+)\s*(?:\[[^\]\n]*\]\s*)?(?:[-+*/|&%@^]|\/\/|\*\*|<<|>>)?=(?!=)/g)].map((m) => m[1]))) : [];
  // Names a C-family body assigns, increments or changes through a container method.
  const writes = new Map<number, Set<string>>();
  const writesOf = (j: number): Set<string> => {
    let w = writes.get(j);
    if (!w) {
      const body = s.code.slice(fns[j].bodyStart, fns[j].bodyEnd);
      w = new Set<string>();
      for (const m of body.matchAll(/\b(\w+)\s*(?:\[[^\]\n]*\]\s*)?(?:[-+*/|&%^]|<<|>>)?=(?!=)/g)) w.add(m[1]);
      for (const m of body.matchAll(/\b(\w+)\s*(?:\.|->)\s*(?:insert|emplace\w*|erase|push_back|pop_back|clear|reset|resize|assign|swap|try_emplace)\s*\(/g)) w.add(m[1]);
      for (const m of body.matchAll(/(?:\+\+|--)\s*(\w+)|\b(\w+)\s*(?:\+\+|--)/g)) w.add(m[1] ?? m[2]);
      writes.set(j, w);
    }
    return w;
  };
  // Names declared in a class body outside its methods' bodies: its members.
  const memberCache = new Map<string, Set<string>>();
  const memberWords = (owner: string): Set<string> => {
    let m = memberCache.get(owner);
    if (!m) {
      m = new Set<string>();
      for (const [a, b] of s.classes?.get(owner) ?? []) {
        // Field declarations only: a method's head (its name, parameter types) is not state.
        const inside = fns.filter((f) => f.bodyStart >= a && f.bodyEnd <= b).sort((x, y) => x.bodyStart - y.bodyStart);
        let at = a;
        for (const f of inside) {
          for (const w of identifiers(s.code, at, Math.max(at, f.headStart))) m.add(w);
          at = Math.max(at, f.bodyEnd);
        }
        for (const w of identifiers(s.code, at, b)) m.add(w);
      }
      for (const w of COMMON) m.delete(w);
      memberCache.set(owner, m);
    }
    return m;
  };
  const keep = new Set<number>();
  const work: number[] = [];
  // `add` keeps a function and what it reaches (callees, class mates); `context` keeps one for what
  // it says about the kept ones (a caller's launch, a whole-file fact) without following its own
  // callees, which would pull in every function a `main` or an init routine calls.
  const add = (i: number) => {
    if (!keep.has(i) || context.has(i)) {
      keep.add(i);
      context.delete(i);
      work.push(i);
    }
  };
  const context = new Set<number>();
  const addContext = (i: number) => {
    if (!keep.has(i)) {
      keep.add(i);
      context.add(i);
      for (const j of byName.get(fns[i].name) ?? []) if (!keep.has(j)) addContext(j);
    }
  };
  for (const i of touched) add(i);
  for (let i = 0; i < fns.length; i++) if ([...moduleWords].some((w) => bodyIds[i].has(w))) add(i);
  // Callees, class mates and constructors, transitively.
  const expand = () => {
    while (work.length) {
      const i = work.pop()!;
      const f = fns[i];
      // Same name, same fingerprint scope: duplicates are numbered in file order (pipeline.ts).
      for (const j of byName.get(f.name) ?? []) add(j);
      if (py && f.owner) {
        for (const j of byOwner.get(f.owner) ?? []) if ([...selfUses[i]].some((a) => selfSets[j].has(a))) add(j);
      }
      // C family: a class mate that writes a member this method uses (state set in one method
      // and read in another); kept for that, not followed further.
      if (!py && f.owner) {
        const members = memberWords(f.owner);
        const shared = [...bodyIds[i]].filter((w) => members.has(w));
        // LuisaCompute codegen classes judge one method by what any mate does with any member
        // (a lazy map filled in one method, read in another): all of the class is kept there.
        const mate = language === 'luisa-dsl' ? () => true : (j: number) => shared.some((w) => writesOf(j).has(w));
        if (shared.length || language === 'luisa-dsl') for (const j of byOwner.get(f.owner) ?? []) if (!keep.has(j) && mate(j)) addContext(j);
      }
      for (const id of bodyIds[i]) {
        for (const j of byName.get(id) ?? []) add(j);
        if (py) for (const j of byOwner.get(id) ?? []) if (PY_CONSTRUCTION.has(fns[j].name)) add(j);
      }
    }
  };
  expand();
  // Callers of a kept function, transitively: the launch and the arguments it passes, and whether
  // it runs in a loop or a hot path somewhere up the chain.
  for (let grew = true; grew; ) {
    grew = false;
    const names = new Set([...keep].map((i) => fns[i].name));
    for (let i = 0; i < fns.length; i++) {
      if (keep.has(i)) continue;
      for (const n of names) {
        if (bodyIds[i].has(n)) {
          addContext(i);
          grew = true;
          break;
        }
      }
    }
  }
  // Functions that state facts about the whole file (streams, pools, launches, caches, compile
  // options: see FACTS) are always kept: rules read them from wherever they are.
  for (const i of factSites(s, language)) addContext(i);
  // A launch anywhere kept is judged with its kernel (shared memory, registers, launch bounds):
  // the kernels kept functions launch are kept with what they reach.
  for (const i of [...keep]) {
    for (const m of s.code.slice(fns[i].bodyStart, fns[i].bodyEnd).matchAll(/(\w+)\s*(?:<[^<>;]*>\s*)?<<</g)) for (const j of byName.get(m[1]) ?? []) add(j);
  }
  expand();
  // Callees, class mates and constructors, transitively.
  return keep;
}

/**
 * Whole-file facts. Several rules judge a site by what the rest of the file does: every launch
 * with the same literal block size is one finding (kernel/hardcoded-block-size), the default
 * stream matters in code that also uses streams (sync/null-stream-in-multistream-code), managed
 * memory next to a pool, a pool's release threshold set elsewhere, kernel caches and their keys,
 * compile options, cache configs, L2 windows. A function that names any of these is always kept,
 * so each such fact the whole-file review sees is there; what stays masked is code that states
 * none: kernels and device helpers nothing touched reaches, host code that calls no GPU API.
 */
const FACTS: Partial<Record<Language, RegExp>> = {
  cuda: /\b(u?int64_t|size_t|ptrdiff_t|long\s+long|numel|nbytes)\b|<<<|\bcu[A-Z]\w*\s*\(|\bcuda[A-Z]\w*|\bnvrtc\w*|[Ss]tream|[Pp]ool|[Ee]vent|[Gg]raph|thrust::|cub::|rmm::|__managed__|[Cc]ache|[Pp]ersist|[Ll]aunch|[Cc]ompile|\bdim3\b|[Mm]alloc|[Ff]ree\b|[Mm]emcpy|[Mm]emset|[Ss]ynchron/,
  'luisa-dsl': /[Ss]tream|[Cc]ommand|[Cc]ompile|[Ss]ynchron|[Dd]ispatch|[Kk]ernel[123]D|[Cc]allable|[Bb]uffer|[Ii]mage|[Dd]evice|[Ll]aunch|[Cc]ache|\$\w+/,
  python: /\b(cp|cupy|cuda|cupyx|numba|torch|jax|runtime|nvrtc|cudf|rmm)\b|[Ss]tream|[Pp]ool|[Kk]ernel|[Ll]aunch|[Cc]ompile|[Cc]ache|[Mm]odule|[Ee]vent|[Ss]ynchron|\b(np|numpy)\b|options|get_function|\bdevice\b|\bgrid\b|\bblock\b/,
};

function factSites(s: Structure, language: Language): Set<number> {
  const out = new Set<number>();
  const facts = FACTS[language];
  if (!facts) return out;
  s.functions.forEach((f, i) => {
    if (facts.test(s.code.slice(f.bodyStart, f.bodyEnd))) out.add(i);
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// C family (CUDA, LuisaCompute C++)

/**
 * Comments, string and character contents and preprocessor lines become spaces (newlines kept);
 * the offsets of conditional directives are returned so bodies split by them are not blanked.
 */
function sanitizeC(text: string): { code: string; conditionals: Array<{ at: number; kind: 'if' | 'else' | 'endif' }> } | null {
  const ranges: Array<[number, number]> = [];
  const conditionals: Array<{ at: number; kind: 'if' | 'else' | 'endif' }> = [];
  const n = text.length;
  const at = (k: number) => text.charCodeAt(k);
  const isWord = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
  const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
  let lineStart = true;
  let i = 0;
  while (i < n) {
    const c = at(i);
    if (c === 10) {
      lineStart = true;
      i++;
      continue;
    }
    if (c === 32 || c === 9 || c === 13 || c === 12 || c === 11) {
      i++;
      continue;
    }
    if (c === 35 /* # */ && lineStart) {
      let j = i;
      // A directive runs to the end of the line, with backslash continuations.
      while (j < n) {
        const d = at(j);
        if (d === 10) {
          if (at(j - 1) === 92 || (at(j - 1) === 13 && at(j - 2) === 92)) {
            j++;
            continue;
          }
          break;
        }
        if (d === 47 && at(j + 1) === 42) {
          const e = text.indexOf('*/', j + 2);
          j = e < 0 ? n : e + 2;
          continue;
        }
        j++;
      }
      const word = /^#\s*(\w+)/.exec(text.slice(i, Math.min(j, i + 40)))?.[1] ?? '';
      if (word === 'if' || word === 'ifdef' || word === 'ifndef') conditionals.push({ at: i, kind: 'if' });
      else if (word === 'else' || word === 'elif' || word === 'elifdef' || word === 'elifndef') conditionals.push({ at: i, kind: 'else' });
      else if (word === 'endif') conditionals.push({ at: i, kind: 'endif' });
      ranges.push([i, j]);
      i = j;
      continue;
    }
    lineStart = false;
    if (c === 47 /* / */ && at(i + 1) === 47) {
      let j = i;
      while (j < n && !(at(j) === 10 && at(j - 1) !== 92)) j++;
      ranges.push([i, j]);
      i = j;
      continue;
    }
    if (c === 47 && at(i + 1) === 42) {
      const e = text.indexOf('*/', i + 2);
      const j = e < 0 ? n : e + 2;
      ranges.push([i, j]);
      i = j;
      continue;
    }
    if (c === 34 /* " */) {
      // Raw string R"delim( ... )delim" (with an optional u8/u/U/L prefix before the R).
      if (at(i - 1) === 82 && /(^|[^A-Za-z0-9_])(u8|u|U|L)?R$/.test(text.slice(Math.max(0, i - 4), i))) {
        const open = text.indexOf('(', i);
        if (open < 0 || open - i > 17) return null;
        const delim = text.slice(i + 1, open);
        const close = text.indexOf(`)${delim}"`, open);
        if (close < 0) return null;
        ranges.push([i + 1, close + delim.length + 1]);
        i = close + delim.length + 2;
        continue;
      }
      let j = i + 1;
      while (j < n && at(j) !== 34 && at(j) !== 10) j += at(j) === 92 ? 2 : 1;
      ranges.push([i + 1, j]);
      i = j + 1;
      continue;
    }
    if (c === 39 /* ' */) {
      // A digit separator (1'000'000), not a character literal.
      if (isHex(at(i - 1)) && isHex(at(i + 1)) && /[0-9]/.test(numberStart(text, i))) {
        i++;
        continue;
      }
      let j = i + 1;
      while (j < n && at(j) !== 39 && at(j) !== 10) j += at(j) === 92 ? 2 : 1;
      ranges.push([i + 1, j]);
      i = j + 1;
      continue;
    }
    if (isWord(c)) {
      // Skip the whole word: a quote right after it is a prefix (u8"", L'') or a separator, handled above.
      let j = i + 1;
      while (j < n && isWord(at(j))) j++;
      i = j;
      if (at(j) === 39 && isHex(at(j - 1)) && isHex(at(j + 1))) continue;
      continue;
    }
    i++;
  }
  return { code: blankRanges(text, ranges), conditionals };
}

/** First character of the alphanumeric run that ends before `i`. */
function numberStart(text: string, i: number): string {
  let k = i - 1;
  while (k > 0 && /[0-9A-Za-z_']/.test(text[k - 1])) k--;
  return text[k] ?? '';
}

const QUALIFIER_TAIL = /(\s*(\bconst\b|\bvolatile\b|\bnoexcept\b(\s*\([^()]*\))?|\boverride\b|\bfinal\b|\bmutable\b|\btry\b|&&|&|\bthrow\s*\([^()]*\)|__attribute__\s*\(\([^()]*(\([^()]*\)[^()]*)*\)\)|->\s*[\w:<>,\s*&]+(\([^()]*\))?))+\s*$/;

/** Index of the `(` that matches the `)` at `close`, or -1. */
function matchingOpen(code: string, close: number, floor: number): number {
  let depth = 0;
  for (let k = close; k >= floor; k--) {
    const ch = code[k];
    if (ch === ')') depth++;
    else if (ch === '(') {
      depth--;
      if (depth === 0) return k;
    }
  }
  return -1;
}

export function cStructure(text: string): Structure | null {
  const san = sanitizeC(text);
  if (!san) return null;
  const { code, conditionals } = san;
  const functions: FunctionExtent[] = [];
  // Each open brace: what it opened. 'container' (namespace, extern "C", class body) is scanned
  // for functions; 'function' and 'opaque' (initializers, enums, what the pass cannot classify) are not.
  const stack: Array<{ kind: 'container' | 'function' | 'opaque'; owner: string | null; fn?: FunctionExtent; cls?: string; start?: number }> = [];
  const classes = new Map<string, Array<[number, number]>>();
  let headStart = 0;
  let inner = 0; // depth inside a function or opaque brace
  for (let i = 0; i < code.length; i++) {
    const ch = code[i];
    if (inner > 0) {
      if (ch === '{') inner++;
      else if (ch === '}') {
        inner--;
        if (inner === 0) {
          const top = stack.pop()!;
          if (top.fn) {
            top.fn.bodyEnd = i;
            functions.push(top.fn);
          }
          headStart = i + 1;
        }
      }
      continue;
    }
    if (ch === ';') headStart = i + 1;
    else if (ch === '}') {
      if (!stack.length) return null;
      const top = stack.pop()!;
      if (top.cls) classes.set(top.cls, [...(classes.get(top.cls) ?? []), [top.start!, i]]);
      headStart = i + 1;
    } else if (ch === '{') {
      const head = code.slice(headStart, i);
      const owner = stack.length ? stack[stack.length - 1].owner : null;
      const kind = classify(head);
      if (kind.kind === 'function') {
        stack.push({ kind: 'function', owner, fn: { name: kind.name, owner: kind.owner ?? owner, headStart, bodyStart: i + 1, bodyEnd: -1, maskable: true } });
        inner = 1;
      } else if (kind.kind === 'container') {
        stack.push({ kind: 'container', owner: kind.owner ?? owner, ...(kind.owner ? { cls: kind.owner, start: i + 1 } : {}) });
        headStart = i + 1;
      } else {
        stack.push({ kind: 'opaque', owner });
        inner = 1;
      }
    }
  }
  if (stack.length || inner) return null;
  // A body with a conditional directive that does not open and close inside it may hold one of
  // two alternative heads or tails: keep it as it is.
  for (const f of functions) {
    let depth = 0;
    let bad = false;
    for (const c of conditionals) {
      if (c.at < f.bodyStart || c.at >= f.bodyEnd) continue;
      if (c.kind === 'if') depth++;
      else if (c.kind === 'endif') depth--;
      else if (depth === 0) bad = true;
      if (depth < 0) bad = true;
    }
    if (bad || depth !== 0) f.maskable = false;
  }
  return { functions, code, classes };
}

function classify(rawHead: string): { kind: 'function'; name: string; owner?: string } | { kind: 'container'; owner?: string } | { kind: 'opaque' } {
  const head = rawHead.replace(/\s+/g, ' ').trim();
  if (/^(export )?namespace\b/.test(head) || /^(inline )?namespace\b/.test(head) || /^extern "[^"]*"$/.test(head)) return { kind: 'container' };
  const stripped = head.replace(QUALIFIER_TAIL, '');
  if (stripped.endsWith(')')) {
    const open = matchingOpen(stripped, stripped.length - 1, 0);
    if (open < 0) return { kind: 'opaque' };
    const before = stripped.slice(0, open).trimEnd();
    // `= [&](…)` / `= [](…) mutable`: a lambda held by a variable at namespace scope.
    const lambda = /(\w+)\s*(\[[^\]]*\])?\s*=\s*\[[^\]]*\]$/.exec(before);
    if (lambda) return { kind: 'function', name: lambda[1] };
    if (/[=]/.test(before.replace(/operator\s*\S+$/, '').replace(/<[^<>]*>/g, ''))) return { kind: 'opaque' };
    const m = /(?:(\w+)\s*::\s*)?(~?\w+|operator\s*[^\s\w(]+)\s*(<[^()]*>)?$/.exec(before);
    if (!m) return { kind: 'opaque' };
    // if/for/while/switch cannot open a body at this level: the pass lost track, keep it whole.
    if (/^(if|for|while|switch|catch|return|sizeof|decltype|alignas)$/.test(m[2])) return { kind: 'opaque' };
    return { kind: 'function', name: m[2].replace(/^~/, ''), ...(m[1] ? { owner: m[1] } : {}) };
  }
  const cls = /\b(class|struct|union)\b\s+(?:\w+\s*\([^()]*\)\s*|alignas\s*\([^()]*\)\s*|__align__\s*\([^()]*\)\s*|[A-Z_][A-Z0-9_]*\s+)*(\w+)/.exec(head);
  if (cls && !/=/.test(head.slice(0, cls.index))) return { kind: 'container', owner: cls[2] };
  return { kind: 'opaque' };
}

// ---------------------------------------------------------------------------------------------
// Python

/** Comments and string contents become spaces (newlines kept); quotes stay. */
function sanitizePython(text: string): string | null {
  const ranges: Array<[number, number]> = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 35 /* # */) {
      let j = text.indexOf('\n', i);
      if (j < 0) j = n;
      ranges.push([i, j]);
      i = j;
      continue;
    }
    if (c === 34 || c === 39) {
      const q1 = text[i];
      const triple = text.charCodeAt(i + 1) === c && text.charCodeAt(i + 2) === c;
      const q = triple ? q1.repeat(3) : q1;
      let j = i + q.length;
      for (;;) {
        if (j >= n) return null;
        const d = text.charCodeAt(j);
        if (d === 92) {
          j += 2;
          continue;
        }
        if (!triple && d === 10) break;
        if (d === c && (!triple || (text.charCodeAt(j + 1) === c && text.charCodeAt(j + 2) === c))) break;
        j++;
      }
      ranges.push([i + q.length, j]);
      i = j + q.length;
      continue;
    }
    i++;
  }
  return blankRanges(text, ranges);
}

export function pythonStructure(text: string): Structure | null {
  const code = sanitizePython(text);
  if (code === null) return null;
  const lines = code.split('\n');
  const starts: number[] = [];
  let off = 0;
  for (const l of lines) {
    starts.push(off);
    off += l.length + 1;
  }
  // Logical lines: a physical line that starts outside brackets and after no backslash continuation.
  const logical: Array<{ row: number; indent: number; text: string; endRow: number }> = [];
  let depth = 0;
  let cont = false;
  let cur: { row: number; indent: number; text: string; endRow: number } | null = null;
  for (let r = 0; r < lines.length; r++) {
    const l = lines[r];
    const t = l.trim();
    if (depth === 0 && !cont) {
      if (!t) continue;
      cur = { row: r, indent: l.length - l.trimStart().length, text: l, endRow: r };
      logical.push(cur);
    } else if (cur) {
      cur.text += '\n' + l;
      cur.endRow = r;
    }
    for (const ch of l) {
      if (ch === '(' || ch === '[' || ch === '{') depth++;
      else if (ch === ')' || ch === ']' || ch === '}') depth = Math.max(0, depth - 1);
    }
    cont = /\\\s*$/.test(l);
  }
  if (depth !== 0) return null;
  const functions: FunctionExtent[] = [];
  // Open blocks: indentation of their header, and what they are.
  const blocks: Array<{ indent: number; kind: 'class' | 'def' | 'other'; name: string }> = [];
  let open: { fn: FunctionExtent; indent: number; lastRow: number } | null = null;
  const close = () => {
    if (open) {
      open.fn.bodyEnd = starts[open.lastRow] + lines[open.lastRow].length;
      functions.push(open.fn);
      open = null;
    }
  };
  for (let k = 0; k < logical.length; k++) {
    const L = logical[k];
    while (blocks.length && blocks[blocks.length - 1].indent >= L.indent) blocks.pop();
    if (open && L.indent <= open.indent) close();
    if (open) {
      open.lastRow = L.endRow;
      continue;
    }
    const head = L.text.trimStart();
    const def = /^(?:async\s+)?def\s+(\w+)/.exec(head);
    const cls = /^class\s+(\w+)/.exec(head);
    const opensBlock = /:\s*$/.test(L.text);
    if (def && opensBlock && !blocks.some((b) => b.kind === 'def')) {
      const next = logical[k + 1];
      if (next && next.indent > L.indent) {
        const owner = blocks.length && blocks[blocks.length - 1].kind === 'class' ? blocks[blocks.length - 1].name : null;
        const bodyStart = starts[next.row] + next.indent;
        open = { fn: { name: def[1], owner, headStart: starts[L.row] + L.indent, bodyStart, bodyEnd: -1, maskable: true }, indent: L.indent, lastRow: L.endRow };
      }
      blocks.push({ indent: L.indent, kind: 'def', name: def[1] });
    } else if (opensBlock) {
      blocks.push({ indent: L.indent, kind: cls ? 'class' : 'other', name: cls?.[1] ?? '' });
    }
  }
  close();
  return { functions, code };
}

/**
 * The text the review parses for a whole post-change file: with `--scope added` (and
 * GPU_REVIEW_DIFF_SCOPE not 0), the untouched bodies blanked; else `text` itself.
 */
export function textForScope(text: string, language: Language, added: ReadonlySet<number>, scope: string, enabled: boolean): string {
  if (scope !== 'added' || !enabled) return text;
  return maskUntouched(text, language, added)?.text ?? text;
}

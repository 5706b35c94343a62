import { alternation } from '../core/regex.js';
/**
 * Same-length rewrites of CUDA C++ so that tree-sitter parses it without ERROR nodes. Every
 * character keeps its string index and every line break stays where it was, so positions in the
 * masked text are positions in the file.
 */

/**
 * A copy of C/C++ `text` in which comments and string/char literals are replaced by NUL characters
 * (line breaks kept), so that searches in it only ever match code.
 */
export function codeView(text: string): string {
  // Built from slices: an array of one-character strings per input character was most of this
  // function's time and garbage on megabytes of CUDA.
  const parts: string[] = [];
  let last = 0;
  const blank = (from: number, to: number): void => {
    parts.push(text.slice(last, from), text.slice(from, to).replace(/[^\n]/g, '\0'));
    last = to;
  };
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text[i];
    let end = i + 1;
    if (c === '/' && text[i + 1] === '/') {
      end = i + 2;
      while (end < n && !(text[end] === '\n' && text[end - 1] !== '\\')) end++;
      blank(i, end);
    } else if (c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      end = close < 0 ? n : close + 2;
      blank(i, end);
    } else if (c === '"' || (c === "'" && !isDigitSeparator(text, i))) {
      const raw =
        c === '"' && /(?<![\w$])(?:u8|[uUL])?R$/.test(text.slice(Math.max(0, i - 4), i))
          ? /^[^\s()\\]{0,16}\(/.exec(text.slice(i + 1, i + 18))
          : null;
      if (raw) {
        const close = text.indexOf(`)${raw[0].slice(0, -1)}"`, i + raw[0].length);
        end = close < 0 ? n : close + raw[0].length + 1;
      } else {
        while (end < n && text[end] !== c && text[end] !== '\n') end += text[end] === '\\' ? 2 : 1;
        end = Math.min(n, end + 1);
      }
      blank(i, end);
    }
    i = end;
  }
  parts.push(text.slice(last));
  return parts.join('');
}

/** C++14 digit separators (`1'000'000`, `0xFF'FF`) are a `'` inside a token that starts with a digit. */
function isDigitSeparator(text: string, i: number): boolean {
  let s = i;
  while (s > 0 && /[\w.']/.test(text[s - 1])) s--;
  return s < i && /[0-9]/.test(text[s]);
}

/** End (exclusive) of the balanced `(...)` that opens at `open`, or -1. */
function closeParen(view: string, open: number): number {
  let depth = 0;
  for (let i = open; i < view.length; i++) {
    if (view[i] === '(') depth++;
    else if (view[i] === ')' && --depth === 0) return i + 1;
  }
  return -1;
}

// Only `(` may follow a launch's `>>>`; this tells it apart from `>>>` closing nested templates.
const CALL_AFTER = /[\s\0]*\(/y;

/**
 * Index of the `>>>` that closes the launch configuration starting at `from`, or -1. Template
 * argument lists in the configuration (`f<A<B<int>>>(n)`) are tracked as angle depth; when that
 * guess fails (`n<4 ? 1 : 2`, a comparison), a second pass ignores angles.
 */
function launchEnd(view: string, from: number): number {
  for (const angles of [true, false]) {
    let depth = 0;
    let angle = 0;
    for (let i = from; i < view.length; i++) {
      const c = view[i];
      if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') {
        if (--depth < 0) break;
      } else if (depth > 0) continue;
      else if (c === ';') break;
      else if (angle === 0 && view.startsWith('>>>', i)) {
        CALL_AFTER.lastIndex = i + 3;
        if (CALL_AFTER.test(view)) return i;
      } else if (!angles) continue;
      else if (c === '<' && /[\w$]/.test(view[i - 1] ?? '') && !/[<=]/.test(view[i + 1] ?? '')) angle++;
      else if (c === '>' && angle > 0 && view[i - 1] !== '-') angle--;
    }
  }
  return -1;
}

// tree-sitter-cuda 0.21.1 rejects these (ERROR nodes); tree-sitter-cpp rejects every CUDA keyword.
const CUDA_ARG_ATTRS = ['cluster_dims', 'maxnreg'];
const CPP_ARG_ATTRS = [...CUDA_ARG_ATTRS, 'launch_bounds'];
const CPP_KEYWORDS = [
  'global', 'device', 'host', 'shared', 'constant', 'managed', 'forceinline', 'noinline', 'grid_constant',
];

/**
 * Rewrite CUDA syntax that `grammar` cannot parse, keeping length and line breaks:
 * - `__align__(16)` → `  alignas(16)` (alignment stays visible; both grammars parse `alignas`);
 * - `__cluster_dims__(2,1,1)`, `__maxnreg__(64)` (and `__launch_bounds__(...)` for 'cpp') →
 *   `[[cluster_dims(2,1,1)]]`: a standard attribute, arguments moved two columns left; blanked
 *   instead when the arguments span lines;
 * - `__host__`/`__device__` after a lambda capture list → spaces (neither grammar takes an
 *   attribute there);
 * - 'cpp' only: `__global__`, `__device__`, `__shared__`, ... → `[[global]]`, `[[device]]`, ...,
 *   and each launch `k<<<g, b>>>(x)` → `k(  g, b  )(x)`, a call whose callee is a call.
 * `launches` holds the [start, end) of every `<<<...>>>` configuration, in both modes.
 */
export function maskCuda(
  text: string,
  grammar: 'cuda' | 'cpp',
): { text: string; launches: Array<{ start: number; end: number }> } {
  const view = codeView(text);
  // Made on the first edit: most files under tree-sitter-cuda need none, and splitting and
  // joining every character of a large file costs as much as a good part of its parse.
  let out: string[] | null = null;
  const put = (at: number, s: string): void => {
    out ??= text.split('');
    for (let k = 0; k < s.length; k++) out[at + k] = s[k];
  };
  const blank = (from: number, to: number): void => {
    out ??= text.split('');
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };

  for (const m of view.matchAll(/(?<![\w$])__align__(?=\s*\()/g)) put(m.index, '  alignas');

  const argAttrs = grammar === 'cpp' ? CPP_ARG_ATTRS : CUDA_ARG_ATTRS;
  for (const m of view.matchAll(new RegExp(`(?<![\\w$])__(${alternation(argAttrs)})__(?=\\s*\\()`, 'g'))) {
    const end = closeParen(view, view.indexOf('(', m.index));
    if (end < 0) continue;
    const whole = text.slice(m.index, end);
    if (whole.includes('\n')) blank(m.index, end);
    else put(m.index, `[[${m[1]}${text.slice(m.index + m[0].length, end)}]]`);
  }

  // `[[nodiscard]] __device__ int f()` also has `]` before `__device__`; a lambda has `(` or `{` after.
  // The lookahead first: a lookbehind tried at every position rescans each run of blanks (quadratic
  // on long blanked stretches, such as the bodies sources/diff-scope.ts masks).
  const lambdaQualifiers = /(?=__(?:host|device)__)(?<=\]\s*)(?:__host__|__device__)(?:\s+(?:__host__|__device__))*(?=\s*[({])/g;
  for (const m of view.matchAll(lambdaQualifiers)) blank(m.index, m.index + m[0].length);

  if (grammar === 'cpp') {
    for (const m of view.matchAll(new RegExp(`(?<![\\w$])__(${alternation(CPP_KEYWORDS)})__(?![\\w$])`, 'g'))) {
      if (((out as string[] | null)?.[m.index] ?? text[m.index]) === '_') put(m.index, `[[${m[1]}]]`);
    }
  }

  const launches: Array<{ start: number; end: number }> = [];
  for (const m of view.matchAll(/<<</g)) {
    if (/operator\s*$/.test(view.slice(Math.max(0, m.index - 16), m.index))) continue;
    const close = launchEnd(view, m.index + 3);
    if (close < 0) continue;
    launches.push({ start: m.index, end: close + 3 });
    if (grammar === 'cpp') {
      put(m.index, '(  ');
      put(close, '  )');
    }
  }
  const edited = out as string[] | null; // assigned in the closures above
  return { text: edited ? edited.join('') : text, launches };
}

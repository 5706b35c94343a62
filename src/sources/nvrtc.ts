import type { SyntaxNode } from '../core/types.js';
import { calleePath } from './syntax.js';

/**
 * CUDA source held in Python strings (catalog §1.2). The result keeps, for every output line, the
 * Python positions its characters came from, so a finding in the kernel maps to the exact Python
 * line and column even through escapes, f-string interpolations and `{placeholder}` substitutions.
 */
export interface ExtractedKernel {
  text: string;
  /** Per output row: breakpoints [outColumn, pythonRow, pythonColumn], ascending by outColumn. */
  origins: Array<Array<[number, number, number]>>;
  /** Placeholder identifier (`__FMT_name__`) to the source text of its `.format(name=...)` argument. */
  placeholders: Map<string, string | null>;
  isTemplate: boolean;
  anchor: SyntaxNode;
  /** Name the kernel string is bound to, when it is assigned to one. */
  variable?: string;
}

const COMPILE_CALLS = /(^|\.)(compile_kernels|RawKernel|RawModule|nvrtcCreateProgram|make_kernel_cache_key|ElementwiseKernel|ReductionKernel)$/;

class Builder {
  text = '';
  origins: Array<Array<[number, number, number]>> = [[]];
  private col = 0;
  private lastOrigin: [number, number] | null = null;

  /**
   * Append `s`, whose first character came from Python (row, col); `contiguous` if the rest follow
   * it one to one on the same Python line. A contiguous run costs one breakpoint check, not one per
   * character.
   */
  push(s: string, row: number, col: number, contiguous = true): void {
    if (contiguous && s.length > 1 && !s.includes('\n')) {
      this.mark(row, col);
      this.text += s;
      this.col += s.length;
      this.lastOrigin = [row, col + s.length - 1];
      return;
    }
    for (let i = 0; i < s.length; i++) {
      const ch = s[i];
      const c = contiguous ? col + i : col;
      this.mark(row, c);
      this.lastOrigin = [row, c];
      this.text += ch;
      if (ch === '\n') {
        this.origins.push([]);
        this.col = 0;
        this.lastOrigin = null;
      } else {
        this.col++;
      }
    }
  }

  private mark(row: number, col: number): void {
    const cur = this.origins[this.origins.length - 1];
    const expected = this.lastOrigin && this.lastOrigin[0] === row && this.lastOrigin[1] === col - 1;
    if (!expected || cur.length === 0) cur.push([this.col, row, col]);
  }
}

function stringParts(node: SyntaxNode): SyntaxNode[] {
  if (node.type === 'string') return [node];
  if (node.type === 'concatenated_string') return node.namedChildren.filter((c) => c.type === 'string');
  return [];
}

export interface Piece {
  kind: 'string' | 'opaque';
  node: SyntaxNode;
}

/** Flatten `a + "..." + (b)` and implicit concatenation into pieces, following names assigned once. */
export function flatten(node: SyntaxNode, assigns: Map<string, SyntaxNode | null>, depth = 0): Piece[] {
  if (depth > 20) return [{ kind: 'opaque', node }];
  switch (node.type) {
    case 'string':
    case 'concatenated_string':
      return stringParts(node).map((n) => ({ kind: 'string', node: n }));
    case 'parenthesized_expression':
      return node.namedChildren[0] ? flatten(node.namedChildren[0], assigns, depth + 1) : [];
    case 'binary_operator': {
      const op = node.childForFieldName('operator')?.type;
      const l = node.childForFieldName('left');
      const r = node.childForFieldName('right');
      if (op === '+' && l && r) return [...flatten(l, assigns, depth + 1), ...flatten(r, assigns, depth + 1)];
      return [{ kind: 'opaque', node }];
    }
    case 'identifier': {
      const v = assigns.get(node.text);
      if (v && (v.type === 'string' || v.type === 'concatenated_string' || v.type === 'binary_operator' || v.type === 'parenthesized_expression')) {
        return flatten(v, assigns, depth + 1);
      }
      return [{ kind: 'opaque', node }];
    }
    default:
      return [{ kind: 'opaque', node }];
  }
}

const SIMPLE_ESCAPES: Record<string, string> = { n: '\n', t: '\t', '\\': '\\', "'": "'", '"': '"', r: '', '0': '' };

function emitString(b: Builder, str: SyntaxNode, pyText: string, template: boolean, fstrCounter: { n: number }): void {
  const start = str.children.find((c) => c.type === 'string_start');
  const end = str.children.find((c) => c.type === 'string_end');
  if (!start || !end) return;
  const prefix = start.text.toLowerCase();
  const raw = prefix.includes('r');
  const fstr = prefix.includes('f');
  const interps = fstr ? str.children.filter((c) => c.type === 'interpolation') : [];
  const interpAt = new Map(interps.map((n) => [n.startIndex, n]));
  let row = start.endPosition.row;
  let col = start.endPosition.column;
  let i = start.endIndex;
  const stop = end.startIndex;
  const braceDoubling = template || fstr;
  while (i < stop) {
    const interp = interps.length ? interpAt.get(i) : undefined;
    if (interp) {
      b.push(`__FSTR_${fstrCounter.n++}__`, row, col, false);
      // Interpolations may span lines; re-sync the position from the node.
      i = interp.endIndex;
      row = interp.endPosition.row;
      col = interp.endPosition.column;
      continue;
    }
    const ch = pyText[i];
    if (ch === '\\' && !raw && i + 1 < stop) {
      const nx = pyText[i + 1];
      if (nx === '\n') {
        // Line continuation inside the literal: no character in the value.
        i += 2;
        row++;
        col = 0;
        continue;
      }
      const rep = SIMPLE_ESCAPES[nx];
      if (rep !== undefined) {
        if (rep) b.push(rep, row, col, false);
        i += 2;
        col += 2;
        continue;
      }
    }
    if (braceDoubling && (ch === '{' || ch === '}') && pyText[i + 1] === ch) {
      b.push(ch, row, col, false);
      i += 2;
      col += 2;
      continue;
    }
    if (template && ch === '{') {
      const m = /^\{([A-Za-z_][A-Za-z0-9_]*|\d*)(![rsa])?(:[^{}]*)?\}/.exec(pyText.slice(i, Math.min(stop, i + 200)));
      if (m) {
        b.push(`__FMT_${m[1] || 'pos'}__`, row, col, false);
        i += m[0].length;
        col += m[0].length;
        continue;
      }
    }
    if (ch !== '\n') {
      // A run of ordinary characters up to the next escape, brace, newline or interpolation.
      let j = i + 1;
      while (j < stop) {
        const c = pyText[j];
        if (c === '\\' || c === '{' || c === '}' || c === '\n' || (interps.length && interpAt.has(j))) break;
        j++;
      }
      b.push(pyText.slice(i, j), row, col);
      col += j - i;
      i = j;
      continue;
    }
    b.push(ch, row, col);
    i++;
    if (ch === '\n') {
      row++;
      col = 0;
    } else {
      col++;
    }
  }
}

export interface PythonModuleFacts {
  /** Names assigned exactly once (module or function scope) to their value node; null when assigned more than once. */
  assigns: Map<string, SyntaxNode | null>;
}

const assignmentMemo = new WeakMap<object, Map<string, SyntaxNode | null>>();

/** Names assigned exactly once in the module, to their value; memoized per tree (every kernel string of a module asks). */
export function collectSingleAssignments(root: SyntaxNode): Map<string, SyntaxNode | null> {
  const hit = assignmentMemo.get(root.tree);
  if (hit) return hit;
  const r = computeSingleAssignments(root);
  assignmentMemo.set(root.tree, r);
  return r;
}

function computeSingleAssignments(root: SyntaxNode): Map<string, SyntaxNode | null> {
  const assigns = new Map<string, SyntaxNode | null>();
  for (const a of root.descendantsOfType('assignment')) {
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (left?.type !== 'identifier' || !right) continue;
    assigns.set(left.text, assigns.has(left.text) ? null : right);
  }
  return assigns;
}

/** Find `.format(...)` calls whose receiver is `node` or a name bound to it; return their keyword arguments. */
interface FormatCall {
  call: SyntaxNode;
  receiver: SyntaxNode;
}

/** Every `X.format(...)` call of a module, with its (unparenthesized) receiver; found once per module. */
function collectFormatCalls(root: SyntaxNode): FormatCall[] {
  const out: FormatCall[] = [];
  for (const call of root.descendantsOfType('call')) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'format') continue;
    let obj = fn.childForFieldName('object');
    while (obj?.type === 'parenthesized_expression') obj = obj.namedChildren[0] ?? null;
    if (obj) out.push({ call, receiver: obj });
  }
  return out;
}

/** The `.format(...)` calls whose receiver is `top` or a name bound to it. */
function formatCalls(all: FormatCall[], top: SyntaxNode, variable: string | undefined): SyntaxNode[] {
  return all
    .filter(({ receiver: obj }) => (obj.startIndex === top.startIndex && obj.endIndex === top.endIndex) || (variable !== undefined && obj.type === 'identifier' && obj.text === variable))
    .map((f) => f.call);
}

/** The outermost expression a string takes part in: concatenations and parentheses. */
function topExpression(n: SyntaxNode): SyntaxNode {
  let cur = n;
  for (;;) {
    const p = cur.parent;
    if (!p) return cur;
    if (p.type === 'concatenated_string' || p.type === 'parenthesized_expression') {
      cur = p;
      continue;
    }
    if (p.type === 'binary_operator' && p.childForFieldName('operator')?.type === '+') {
      cur = p;
      continue;
    }
    return cur;
  }
}

function boundName(top: SyntaxNode): string | undefined {
  const p = top.parent;
  if (p?.type === 'assignment' && p.childForFieldName('right')?.id === top.id) {
    const l = p.childForFieldName('left');
    if (l?.type === 'identifier') return l.text;
  }
  return undefined;
}

/** Extract every CUDA kernel string of a Python module (catalog §1.2). */
export function extractKernels(root: SyntaxNode, pyText: string): ExtractedKernel[] {
  if (!/__global__|__device__|RawKernel|RawModule|compile_kernels|nvrtcCreateProgram|make_kernel_cache_key/.test(pyText)) return [];
  const assigns = collectSingleAssignments(root);
  const tops = new Map<number, SyntaxNode>();
  for (const s of root.descendantsOfType('string')) {
    if (s.parent?.type === 'string') continue;
    const t = s.text;
    if (!t.includes('__global__') && !t.includes('__device__')) continue;
    const top = topExpression(s);
    tops.set(top.startIndex, top);
  }
  for (const call of root.descendantsOfType('call')) {
    const path = calleePath(call.childForFieldName('function'));
    if (!path || !COMPILE_CALLS.test(path)) continue;
    const args = call.childForFieldName('arguments');
    if (!args) continue;
    const positional = args.namedChildren.filter((a) => a.type !== 'keyword_argument' && a.type !== 'comment');
    const kw = args.namedChildren.find((a) => a.type === 'keyword_argument' && /^(source|code)$/.test(a.childForFieldName('name')?.text ?? ''));
    let arg = kw?.childForFieldName('value') ?? (path.endsWith('make_kernel_cache_key') ? positional[1] : positional[0]);
    if (!arg) continue;
    if (arg.type === 'identifier') arg = assigns.get(arg.text) ?? arg;
    // `TEMPLATE.format(...)` passed directly: the template is the kernel.
    if (arg.type === 'call') {
      const f = arg.childForFieldName('function');
      if (f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'format') {
        const o = f.childForFieldName('object');
        arg = o?.type === 'identifier' ? (assigns.get(o.text) ?? o) : (o ?? arg);
      }
    }
    if (arg.type === 'string' || arg.type === 'concatenated_string' || arg.type === 'binary_operator') {
      const top = topExpression(arg.type === 'string' && arg.parent?.type === 'concatenated_string' ? arg.parent : arg);
      tops.set(top.startIndex, top);
    }
  }
  const out: ExtractedKernel[] = [];
  let allFormatCalls: FormatCall[] | undefined;
  const sortedTops = [...tops.values()].sort((a, b) => a.startIndex - b.startIndex);
  // A string nested in an already-selected expression is covered by it.
  const selected = sortedTops.filter((t, i) => !sortedTops.some((o, j) => j !== i && o.startIndex <= t.startIndex && o.endIndex >= t.endIndex && (o.startIndex !== t.startIndex || o.endIndex !== t.endIndex)));
  for (const top of selected) {
    const variable = boundName(top);
    const fmt = formatCalls((allFormatCalls ??= collectFormatCalls(root)), top, variable);
    const pieces = flatten(top, assigns);
    const isTemplate = fmt.length > 0 || pieces.some((p) => p.kind === 'string' && p.node.text.includes('{{'));
    const placeholders = new Map<string, string | null>();
    for (const call of fmt) {
      for (const a of call.childForFieldName('arguments')?.namedChildren ?? []) {
        if (a.type !== 'keyword_argument') continue;
        const name = a.childForFieldName('name')?.text;
        if (name) placeholders.set(`__FMT_${name}__`, a.childForFieldName('value')?.text ?? null);
      }
    }
    const b = new Builder();
    const counter = { n: 0 };
    for (const p of pieces) {
      if (p.kind === 'string') emitString(b, p.node, pyText, isTemplate, counter);
    }
    if (isTemplate) {
      for (const m of b.text.matchAll(/__FMT_([A-Za-z0-9_]+?)__/g)) {
        if (!placeholders.has(m[0])) placeholders.set(m[0], null);
      }
    }
    if (!/__global__|__device__/.test(b.text) && !/\b(void|float|int|double)\b/.test(b.text)) continue;
    out.push({ text: b.text, origins: b.origins, placeholders, isTemplate, anchor: top, variable });
  }
  return out;
}

/** Map a row/column of extracted text back to the Python file (0-based row and column). */
export function mapKernelPosition(k: ExtractedKernel, row: number, column: number): { row: number; column: number } | null {
  const bps = k.origins[row];
  if (!bps || bps.length === 0) {
    // An empty output line: take the position right after the previous line's last character.
    for (let r = row - 1; r >= 0; r--) {
      const prev = k.origins[r];
      if (prev && prev.length) return { row: prev[prev.length - 1][1], column: prev[prev.length - 1][2] };
    }
    return null;
  }
  let best = bps[0];
  for (const bp of bps) {
    if (bp[0] <= column) best = bp;
    else break;
  }
  return { row: best[1], column: best[2] + Math.max(0, column - best[0]) };
}

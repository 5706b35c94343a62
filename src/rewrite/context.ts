import type { SyntaxNode } from '../core/types.js';

/** The node a finding points at: the largest named node with exactly its range, else the smallest covering it. */
export function nodeAt(root: SyntaxNode, line: number, column: number, endLine: number, endColumn: number): SyntaxNode {
  const sr = line - 1;
  const sc = Math.max(0, column - 1);
  const er = endLine - 1;
  const ec = Math.max(0, endColumn - 1);
  const before = (r1: number, c1: number, r2: number, c2: number) => r1 < r2 || (r1 === r2 && c1 <= c2);
  let n: SyntaxNode = root.namedDescendantForPosition({ row: sr, column: sc });
  let exact: SyntaxNode | null = null;
  for (let p: SyntaxNode | null = n; p; p = p.parent) {
    if (!before(p.startPosition.row, p.startPosition.column, sr, sc)) continue;
    if (p.startPosition.row === sr && p.startPosition.column === sc && p.endPosition.row === er && p.endPosition.column === ec) exact = p;
    if (before(er, ec, p.endPosition.row, p.endPosition.column)) {
      n = p;
      if (!exact) break;
    }
    if (exact && (p.endPosition.row > er || (p.endPosition.row === er && p.endPosition.column > ec))) break;
  }
  return exact ?? n;
}

export function ancestorOf(n: SyntaxNode, types: readonly string[]): SyntaxNode | null {
  for (let p: SyntaxNode | null = n; p; p = p.parent) if (types.includes(p.type)) return p;
  return null;
}

export const CPP_FUNCTION = ['function_definition', 'lambda_expression'];
export const PY_FUNCTION = ['function_definition'];

/** The enclosing function, else the enclosing statement: the unit a rewrite is shown in. */
export function enclosingUnit(n: SyntaxNode, python: boolean): { node: SyntaxNode; label: string } {
  const fn = ancestorOf(n, python ? PY_FUNCTION : ['function_definition']);
  if (fn) {
    const name = fn.childForFieldName('name')?.text ?? fn.childForFieldName('declarator')?.childForFieldName('declarator')?.text ?? 'function';
    return { node: fn, label: `function ${name}` };
  }
  let s: SyntaxNode = n;
  while (s.parent && s.parent.type !== 'translation_unit' && s.parent.type !== 'module') s = s.parent;
  return { node: s, label: 'statement' };
}

/** Stream types of the CUDA runtime and the libraries that wrap it, with how to get the raw cudaStream_t. */
const STREAM_TYPES: Array<{ re: RegExp; raw: (name: string) => string }> = [
  { re: /^(?:const\s+)?(?:::)?cudaStream_t\s*&?$/, raw: (n) => n },
  { re: /^(?:const\s+)?(?:::)?(?:rmm::)?cuda_stream_view\s*&?$/, raw: (n) => `${n}.value()` },
  { re: /^(?:const\s+)?(?:::)?cuda::stream_ref\s*&?$/, raw: (n) => `${n}.get()` },
  { re: /^(?:const\s+)?(?:::)?(?:at::cuda::|c10::cuda::)CUDAStream\s*&?$/, raw: (n) => `${n}.stream()` },
];

export interface CppStream {
  name: string;
  /** Expression of type cudaStream_t. */
  raw: string;
}

/**
 * The one stream a CUDA function works on: its stream parameters and locals. Null with the reason
 * when there is none or more than one (a rewrite then cannot know which stream is meant).
 */
export function functionStream(fn: SyntaxNode | null): CppStream | { none: string } {
  if (!fn) return { none: 'the code is not inside a function' };
  const found = new Map<string, CppStream>();
  const consider = (typeText: string, declarator: SyntaxNode | null) => {
    if (!declarator) return;
    let d: SyntaxNode | null = declarator;
    let ref = '';
    while (d && (d.type === 'reference_declarator' || d.type === 'init_declarator')) {
      if (d.type === 'reference_declarator') ref = '&';
      d = d.type === 'init_declarator' ? d.childForFieldName('declarator') : d.namedChildren[0] ?? null;
    }
    if (!d || d.type !== 'identifier') return;
    const t = `${typeText.trim()}${ref}`.replace(/\s+/g, ' ');
    const hit = STREAM_TYPES.find((s) => s.re.test(t));
    if (hit) found.set(d.text, { name: d.text, raw: hit.raw(d.text) });
  };
  let fd = fn.childForFieldName('declarator');
  while (fd && fd.type !== 'function_declarator') fd = fd.childForFieldName('declarator') ?? fd.namedChildren.find((c) => /declarator$/.test(c.type)) ?? null;
  const params = fd?.childForFieldName('parameters');
  for (const p of params?.namedChildren ?? []) {
    if (p.type !== 'parameter_declaration' && p.type !== 'optional_parameter_declaration') continue;
    const quals = p.namedChildren.filter((c) => c.type === 'type_qualifier').map((c) => c.text).join(' ');
    consider(`${quals} ${p.childForFieldName('type')?.text ?? ''}`, p.childForFieldName('declarator'));
  }
  for (const d of fn.childForFieldName('body')?.descendantsOfType('declaration') ?? []) {
    const quals = d.namedChildren.filter((c) => c.type === 'type_qualifier').map((c) => c.text).join(' ');
    for (const decl of d.childrenForFieldName('declarator')) consider(`${quals} ${d.childForFieldName('type')?.text ?? ''}`, decl);
  }
  if (found.size === 0) return { none: 'the function has no stream (no cudaStream_t / stream_view parameter or local)' };
  if (found.size > 1) return { none: `the function has more than one stream (${[...found.keys()].join(', ')})` };
  return [...found.values()][0];
}

/** Split a comma list at top level (no commas inside (), [], {}, <> of templates). */
export function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if ('([{'.includes(ch)) depth++;
    else if (')]}'.includes(ch)) depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim() !== '') out.push(cur.trim());
  return out;
}

/** Python: the name cupy is imported under (`import cupy as cp` → cp), or null. */
export function cupyAlias(root: SyntaxNode): string | null {
  for (const s of root.namedChildren) {
    if (s.type !== 'import_statement') continue;
    for (const c of s.namedChildren) {
      if (c.type === 'dotted_name' && c.text === 'cupy') return 'cupy';
      if (c.type === 'aliased_import' && c.childForFieldName('name')?.text === 'cupy') return c.childForFieldName('alias')?.text ?? null;
    }
  }
  return null;
}

/** Every identifier text used in a subtree. */
export function identifiersIn(n: SyntaxNode): Set<string> {
  return new Set(n.descendantsOfType('identifier').map((i) => i.text));
}

/** A fresh name based on `base` that the unit does not use yet, or null after a few tries. */
export function freshName(base: string, used: ReadonlySet<string>): string | null {
  if (!used.has(base)) return base;
  for (let i = 2; i < 10; i++) if (!used.has(`${base}${i}`)) return `${base}${i}`;
  return null;
}

import type { SyntaxNode } from '../core/types.js';
import { contains } from './syntax.js';

/**
 * Structured control flow inside one host function, for Python and C++ alike: "does control reach b
 * after a" and "does this synchronization run on every path from a to b". The stream rules need both
 * to tell a host sync that really orders two operations from one that only sometimes runs.
 */

const PY_FUNCTIONS = new Set(['function_definition', 'lambda', 'class_definition']);
const CPP_FUNCTIONS = new Set(['function_definition', 'lambda_expression']);
const CPP_BLOCKS = new Set(['compound_statement', 'translation_unit', 'preproc_ifdef', 'preproc_if', 'preproc_else', 'preproc_elif', 'case_statement', 'declaration_list']);
const PY_LOOPS = new Set(['for_statement', 'while_statement']);
const CPP_LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);
// Constructs whose body (not their condition or header) may run zero times, or only on some paths.
const PY_CONDITIONAL = new Set([
  'if_statement', 'elif_clause', 'else_clause', 'for_statement', 'while_statement', 'except_clause', 'case_clause', 'match_statement',
  'conditional_expression', 'boolean_operator', 'list_comprehension', 'set_comprehension', 'dictionary_comprehension', 'generator_expression',
]);
const CPP_CONDITIONAL = new Set([
  'if_statement', 'else_clause', 'for_statement', 'while_statement', 'for_range_loop', 'switch_statement', 'case_statement', 'catch_clause',
  'conditional_expression',
]);

function isPython(n: SyntaxNode): boolean {
  let r = n;
  while (r.parent) r = r.parent;
  return r.type === 'module';
}

/** The function (or lambda) a node runs in; null at module / translation-unit scope. */
export function hostFunctionOf(n: SyntaxNode): SyntaxNode | null {
  const fns = isPython(n) ? PY_FUNCTIONS : CPP_FUNCTIONS;
  for (let p = n.parent; p; p = p.parent) if (fns.has(p.type)) return p;
  return null;
}

/** The innermost function, lambda or class body: reads inside a nested one run at another time. */
export function sameFunction(a: SyntaxNode, b: SyntaxNode): boolean {
  return hostFunctionOf(a)?.id === hostFunctionOf(b)?.id;
}

/** The statement of a C++ node (direct child of a block). */
export function cppStatement(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && !CPP_BLOCKS.has(cur.parent.type)) cur = cur.parent;
  return cur;
}

/** The statement of a Python node (direct child of a block or the module). */
export function pyStatement(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && cur.parent.type !== 'block' && cur.parent.type !== 'module') cur = cur.parent;
  return cur;
}

const PREPROC_CONDITIONALS = new Set(['preproc_if', 'preproc_ifdef', 'preproc_elif', 'preproc_elifdef']);
const PREPROC_ARMS = new Set(['preproc_else', 'preproc_elif', 'preproc_elifdef']);

/** Control reaches `b` after `a` in the same C++ function: no return/break between, not another branch. */
export function cppFlowsTo(a: SyntaxNode, b: SyntaxNode): boolean {
  if (b.startIndex < a.endIndex) return false;
  let cur = cppStatement(a);
  if (contains(cur, b)) return true;
  for (;;) {
    const block = cur.parent;
    if (!block) return false;
    for (let s = cur.nextNamedSibling; s; s = s.nextNamedSibling) {
      // `#else` / `#elif` arms are the other build of this `#if`: one build never runs both.
      if (PREPROC_ARMS.has(s.type) && PREPROC_CONDITIONALS.has(block.type)) continue;
      if (contains(s, b)) return true;
      if (['return_statement', 'throw_statement', 'break_statement', 'continue_statement', 'goto_statement'].includes(s.type)) return false;
    }
    let up: SyntaxNode = block;
    while (up.parent && !CPP_BLOCKS.has(up.parent.type)) {
      up = up.parent;
      if (CPP_FUNCTIONS.has(up.type)) return false;
    }
    if (!up.parent || contains(up, b)) return false;
    cur = up;
  }
}

/** Loops around `n` inside its function, innermost first (a loop's header runs once per entry, not per iteration). */
export function loopsAround(n: SyntaxNode): SyntaxNode[] {
  const py = isPython(n);
  const loops = py ? PY_LOOPS : CPP_LOOPS;
  const fns = py ? PY_FUNCTIONS : CPP_FUNCTIONS;
  const out: SyntaxNode[] = [];
  for (let child = n, p = n.parent; p && !fns.has(p.type); child = p, p = p.parent) {
    if (!loops.has(p.type)) continue;
    const body = p.childForFieldName('body');
    if (body && contains(body, child)) out.push(p);
  }
  return out;
}

/**
 * `n` runs whenever the region `top` (an ancestor) runs: no branch, loop body, `catch`/`except`, short
 * circuit or nested function between them. A condition (`while (cudaStreamQuery(s) != cudaSuccess)`,
 * `if (cudaStreamSynchronize(s) != cudaSuccess)`) runs at least once, as does a `do` body.
 */
export function unconditionalWithin(n: SyntaxNode, top: SyntaxNode): boolean {
  const py = isPython(n);
  const conditional = py ? PY_CONDITIONAL : CPP_CONDITIONAL;
  const fns = py ? PY_FUNCTIONS : CPP_FUNCTIONS;
  for (let child = n, p = n.parent; p && p.id !== top.id; child = p, p = p.parent) {
    if (fns.has(p.type)) return false;
    if (!py && p.type === 'binary_expression' && /^(&&|\|\|)$/.test(p.childForFieldName('operator')?.type ?? '') && p.childForFieldName('right')?.id === child.id) return false;
    if (py && p.type === 'boolean_operator') {
      if (p.childForFieldName('right')?.id === child.id) return false;
      continue;
    }
    if (!conditional.has(p.type)) continue;
    // The header of an if/while/for/switch runs whenever the statement does.
    const header = p.childForFieldName('condition') ?? (p.type === 'for_statement' && py ? p.childForFieldName('right') : p.childForFieldName('initializer'));
    if (header && contains(header, child)) continue;
    if (p.type === 'for_range_loop' && p.childForFieldName('right') && contains(p.childForFieldName('right')!, child)) continue;
    if (p.type === 'conditional_expression' && (py ? p.namedChildren[1]?.id === child.id : p.childForFieldName('condition')?.id === child.id)) continue;
    return false;
  }
  return true;
}

function lca(a: SyntaxNode, b: SyntaxNode): SyntaxNode | null {
  for (let p: SyntaxNode | null = a; p; p = p.parent) if (contains(p, b)) return p;
  return null;
}

/**
 * `s` runs on every path from `a` to `b` in one function: either it runs whenever `b` does and lies
 * between them, or it runs whenever `a` does and comes after it. When `b` precedes `a` inside a shared
 * loop, the path goes round the loop: `s` must come after `a` or before `b` within that loop's body.
 */
export function onEveryPath(s: SyntaxNode, a: SyntaxNode, b: SyntaxNode): boolean {
  if (!sameFunction(s, a) || !sameFunction(s, b)) return false;
  const postDominatesA = (region: SyntaxNode | null) => {
    const top = lca(s, a);
    return !!top && (!region || contains(region, top)) && s.startIndex >= a.endIndex && unconditionalWithin(s, top);
  };
  const dominatesB = (region: SyntaxNode | null) => {
    const top = lca(s, b);
    return !!top && (!region || contains(region, top)) && s.endIndex <= b.startIndex && unconditionalWithin(s, top);
  };
  if (a.endIndex <= b.startIndex) {
    if (s.startIndex < a.endIndex || s.endIndex > b.startIndex) return false;
    return dominatesB(null) || postDominatesA(null);
  }
  // Loop-carried: `b` reads what `a` produced in the previous iteration.
  const shared = loopsAround(b).find((l) => contains(l, a));
  if (!shared) return false;
  const body = shared.childForFieldName('body')!;
  if (!contains(body, s)) return false;
  if (s.startIndex >= a.endIndex) return postDominatesA(body);
  if (s.endIndex <= b.startIndex) return dominatesB(body);
  return false;
}

/**
 * The class a host function belongs to: the enclosing Python `class` or C++ `class`/`struct`, or for an
 * out-of-line C++ member (`Workspace::~Workspace()`) the class of that name in the same file.
 */
export function enclosingClass(n: SyntaxNode): SyntaxNode | null {
  const py = isPython(n);
  for (let p = n.parent; p; p = p.parent) {
    if (py ? p.type === 'class_definition' : p.type === 'class_specifier' || p.type === 'struct_specifier') return p;
  }
  if (py) return null;
  let fn: SyntaxNode | null = n.type === 'function_definition' ? n : hostFunctionOf(n);
  while (fn && fn.type !== 'function_definition') fn = hostFunctionOf(fn);
  let d = fn?.childForFieldName('declarator') ?? null;
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
  const name = d?.childForFieldName('declarator');
  const scope = name?.type === 'qualified_identifier' ? name.childForFieldName('scope')?.text : undefined;
  if (!scope) return null;
  let root = n;
  while (root.parent) root = root.parent;
  return root.descendantsOfType(['class_specifier', 'struct_specifier']).find((c) => c.childForFieldName('name')?.text === scope && c.childForFieldName('body')) ?? null;
}

/** Name of a host function (Python `def` name, C++ declarator name without its class qualifier). */
export function functionName(fn: SyntaxNode): string {
  if (fn.type !== 'function_definition') return '';
  const py = fn.childForFieldName('name');
  if (py && isPython(fn)) return py.text;
  let d = fn.childForFieldName('declarator');
  // Through pointer/reference declarators (`float& f()`: a reference_declarator has no declarator field).
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren.find((c) => c.type.endsWith('declarator')) ?? null;
  return d?.childForFieldName('declarator')?.text.split('::').pop()?.trim() ?? '';
}

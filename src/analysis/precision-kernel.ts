import type { CheckContext } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import type { CudaFunction } from './cuda.js';

/**
 * Kernel-side notions shared by the Pass 4 precision rules (catalog §3 Pass 4, 003 §6–§7.1): the
 * `compute_t` typedef of a precision template, the declared type of a kernel-local name, cast
 * targets, and whether a `{compute_type}` template is only ever formatted as fp64.
 */

/** `typedef X compute_t;` / `using compute_t = X;` in a CUDA source: the type text X, or null when absent. */
export function computeTTypedef(root: SyntaxNode): string | null {
  for (const t of root.descendantsOfType('type_definition')) {
    if (t.childrenForFieldName('declarator').some((d) => d.text === 'compute_t')) return t.childForFieldName('type')?.text ?? '';
  }
  for (const a of root.descendantsOfType('alias_declaration')) {
    if (a.childForFieldName('name')?.text === 'compute_t') return a.childForFieldName('type')?.text ?? '';
  }
  // `template <typename compute_t>`: the type is a template parameter, still a precision switch.
  if (/\b(typename|class)\s+compute_t\b/.test(root.text)) return 'compute_t';
  // Used as a type but declared nowhere in this source: the typedef comes from a preamble the kernel
  // string is joined with (`PRECISION_PREAMBLE + _SRC`) or an included header. It still exists.
  if (usesComputeTAsType(root)) return 'compute_t';
  return null;
}

/** `compute_t x = …`, `(compute_t)v`, `static_cast<compute_t>(v)`: compute_t named as a type. */
function usesComputeTAsType(root: SyntaxNode): boolean {
  return root.descendantsOfType(['type_identifier', 'primitive_type']).some((t) => t.text === 'compute_t');
}

/**
 * Error-free transformations and exact predicates (two-sum, two-product, double-double, Shewchuk
 * expansions, exact orientation tests): fp64 is their algorithm, not a compute-precision choice.
 */
const EXACT_ARITHMETIC_NAME = /(?:^|_)(?:fast_?)?two_?(?:sum|diff|prod(?:uct)?)(?:_|$)|^(?:fast)?two(?:Sum|Diff|Prod(?:uct)?)|(?:^|_)(?:dd|double_?double|exact|expansion|robust|shewchuk|split)(?:_|$)|Exact|Expansion|DoubleDouble/;
export function isExactArithmeticHelper(name: string, body: SyntaxNode | null | undefined): boolean {
  if (EXACT_ARITHMETIC_NAME.test(name)) return true;
  if (!body) return false;
  // Two-product by FMA: `p = a * b; e = fma(a, b, -p);` recovers the rounding error of the product.
  return body.descendantsOfType('call_expression').some((c) => {
    if (!/^(?:::|std::)?fma$/.test(c.childForFieldName('function')?.text ?? '')) return false;
    const args = c.childForFieldName('arguments')?.namedChildren ?? [];
    return args.length === 3 && /^-\s*\w+$/.test(args[2].text);
  });
}

export function unparenC(n: SyntaxNode | null | undefined): SyntaxNode | null {
  let cur = n ?? null;
  while (cur?.type === 'parenthesized_expression') cur = cur.namedChildren.find((c) => c.type !== 'comment') ?? null;
  return cur;
}

/** The target type and operand of `(T)v` or `static_cast<T>(v)`; null for other nodes. */
export function castOf(n: SyntaxNode | null | undefined): { type: string; value: SyntaxNode } | null {
  const u = unparenC(n);
  if (!u) return null;
  if (u.type === 'cast_expression') {
    const type = u.childForFieldName('type')?.text.replace(/\s+/g, ' ').trim();
    const value = u.childForFieldName('value');
    return type && value ? { type, value } : null;
  }
  if (u.type === 'call_expression') {
    const f = u.childForFieldName('function');
    if (f?.type !== 'template_function' || f.childForFieldName('name')?.text !== 'static_cast') return null;
    const type = f.childForFieldName('arguments')?.text.replace(/^<|>$/g, '').trim();
    const value = u.childForFieldName('arguments')?.namedChildren.find((c) => c.type !== 'comment');
    return type && value ? { type, value } : null;
  }
  return null;
}

/** Declared base type of a parameter or local of `fn` named `name`, and whether it is a pointer. */
export function declaredType(fn: CudaFunction, name: string): { type: string; pointer: boolean } | null {
  for (const p of fn.params) {
    const d = p.childForFieldName('declarator');
    if (!d) continue;
    const id = d.type === 'identifier' ? d : d.descendantsOfType('identifier').at(-1);
    if (id?.text === name) return { type: (p.childForFieldName('type')?.text ?? '').trim(), pointer: d.type !== 'identifier' };
  }
  for (const decl of fn.body?.descendantsOfType('declaration') ?? []) {
    for (const d of decl.childrenForFieldName('declarator')) {
      const inner = d.type === 'init_declarator' ? d.childForFieldName('declarator') : d;
      if (!inner) continue;
      const id = inner.type === 'identifier' ? inner : inner.descendantsOfType('identifier')[0];
      if (id?.text === name) return { type: (decl.childForFieldName('type')?.text ?? '').trim(), pointer: inner.type === 'pointer_declarator' };
    }
  }
  return null;
}

/**
 * True when the kernel's compute_t is fp64 only: `typedef double compute_t;`, or a `{placeholder}`
 * typedef whose every `.format(<placeholder>=...)` in the Python module passes the literal "double"
 * (directly or through a name assigned only "double"): the datacenter / CONSTRUCTIVE path.
 */
export function computeTOnlyDouble(source: Source, typedefText: string | null): boolean {
  const py = source.parent;
  const m = typedefText ? /^__FMT_(\w+?)__$/.exec(typedefText) : null;
  if (!py || !m) return typedefText === 'double';
  const key = m[1];
  const values: string[] = [];
  for (const kw of py.root.descendantsOfType('keyword_argument')) {
    if (kw.childForFieldName('name')?.text !== key) continue;
    const call = kw.parent?.parent;
    if (call?.type !== 'call' || !/\.format$/.test(call.childForFieldName('function')?.text ?? '')) continue;
    values.push(kw.childForFieldName('value')?.text ?? '');
  }
  if (!values.length) return false;
  const literal = (v: string, depth: number): boolean => {
    if (/^(['"])double\1$/.test(v)) return true;
    if (!/^\w+$/.test(v) || depth > 2) return false;
    const rhs = py.root
      .descendantsOfType('assignment')
      .filter((a) => a.childForFieldName('left')?.text === v)
      .map((a) => a.childForFieldName('right')?.text ?? '');
    return rhs.length > 0 && rhs.every((r) => literal(r, depth + 1));
  };
  return values.every((v) => literal(v, 0));
}

/**
 * A line of an extracted kernel can be rewritten in place only when the Python line holds exactly
 * that text (no escapes, doubled braces or `{placeholders}`); a plain CUDA line always can.
 */
export function lineRewritable(ctx: CheckContext, node: SyntaxNode, line: string): boolean {
  if (node.startPosition.row !== node.endPosition.row) return false;
  const py = ctx.source.parent;
  if (!py) return true;
  const at = ctx.source.toFile(node.startPosition.row, 0);
  if (!at) return false;
  return py.text.split('\n')[at.line - 1] === line;
}

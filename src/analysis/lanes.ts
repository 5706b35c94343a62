import type { SyntaxNode } from '../core/types.js';
import type { CudaFunction, CudaModel } from './cuda.js';
import { calleePath, lastName } from './syntax.js';

/**
 * What an integer expression of device code evaluates to in each of the 32 lanes of one warp
 * (catalog §1.4 WARP_UNIFORM / THREAD_DEPENDENT, made quantitative). Rules that reason about which
 * addresses a warp touches at once (shared-memory banks, coalescing) need the per-lane values, not
 * just "varies / does not vary".
 *
 * A value is `vals` (one number per lane) plus an unknown warp-uniform offset that is a multiple of
 * `mod` (`mod` 0: no offset, the values are exact; `mod` 1: any uniform offset). The offset matters
 * because `threadIdx.x` in the warp that starts at thread 32·w is `32·w + lane`: `threadIdx.x % 32`
 * is then exact, `threadIdx.x / 32` uniform. `null` means thread-dependent in a way the evaluator
 * cannot follow (a load indexed by the thread, a shuffle, an atomic's result).
 */
export interface LaneValue {
  vals: number[];
  mod: number;
}

/** How the threads of one warp are laid out in the block: `blockDim.x` and, when known, `blockDim.y`. */
export interface WarpShape {
  bx: number;
  by: number | null;
}

/** Integer template arguments (or type sizes) bound by name, for evaluating one instantiation. */
export type Bindings = ReadonlyMap<string, number | null>;

const WARP = 32;
const LANES = Array.from({ length: WARP }, (_, i) => i);
const PURE_CALLS = new Set(['min', 'max', 'abs', 'umin', 'umax', '__mul24', '__umul24', 'std::min', 'std::max']);

const gcd = (a: number, b: number): number => {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b) [a, b] = [b, a % b];
  return a;
};
const konst = (k: number): LaneValue => ({ vals: LANES.map(() => k), mod: 0 });
const UNIFORM: LaneValue = { vals: LANES.map(() => 0), mod: 1 };
export const isUniform = (v: LaneValue): boolean => v.vals.every((x) => x === v.vals[0]);
const isConst = (v: LaneValue): boolean => v.mod === 0 && isUniform(v);

/** `threadIdx.{x,y,z}` of each lane for a block whose x extent is `bx` (a divisor or a multiple of 32). */
export function threadIndex(shape: WarpShape, axis: 'x' | 'y' | 'z'): LaneValue | null {
  const { bx, by } = shape;
  if (bx >= WARP) {
    // Warps of a block wider than 32 threads lie within one row: y and z are warp-uniform.
    if (bx % WARP !== 0) return null;
    return axis === 'x' ? { vals: [...LANES], mod: WARP } : UNIFORM;
  }
  if (WARP % bx !== 0) return null;
  const rows = WARP / bx;
  if (axis === 'x') return { vals: LANES.map((l) => l % bx), mod: 0 };
  if (axis === 'y') {
    if (by === null || by % rows === 0) return { vals: LANES.map((l) => Math.floor(l / bx)), mod: by === rows ? 0 : rows };
    return null;
  }
  if (by !== null && by < rows) return rows % by === 0 ? { vals: LANES.map((l) => Math.floor(l / (bx * by))), mod: WARP / (bx * by) } : null;
  return UNIFORM;
}

export interface LaneEvaluator {
  eval(n: SyntaxNode | null | undefined): LaneValue | null;
}

/**
 * An evaluator for expressions inside `fn` (a kernel or device function) under one warp shape and
 * one set of template bindings. Locals assigned once are followed to their initializer; loop
 * counters with warp-uniform bounds and steps are uniform; by-value kernel parameters are uniform.
 */
export function laneEvaluator(model: CudaModel, fn: CudaFunction, shape: WarpShape, bindings: Bindings = new Map()): LaneEvaluator {
  const body = fn.body;
  const memo = new Map<number, LaneValue | null>();
  const localMemo = new Map<string, LaneValue | null>();
  const visiting = new Set<string>();

  // One scan of the body: where each local is declared and every write to it.
  const decls = new Map<string, SyntaxNode[]>();
  const writes = new Map<string, SyntaxNode[]>();
  if (body) {
    for (const d of body.descendantsOfType(['init_declarator', 'assignment_expression', 'update_expression'])) {
      if (d.type === 'init_declarator') {
        const name = d.childForFieldName('declarator');
        if (name?.type === 'identifier') decls.set(name.text, [...(decls.get(name.text) ?? []), d]);
      } else {
        const target = d.childForFieldName(d.type === 'assignment_expression' ? 'left' : 'argument');
        if (target?.type === 'identifier') writes.set(target.text, [...(writes.get(target.text) ?? []), d]);
      }
    }
  }
  const params = new Map<string, SyntaxNode>();
  for (const p of fn.params) {
    const d = p.childForFieldName('declarator');
    if (d?.type === 'identifier') params.set(d.text, p);
    else if (d && d.type !== 'pointer_declarator' && d.type !== 'reference_declarator' && d.type !== 'array_declarator') {
      const id = d.descendantsOfType('identifier')[0];
      if (id) params.set(id.text, p);
    }
  }

  const builtin = (obj: string, field: string): LaneValue | null => {
    const axis = field as 'x' | 'y' | 'z';
    if (!['x', 'y', 'z'].includes(field)) return null;
    if (obj === 'threadIdx') return threadIndex(shape, axis);
    if (obj === 'blockDim') {
      if (axis === 'x') return konst(shape.bx);
      if (axis === 'y' && shape.by !== null) return konst(shape.by);
      return UNIFORM;
    }
    if (obj === 'blockIdx' || obj === 'gridDim') return UNIFORM;
    return null;
  };

  const scopeOfDecl = (d: SyntaxNode): SyntaxNode | null => d.parent?.parent ?? null;
  const within = (outer: SyntaxNode, n: SyntaxNode) => outer.startIndex <= n.startIndex && n.endIndex <= outer.endIndex;

  const local = (name: string, at: SyntaxNode): LaneValue | null => {
    // The declaration in scope at `at`: the innermost (latest) one whose block holds it.
    const d = (decls.get(name) ?? []).filter((x) => x.startIndex < at.startIndex && scopeOfDecl(x) && within(scopeOfDecl(x)!, at)).pop() ?? null;
    const key = d ? `d${d.id}` : `n${name}`;
    const hit = localMemo.get(key);
    if (hit !== undefined) return hit;
    if (visiting.has(key)) return null;
    visiting.add(key);
    const v = d ? declared(name, d) : undeclared(name, at);
    visiting.delete(key);
    localMemo.set(key, v);
    return v;
  };
  const undeclared = (name: string, at: SyntaxNode): LaneValue | null => {
    if (bindings.has(name)) {
      const b = bindings.get(name);
      return b === null || b === undefined ? UNIFORM : konst(b);
    }
    const c = model.constValue(at);
    if (c !== null) return konst(c);
    const p = params.get(name);
    // By-value kernel parameters are the same for every thread; device-function parameters are whatever the caller passed.
    if (p && fn.isKernel) return /[*&[]/.test(p.text) ? null : UNIFORM;
    return null;
  };
  const declared = (name: string, d: SyntaxNode): LaneValue | null => {
    const scope = scopeOfDecl(d)!;
    const ws = (writes.get(name) ?? []).filter((w) => within(scope, w));
    const init = evalNode(d.childForFieldName('value'));
    if (!init) return null;
    if (ws.length === 0) return init;
    // Only loop counters are followed through writes: a write anywhere else may sit under a
    // lane-dependent branch (`if (v > 0) ++c;`), which makes the variable thread-dependent.
    const update = scope.type === 'for_statement' && scope.childForFieldName('initializer')?.id === d.parent?.id ? scope.childForFieldName('update') : null;
    if (!update) return null;
    for (const w of ws) {
      if (!within(update, w)) return null;
      if (w.type === 'update_expression') continue;
      const rhs = evalNode(w.childForFieldName('right'));
      const op = w.childForFieldName('operator')?.text ?? w.children[1]?.text;
      const additive = op === '+=' || op === '-=';
      // Scaling a lane-varying counter changes its pattern across lanes, not just its offset.
      if (!rhs || !isUniform(rhs) || !(additive || ((op === '<<=' || op === '>>=' || op === '*=') && isUniform(init)))) return null;
    }
    const cond = scope.childForFieldName('condition');
    if (cond && cond.type === 'binary_expression') {
      const other = [cond.childForFieldName('left'), cond.childForFieldName('right')].find((x) => x?.text !== name);
      const ov = other ? evalNode(other) : null;
      if (!ov || !isUniform(ov)) return null;
    }
    // A counter advanced by uniform steps keeps its per-lane pattern, shifted by an unknown amount.
    return { vals: init.vals, mod: 1 };
  };

  const binary = (op: string, a: LaneValue, b: LaneValue): LaneValue | null => {
    switch (op) {
      case '+':
        return { vals: a.vals.map((x, i) => x + b.vals[i]), mod: gcd(a.mod, b.mod) };
      case '-':
        return { vals: a.vals.map((x, i) => x - b.vals[i]), mod: gcd(a.mod, b.mod) };
      case '*': {
        if (isConst(b)) return { vals: a.vals.map((x) => x * b.vals[0]), mod: a.mod * Math.abs(b.vals[0]) };
        if (isConst(a)) return binary('*', b, a);
        if (isUniform(a) && isUniform(b)) return UNIFORM;
        if (a.mod === 0 && b.mod === 0) return { vals: a.vals.map((x, i) => x * b.vals[i]), mod: 0 };
        return null;
      }
      case '<<':
        return isConst(b) && b.vals[0] >= 0 && b.vals[0] < 31 ? binary('*', a, konst(2 ** b.vals[0])) : isUniform(a) && isUniform(b) ? UNIFORM : null;
      case '/':
      case '>>': {
        const k = isConst(b) ? (op === '/' ? b.vals[0] : b.vals[0] >= 0 && b.vals[0] < 31 ? 2 ** b.vals[0] : 0) : 0;
        if (k > 0 && a.mod % k === 0) return { vals: a.vals.map((x) => Math.floor(x / k)), mod: a.mod / k };
        if (isUniform(a) && isUniform(b)) return { vals: LANES.map(() => 0), mod: a.mod === 0 && b.mod === 0 ? 0 : 1 };
        return null;
      }
      case '%':
      case '&': {
        const k = isConst(b) ? (op === '%' ? b.vals[0] : (b.vals[0] & (b.vals[0] + 1)) === 0 ? b.vals[0] + 1 : 0) : 0;
        if (k > 0 && a.mod % k === 0) return { vals: a.vals.map((x) => ((x % k) + k) % k), mod: 0 };
        if (op === '&' && isConst(a) && !isConst(b)) return binary('&', b, a);
        if (a.mod === 0 && b.mod === 0) return { vals: a.vals.map((x, i) => (op === '%' ? (b.vals[i] ? x % b.vals[i] : 0) : x & b.vals[i])), mod: 0 };
        if (isUniform(a) && isUniform(b)) return UNIFORM;
        return null;
      }
      case '^':
      case '|': {
        const f = (x: number, y: number) => (op === '^' ? x ^ y : x | y);
        if (a.mod === 0 && b.mod === 0) return { vals: a.vals.map((x, i) => f(x, b.vals[i])), mod: 0 };
        // (32·w + l) ^ c == 32·w + (l ^ c) while c and l stay below the offset's power of two.
        const [v, c] = isConst(b) ? [a, b] : isConst(a) ? [b, a] : [null, null];
        if (v && c) {
          const top = Math.max(c.vals[0], ...v.vals);
          const p = 2 ** Math.ceil(Math.log2(top + 1));
          if (v.mod % p === 0 && v.vals.every((x) => x >= 0) && c.vals[0] >= 0) return { vals: v.vals.map((x) => f(x, c.vals[0])), mod: v.mod };
        }
        if (isUniform(a) && isUniform(b)) return UNIFORM;
        return null;
      }
      default:
        return isUniform(a) && isUniform(b) ? UNIFORM : null;
    }
  };

  function evalNode(n: SyntaxNode | null | undefined): LaneValue | null {
    if (!n) return null;
    const hit = memo.get(n.id);
    if (hit !== undefined) return hit;
    const v = evalUncached(n);
    memo.set(n.id, v);
    return v;
  }

  function evalUncached(n: SyntaxNode): LaneValue | null {
    switch (n.type) {
      case 'number_literal':
      case 'char_literal':
      case 'true':
      case 'false': {
        const c = model.constValue(n);
        // Floating-point literals: uniform, value irrelevant to indexing.
        return c === null ? UNIFORM : konst(c);
      }
      case 'identifier':
        if (n.text === 'warpSize') return konst(WARP);
        return local(n.text, n);
      case 'parenthesized_expression':
        return evalNode(n.namedChildren[0]);
      case 'cast_expression':
        return evalNode(n.childForFieldName('value'));
      case 'sizeof_expression': {
        const c = model.constValue(n);
        if (c !== null) return konst(c);
        const t = (n.childForFieldName('type')?.text ?? '').trim();
        const b = bindings.get(t);
        return b !== undefined && b !== null ? konst(b) : UNIFORM;
      }
      case 'field_expression': {
        const obj = n.childForFieldName('argument');
        const field = n.childForFieldName('field')?.text ?? '';
        if (obj?.type === 'identifier' && ['threadIdx', 'blockDim', 'blockIdx', 'gridDim'].includes(obj.text)) return builtin(obj.text, field);
        const base = evalNode(obj);
        return base && isUniform(base) ? UNIFORM : null;
      }
      case 'unary_expression': {
        const a = evalNode(n.childForFieldName('argument'));
        const op = n.childForFieldName('operator')?.text ?? n.children[0]?.text;
        if (!a) return null;
        if (op === '-') return { vals: a.vals.map((x) => -x), mod: a.mod };
        if (op === '+') return a;
        return isUniform(a) ? UNIFORM : null;
      }
      case 'binary_expression': {
        const a = evalNode(n.childForFieldName('left'));
        const b = evalNode(n.childForFieldName('right'));
        if (!a || !b) return null;
        const op = n.childForFieldName('operator')?.text ?? n.children[1]?.text ?? '';
        return binary(op, a, b);
      }
      case 'conditional_expression': {
        const c = evalNode(n.childForFieldName('condition'));
        const t = evalNode(n.childForFieldName('consequence'));
        const e = evalNode(n.childForFieldName('alternative'));
        if (!c || !t || !e || !isUniform(c)) return null;
        return isUniform(t) && isUniform(e) ? UNIFORM : null;
      }
      case 'subscript_expression': {
        // A load is uniform when every lane reads the same element.
        const idx = n.childForFieldName('indices') ?? n.namedChildren[1];
        const iv = idx ? (idx.namedChildren.length ? idx.namedChildren.map((c) => evalNode(c)) : [evalNode(idx)]) : [null];
        const base = n.childForFieldName('argument') ?? n.namedChildren[0];
        const bv = base?.type === 'identifier' ? UNIFORM : evalNode(base);
        return iv.every((v) => v && isUniform(v)) && bv && isUniform(bv) ? UNIFORM : null;
      }
      case 'call_expression': {
        const path = calleePath(n.childForFieldName('function')) ?? '';
        const name = lastName(path) ?? '';
        if (name === 'LaneId' || name === '__lane_id' || name === 'laneid') return { vals: [...LANES], mod: 0 };
        if (name === 'WarpId') return UNIFORM;
        if (!PURE_CALLS.has(path) && !PURE_CALLS.has(name)) return null;
        const args = n.childForFieldName('arguments')?.namedChildren ?? [];
        const vs = args.map((a) => evalNode(a));
        if (vs.some((v) => !v)) return null;
        if (vs.every((v) => isConst(v!))) {
          const xs = vs.map((v) => v!.vals[0]);
          return konst(/max/.test(name) ? Math.max(...xs) : /min/.test(name) ? Math.min(...xs) : name === 'abs' ? Math.abs(xs[0]) : xs.reduce((p, q) => p * q, 1));
        }
        return vs.every((v) => isUniform(v!)) ? UNIFORM : null;
      }
      default: {
        const c = model.constValue(n);
        return c === null ? null : konst(c);
      }
    }
  }

  return { eval: evalNode };
}

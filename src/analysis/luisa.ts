import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import { dslKindAt } from '../sources/luisa.js';
import type { DslKind, Source } from '../sources/types.js';
import { cudaModel, type CudaModel } from './cuda.js';
import { memoized } from './python.js';
import { calleePath, lastName, unparen } from './syntax.js';

/**
 * The shared model of a LuisaCompute source (catalog §1.3, §1.4; seed 000). A Luisa kernel is a C++
 * lambda that *records* device code when the host runs it: `$if`/`$for`/`$while`/`$loop` become
 * device branches and loops (the normalizer leaves them as ordinary C++ statements and remembers
 * them in `source.dsl`), a plain C++ `for` inside the lambda is unrolled at record time, and every
 * `Shared<T>`, `warp_*` and `sync_block()` call belongs to the block the kernel is dispatched with.
 * On the host, work reaches the GPU through `stream << …` and `CommandList` chains.
 *
 * The model is built once per source; constants, host loops and hot paths come from the C++ model
 * (`cudaModel`), which reads a LuisaCompute file just as it reads any C++.
 */

export type DslBodyKind = 'Kernel1D' | 'Kernel2D' | 'Kernel3D' | 'Kernel' | 'Callable' | 'compile';

export interface BlockSize {
  /** The `set_block_size(...)` call. */
  node: SyntaxNode;
  args: SyntaxNode[];
  /** x, y, z (missing y and z are 1); null where an argument is not constant. */
  dims: [number | null, number, number] | [number | null, number | null, number | null];
  /** x·y·z when every argument is constant. */
  product: number | null;
}

export interface DslBody {
  /** The `lambda_expression`. */
  node: SyntaxNode;
  /** Its `compound_statement`. */
  body: SyntaxNode;
  kind: DslBodyKind;
  /** 1, 2 or 3 for kernels whose dimension is known; null for callables. */
  dims: 1 | 2 | 3 | null;
  /** The declared variable (`Kernel1D k = …` → `k`), or null for a lambda passed to `compile`. */
  name: string | null;
  params: SyntaxNode[];
  /** The first `set_block_size` call directly in this body (not in a nested callable). */
  blockSize: BlockSize | null;
  /** The first `set_warp_size` call in this body, with its constant argument when there is one. */
  warpSize: { node: SyntaxNode; value: number | null } | null;
  /** `Shared<T>` declared in this body (nested callables excluded). */
  shared: SharedDecl[];
}

export interface SharedDecl {
  /** The `declaration` (or the `new_expression` for `new Shared<T>{N}`). */
  node: SyntaxNode;
  name: string | null;
  /** Element type as written (`float`, `float4`, `uint`, a struct name). */
  elemType: string;
  /** The element-count expression, when given (`{N}` or `(N)`). */
  countNode: SyntaxNode | null;
  count: number | null;
  /** Innermost DSL body holding the declaration, or null (namespace scope, class member, host function). */
  body: DslBody | null;
  viaNew: boolean;
}

export type SharedAccessKind = 'read' | 'write' | 'atomic' | 'other';
export interface SharedAccess {
  /** The subscript or method call. */
  node: SyntaxNode;
  kind: SharedAccessKind;
  /** The index expression (`s[i]`, `s.read(i)`, `s.write(i, v)`, `s.atomic(i)`). */
  index: SyntaxNode | null;
  /** For `atomic`: the operation called on it (`fetch_add`), or null when nothing is called. */
  atomicOp: string | null;
}

export interface DslCall {
  node: SyntaxNode;
  /** Free-function name (`warp_active_sum`) or method name (`dispatch`, `read`). */
  name: string;
  /** Receiver of a method call (`buf` in `buf.read(i)`), else null. */
  receiver: SyntaxNode | null;
  args: SyntaxNode[];
}

export type SubmitTarget = 'stream' | 'cmdlist' | 'other';
export interface Submission {
  /** The `expression_statement`. */
  stmt: SyntaxNode;
  /** The whole `a << b << c` expression. */
  expr: SyntaxNode;
  /** The left-most operand (`stream`, `cl`, `*stream`, `this->_stream`). */
  target: SyntaxNode;
  targetName: string;
  targetKind: SubmitTarget;
  /** Right-hand operands in order. */
  operands: SyntaxNode[];
  /** An operand is `synchronize()`. */
  synchronizes: boolean;
}

export interface Dispatch {
  /** The `.dispatch(...)` call. */
  node: SyntaxNode;
  args: SyntaxNode[];
  /** The kernel body the shader was compiled from, when the source shows it. */
  kernel: DslBody | null;
  /** The shader name as called (`shader` in `shader(buf).dispatch(n)`), when it is a name. */
  shaderName: string | null;
}

export interface LocalDecl {
  name: string;
  /** Declared type text (`Float`, `UInt`, `Var<float>`, `Stream &`, `auto`). */
  type: string;
  node: SyntaxNode;
  /** Initializer, when the declaration has one. */
  value: SyntaxNode | null;
  pointer: boolean;
  reference: boolean;
  param: boolean;
}

/** What a `.read` / `.write` / `.atomic` receiver is (see `LuisaModel.resourceOf`). */
export interface ResourceInfo {
  kind: 'buffer' | 'image' | 'shared' | 'other' | 'unknown';
  /** Element type as written (`float`, `float4`, `Particle`), for buffers whose type is known. */
  elem: string | null;
}

export interface LuisaModel {
  source: Source;
  cuda: CudaModel;
  bodies: DslBody[];
  /** Innermost DSL body (kernel or callable lambda) around `n`. */
  bodyOf(n: SyntaxNode): DslBody | null;
  /** The outermost DSL body around `n` (the kernel whose block the code runs in). */
  kernelOf(n: SyntaxNode): DslBody | null;
  inDsl(n: SyntaxNode): boolean;
  /**
   * A host function that emits DSL code when called while a kernel records (it holds DSL control
   * flow or DSL builtins but is not itself a lambda body): the generator code of seed 000 §10.
   */
  generatorOf(n: SyntaxNode): SyntaxNode | null;
  /** `inDsl(n) || generatorOf(n) !== null`: code that ends up in a kernel. */
  inDeviceCode(n: SyntaxNode): boolean;
  dslKind(stmt: SyntaxNode): DslKind | undefined;
  /** `if_statement` / `else_clause` produced by `$if`, `$elif`, `$else`, `$case`, `$default`. */
  isDeviceBranch(stmt: SyntaxNode): boolean;
  /** `$for`, `$while`, `$loop`, or a range-for over `dynamic_range(...)`. */
  isDeviceLoop(stmt: SyntaxNode): boolean;
  /** A native C++ loop inside a DSL body or generator: it is unrolled when the kernel records. */
  isRecordTimeLoop(stmt: SyntaxNode): boolean;
  /**
   * Device branches that guard `n`, innermost first, up to its DSL body: for each, the branch
   * statement and the condition that decides whether `n` runs (for `$else`, the `$if`'s condition).
   */
  deviceBranchesAround(n: SyntaxNode): Array<{ stmt: SyntaxNode; condition: SyntaxNode | null; inElse: boolean }>;
  /** Device loops around `n`, innermost first, up to its DSL body. */
  deviceLoopsAround(n: SyntaxNode): SyntaxNode[];
  /** `$for (i, [start,] end [, step])` parts, or a `dynamic_range` range-for's; null for other loops. */
  loopParts(loop: SyntaxNode): { variable: string | null; start: SyntaxNode | null; end: SyntaxNode | null; step: SyntaxNode | null } | null;
  /** The condition of a device branch or `$while`. */
  conditionOf(stmt: SyntaxNode): SyntaxNode | null;
  /** LANE_DEPENDENT (catalog §1.4): differs between threads of one block. */
  laneDependent(expr: SyntaxNode | null | undefined): boolean;
  /** Differs between lanes of one warp (the warp index `thread_x() / warp_lane_count()` does not). */
  warpDivergent(expr: SyntaxNode | null | undefined): boolean;
  /**
   * Canonical text of an index expression, so two accesses can be compared slot by slot: blanks and
   * integer suffixes dropped, `thread_id().x` read as `thread_x()` (also `dispatch_id()`, `block_id()`),
   * and locals initialized once from an index (`auto tid = thread_x();`) replaced by their initializer.
   */
  indexKey(expr: SyntaxNode | null | undefined): string;
  /** Every call in the source by name (free functions and methods). */
  calls: DslCall[];
  callsNamed(name: string | RegExp): DslCall[];
  /** Calls inside `scope` (a body, statement or any node) by name. */
  callsIn(scope: SyntaxNode, name: string | RegExp): DslCall[];
  shared: SharedDecl[];
  /** Accesses of a `Shared<T>` by name within its body (or the whole source for namespace-scope ones). */
  sharedAccesses(decl: SharedDecl): SharedAccess[];
  submissions: Submission[];
  dispatches: Dispatch[];
  /** The kernel a shader name was compiled from (`auto s = device.compile(k)`). */
  kernelOfShader(name: string): DslBody | null;
  /** The declaration of `name` visible at `at` (parameters and locals of the enclosing functions and lambdas). */
  declOf(name: string, at: SyntaxNode): LocalDecl | null;
  /**
   * What the receiver of a resource access is, from its declaration: a buffer (`Buffer<T>`,
   * `BufferView<T>`, `BufferVar<T>`, `BufferFloat4`, `auto b = device.create_buffer<T>(n)`,
   * `heap->buffer<T>(i)`) with its element type; an image or volume; a `Shared<T>`; another
   * resource (bindless array, accel); or unknown (members, helpers' results).
   */
  resourceOf(receiver: SyntaxNode | null | undefined): ResourceInfo;
  /** Integer value of a constant expression (`256u`, `kBlock`, `2 * 128`, `40'000'000u`), or null. */
  constValue(n: SyntaxNode | null | undefined): number | null;
  /** Dimensions of any `set_block_size(...)` call (also the `make_uint3(...)` overload), or null for other calls. */
  blockSizeAt(call: SyntaxNode): BlockSize | null;
  /** Nearest native host loop around `n` outside DSL bodies (a `for` over frames, a `while`). */
  hostLoopOf(n: SyntaxNode): SyntaxNode | null;
  /**
   * The file lines spanned by `from..to` as written (DSL macros restored: `$if`, `$for`, …), for
   * whole-line fixes; null when the normalization cannot be undone there (`$elif`, `$loop`, `$shared`).
   */
  lineText(from: SyntaxNode, to?: SyntaxNode): string | null;
  hotPath(n: SyntaxNode): boolean;
  testOrBench: boolean;
}

export const luisaModel: Analysis<LuisaModel> = {
  name: 'luisa-model',
  compute: (source, config) => memoized(luisaMemo, source, config, buildLuisaModel),
};
const luisaMemo = new WeakMap<Source, { config: ResolvedConfig; value: LuisaModel }>();

const KERNEL_TYPES: Record<string, { kind: DslBodyKind; dims: 1 | 2 | 3 | null }> = {
  Kernel1D: { kind: 'Kernel1D', dims: 1 },
  Kernel2D: { kind: 'Kernel2D', dims: 2 },
  Kernel3D: { kind: 'Kernel3D', dims: 3 },
  Kernel: { kind: 'Kernel', dims: null },
  Callable: { kind: 'Callable', dims: null },
};
const DEVICE_BRANCH: ReadonlySet<DslKind> = new Set(['dsl-if', 'dsl-elif', 'dsl-else', 'dsl-case', 'dsl-default', 'dsl-switch']);
const DEVICE_LOOP: ReadonlySet<DslKind> = new Set(['dsl-for', 'dsl-while', 'dsl-loop']);
const NATIVE_LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);
const FUNCTION_TYPES = new Set(['function_definition', 'lambda_expression']);

/** Per-thread indices: they differ between the threads of one block (catalog §1.4 LANE_DEPENDENT). */
const LANE_SOURCES = /^(thread_x|thread_y|thread_z|thread_id|dispatch_id|dispatch_x|dispatch_y|dispatch_z|warp_lane_id|warp_prefix_\w+|warp_is_first_active_lane)$/;
/** Warp-wide results: the same in every active lane of a warp (seed 000 §3). */
const WARP_UNIFORM_RESULTS = /^(warp_active_(sum|product|min|max|bit_and|bit_or|bit_xor|all|any|count_bits|bit_mask)|warp_read_first_active_lane|warp_first_active_lane|warp_lane_count)$/;
/** Names that build DSL code: a host function calling them is generator code. */
const DSL_BUILTINS = /^(sync_block|thread_x|thread_y|thread_z|thread_id|block_id|block_x|block_y|dispatch_id|dispatch_x|dispatch_y|dispatch_size|set_block_size|set_warp_size|warp_\w+|def|dynamic_range)$/;

function buildLuisaModel(source: Source, config: ResolvedConfig): LuisaModel {
  const cuda = cudaModel.compute(source, config);
  const dsl = source.dsl ?? new Map<number, DslKind>();
  const root = source.root;
  const text = source.text;
  const textOf = (n: SyntaxNode): string => text.slice(n.startIndex, n.endIndex);

  const constValue0 = (n: SyntaxNode | null | undefined): number | null => cuda.constValue(n);
  const bodies: DslBody[] = [];
  const bodyByLambda = new Map<number, DslBody>();
  const calls: DslCall[] = [];
  const lambdas: SyntaxNode[] = [];
  const declarations: SyntaxNode[] = [];
  const exprStatements: SyntaxNode[] = [];
  const newExprs: SyntaxNode[] = [];
  const funcDefs: SyntaxNode[] = [];
  const subscripts: SyntaxNode[] = [];

  // One native pass for every node type the model reads.
  for (const n of root.descendantsOfType(['call_expression', 'lambda_expression', 'declaration', 'expression_statement', 'new_expression', 'function_definition', 'subscript_expression'])) {
    switch (n.type) {
      case 'call_expression': {
        const fn = n.childForFieldName('function');
        const args = n.childForFieldName('arguments')?.namedChildren ?? [];
        if (fn?.type === 'field_expression') {
          let field = fn.childForFieldName('field');
          // `device.compile<2>(…)`: the field is a template_method.
          if (field?.type === 'template_method') field = field.childForFieldName('name');
          if (field) calls.push({ node: n, name: textOf(field), receiver: fn.childForFieldName('argument'), args });
        } else if (fn) {
          let f = fn;
          if (f.type === 'template_function') f = f.childForFieldName('name') ?? f;
          const name = lastName(calleePath(f)) ?? textOf(f);
          calls.push({ node: n, name, receiver: null, args });
        }
        break;
      }
      case 'lambda_expression': lambdas.push(n); break;
      case 'declaration': declarations.push(n); break;
      case 'expression_statement': exprStatements.push(n); break;
      case 'new_expression': newExprs.push(n); break;
      case 'function_definition': funcDefs.push(n); break;
      case 'subscript_expression': subscripts.push(n); break;
    }
  }

  /** Name of the function or method a call invokes (`compile` in `device.compile<1>(…)`). */
  const calledName = (call: SyntaxNode): string | null => {
    let f = call.childForFieldName('function');
    if (f?.type === 'field_expression') f = f.childForFieldName('field');
    if (f?.type === 'template_method' || f?.type === 'template_function') f = f.childForFieldName('name');
    return f ? lastName(textOf(f).replace(/\s/g, '')) : null;
  };

  // --- DSL bodies ---
  const typeName = (t: SyntaxNode | null): string | null => {
    if (!t) return null;
    if (t.type === 'template_type') return lastName(textOf(t.childForFieldName('name') ?? t).replace(/\s/g, ''));
    if (t.type === 'type_identifier' || t.type === 'qualified_identifier') return lastName(textOf(t).replace(/\s/g, ''));
    return null;
  };
  for (const lam of lambdas) {
    const body = lam.childForFieldName('body');
    if (!body) continue;
    let kind: DslBodyKind | null = null;
    let dims: 1 | 2 | 3 | null = null;
    let name: string | null = null;
    // `Kernel1D k = [&](…) {…};`, `Kernel1D k{[&](…) {…}};`, `Callable<float(float)> f = …`
    let p = lam.parent;
    if (p?.type === 'initializer_list' || p?.type === 'argument_list') {
      const holder = p.parent;
      if (holder?.type === 'init_declarator') p = holder;
      else if (holder?.type === 'call_expression') {
        const callee = calledName(holder);
        if (callee === 'compile' || callee === 'compile_async') {
          kind = 'compile';
          const tf = holder.childForFieldName('function');
          const tm = tf?.type === 'field_expression' ? tf.childForFieldName('field') : tf;
          const targs = tm?.type === 'template_function' || tm?.type === 'template_method' ? tm.childForFieldName('arguments') : null;
          const d = targs ? Number(textOf(targs).replace(/[<>\s]/g, '')) : NaN;
          dims = d === 1 || d === 2 || d === 3 ? d : null;
        } else if (callee && KERNEL_TYPES[callee]) {
          ({ kind, dims } = KERNEL_TYPES[callee]);
        }
      }
    }
    // `device.compile<2>([&](…) {…})` parses as `device.compile < 2 > ([&](…) {…})`: the member
    // cannot be known to be a template without semantic analysis.
    // With more arguments, `compiler.compile<1>(slot, [&](…) {…})`, the lambda is the last operand of a
    // comma_expression inside those parentheses.
    let pp = p;
    while (pp?.type === 'comma_expression' && pp.parent) pp = pp.parent;
    if (!kind && pp?.type === 'parenthesized_expression' && pp.parent?.type === 'binary_expression' && pp.parent.childForFieldName('operator')?.type === '>') {
      const lt = pp.parent.childForFieldName('left');
      const fe = lt?.type === 'binary_expression' && lt.childForFieldName('operator')?.type === '<' ? lt.childForFieldName('left') : null;
      const field = fe?.type === 'field_expression' ? fe.childForFieldName('field') : null;
      if (field && /^compile(_async)?$/.test(textOf(field))) {
        kind = 'compile';
        const d = constValue0(lt!.childForFieldName('right'));
        dims = d === 1 || d === 2 || d === 3 ? d : null;
      }
    }
    if (!kind && p?.type === 'init_declarator') {
      const decl = p.parent;
      const t = typeName(decl?.childForFieldName('type') ?? null);
      if (t && KERNEL_TYPES[t]) {
        ({ kind, dims } = KERNEL_TYPES[t]);
        const d = p.childForFieldName('declarator');
        name = d ? textOf(d) : null;
      }
    }
    if (!kind) continue;
    const params = lam.childForFieldName('declarator')?.childForFieldName('parameters')?.namedChildren.filter((x) => x.type === 'parameter_declaration' || x.type === 'optional_parameter_declaration') ?? [];
    const b: DslBody = { node: lam, body, kind, dims, name, params, blockSize: null, warpSize: null, shared: [] };
    bodies.push(b);
    bodyByLambda.set(lam.id, b);
  }

  const bodyMemo = new Map<number, DslBody | null>();
  function bodyOf(n: SyntaxNode): DslBody | null {
    const chain: number[] = [];
    let cur: SyntaxNode | null = n;
    let found: DslBody | null = null;
    while (cur) {
      const hit = bodyMemo.get(cur.id);
      if (hit !== undefined) { found = hit; break; }
      chain.push(cur.id);
      if (cur.type === 'lambda_expression') {
        const b = bodyByLambda.get(cur.id);
        // Only code inside the body is recorded; the capture list and parameters are host syntax.
        if (b && cur.id !== n.id && contains(b.body, n)) { found = b; break; }
      }
      cur = cur.parent;
    }
    for (const id of chain) bodyMemo.set(id, found);
    return found;
  }
  const kernelOf = (n: SyntaxNode): DslBody | null => {
    let b = bodyOf(n);
    let outer = b;
    while (b) {
      outer = b;
      b = b.node.parent ? bodyOf(b.node.parent) : null;
    }
    return outer;
  };

  // Host functions that emit DSL (generator code, seed 000 §10).
  const generators = new Set<number>();
  const markGenerator = (n: SyntaxNode): void => {
    if (bodyOf(n)) return;
    let cur: SyntaxNode | null = n.parent;
    while (cur && cur.type !== 'function_definition') cur = cur.parent;
    if (cur) generators.add(cur.id);
  };
  for (const c of calls) if (!c.receiver && DSL_BUILTINS.test(c.name)) markGenerator(c.node);
  for (const [at] of dsl) {
    const n = root.descendantForIndex(at);
    if (n) markGenerator(n);
  }
  const generatorOf = (n: SyntaxNode): SyntaxNode | null => {
    if (bodyOf(n)) return null;
    let cur: SyntaxNode | null = n.parent;
    while (cur && cur.type !== 'function_definition') cur = cur.parent;
    return cur && generators.has(cur.id) ? cur : null;
  };

  const dslKind = (stmt: SyntaxNode): DslKind | undefined => (stmt.type === 'if_statement' || stmt.type === 'else_clause' || stmt.type === 'while_statement' || stmt.type === 'for_statement' ? dslKindAt(dsl, stmt) : undefined);
  const isDeviceBranch = (stmt: SyntaxNode): boolean => {
    const k = dslKind(stmt);
    return k !== undefined && DEVICE_BRANCH.has(k);
  };
  const isDynamicRange = (stmt: SyntaxNode): boolean => {
    if (stmt.type !== 'for_range_loop') return false;
    const r = stmt.childForFieldName('right');
    return !!r && r.type === 'call_expression' && lastName(calleePath(r.childForFieldName('function'))) === 'dynamic_range';
  };
  const isDeviceLoop = (stmt: SyntaxNode): boolean => {
    const k = dslKind(stmt);
    return (k !== undefined && DEVICE_LOOP.has(k)) || isDynamicRange(stmt);
  };
  const isRecordTimeLoop = (stmt: SyntaxNode): boolean => NATIVE_LOOPS.has(stmt.type) && !isDeviceLoop(stmt) && (bodyOf(stmt) !== null || generatorOf(stmt) !== null);
  const conditionOf = (stmt: SyntaxNode): SyntaxNode | null => {
    let s = stmt;
    if (s.type === 'else_clause') s = s.parent ?? s;
    const c = s.childForFieldName('condition');
    if (!c) return null;
    if (c.type === 'condition_clause' || c.type === 'parenthesized_expression') return c.childForFieldName('value') ?? c.namedChildren[0] ?? null;
    return c;
  };
  const stopAt = (n: SyntaxNode): SyntaxNode | null => bodyOf(n)?.body ?? generatorOf(n);
  function deviceBranchesAround(n: SyntaxNode): Array<{ stmt: SyntaxNode; condition: SyntaxNode | null; inElse: boolean }> {
    const out: Array<{ stmt: SyntaxNode; condition: SyntaxNode | null; inElse: boolean }> = [];
    const top = stopAt(n);
    let child: SyntaxNode = n;
    let cur = n.parent;
    while (cur && (!top || cur.id !== top.id)) {
      if (cur.type === 'if_statement' && isDeviceBranch(cur)) {
        const cond = cur.childForFieldName('condition');
        if (!cond || !contains(cond, child)) {
          const alt = cur.childForFieldName('alternative');
          const inElse = !!alt && contains(alt, child);
          // An `$elif` nested in the else clause is reported as its own branch; the `$if` above it
          // still decides whether it runs.
          out.push({ stmt: cur, condition: conditionOf(cur), inElse });
        }
      }
      if (cur.type === 'lambda_expression' && bodyByLambda.has(cur.id)) break;
      child = cur;
      cur = cur.parent;
    }
    return out;
  }
  function deviceLoopsAround(n: SyntaxNode): SyntaxNode[] {
    const out: SyntaxNode[] = [];
    const top = stopAt(n);
    let cur = n.parent;
    while (cur && (!top || cur.id !== top.id)) {
      if (isDeviceLoop(cur)) out.push(cur);
      if (cur.type === 'lambda_expression' && bodyByLambda.has(cur.id)) break;
      cur = cur.parent;
    }
    return out;
  }
  const loopParts = (loop: SyntaxNode): { variable: string | null; start: SyntaxNode | null; end: SyntaxNode | null; step: SyntaxNode | null } | null => {
    if (isDynamicRange(loop)) {
      const d = loop.childForFieldName('declarator');
      const a = loop.childForFieldName('right')?.childForFieldName('arguments')?.namedChildren ?? [];
      const variable = d ? textOf(d).replace(/^[&*\s]+/, '') : null;
      if (a.length === 1) return { variable, start: null, end: a[0], step: null };
      return { variable, start: a[0] ?? null, end: a[1] ?? null, step: a[2] ?? null };
    }
    if (dslKind(loop) !== 'dsl-for') return null;
    const parts: SyntaxNode[] = [];
    let c = conditionOf(loop);
    while (c && c.type === 'comma_expression') {
      const l = c.childForFieldName('left');
      if (l) parts.push(l);
      c = c.childForFieldName('right');
    }
    if (c) parts.push(c);
    const variable = parts[0]?.type === 'identifier' ? textOf(parts[0]) : null;
    if (parts.length === 2) return { variable, start: null, end: parts[1], step: null };
    return { variable, start: parts[1] ?? null, end: parts[2] ?? null, step: parts[3] ?? null };
  };

  // --- declarations ---
  const declsByFunction = new Map<number, LocalDecl[]>();
  const functionAround = (n: SyntaxNode): SyntaxNode | null => {
    let cur = n.parent;
    while (cur && !FUNCTION_TYPES.has(cur.type)) cur = cur.parent;
    return cur;
  };
  const declName = (d: SyntaxNode | null): { name: string; pointer: boolean; reference: boolean } | null => {
    let pointer = false;
    let reference = false;
    let cur = d;
    while (cur) {
      if (cur.type === 'identifier' || cur.type === 'field_identifier') return { name: textOf(cur), pointer, reference };
      if (cur.type === 'pointer_declarator') pointer = true;
      if (cur.type === 'reference_declarator') reference = true;
      if (cur.type === 'init_declarator' || cur.type === 'pointer_declarator' || cur.type === 'array_declarator' || cur.type === 'function_declarator') {
        cur = cur.childForFieldName('declarator');
        continue;
      }
      if (cur.type === 'reference_declarator') {
        cur = cur.namedChildren[0] ?? null;
        continue;
      }
      return null;
    }
    return null;
  };
  const addDecl = (scope: SyntaxNode | null, dcl: LocalDecl): void => {
    const key = scope?.id ?? -1;
    let list = declsByFunction.get(key);
    if (!list) declsByFunction.set(key, (list = []));
    list.push(dcl);
  };
  for (const d of declarations) {
    const typeNode = d.childForFieldName('type');
    const type = typeNode ? textOf(typeNode) : '';
    const scope = functionAround(d);
    for (const dd of d.namedChildren) {
      if (dd.id === typeNode?.id || (dd.type !== 'init_declarator' && dd.type !== 'identifier' && dd.type !== 'pointer_declarator' && dd.type !== 'reference_declarator' && dd.type !== 'array_declarator')) continue;
      const nm = declName(dd);
      if (!nm) continue;
      let value: SyntaxNode | null = null;
      if (dd.type === 'init_declarator') {
        value = dd.childForFieldName('value');
        if (value?.type === 'initializer_list' || value?.type === 'argument_list') value = value.namedChildren.length === 1 ? value.namedChildren[0] : value;
      }
      addDecl(scope, { name: nm.name, type, node: d, value, pointer: nm.pointer, reference: nm.reference || /&\s*$/.test(type), param: false });
    }
  }
  for (const f of [...funcDefs, ...lambdas]) {
    let decl = f.childForFieldName('declarator');
    while (decl && decl.type !== 'function_declarator' && decl.type !== 'abstract_function_declarator') decl = decl.childForFieldName('declarator') ?? decl.namedChildren.find((x) => x.type === 'function_declarator') ?? null;
    for (const p of decl?.childForFieldName('parameters')?.namedChildren ?? []) {
      if (p.type !== 'parameter_declaration' && p.type !== 'optional_parameter_declaration') continue;
      const nm = declName(p.childForFieldName('declarator'));
      if (!nm) continue;
      const t = p.childForFieldName('type');
      addDecl(f, { name: nm.name, type: t ? textOf(t) : '', node: p, value: null, pointer: nm.pointer, reference: nm.reference, param: true });
    }
  }
  function declOf(name: string, at: SyntaxNode): LocalDecl | null {
    let scope: SyntaxNode | null = functionAround(at);
    for (;;) {
      const list = declsByFunction.get(scope?.id ?? -1);
      if (list) {
        let best: LocalDecl | null = null;
        for (const d of list) {
          if (d.name !== name) continue;
          if (d.param || d.node.startIndex <= at.startIndex) {
            if (!best || d.node.startIndex >= best.node.startIndex) best = d;
          }
        }
        if (best) return best;
      }
      if (!scope) return null;
      scope = functionAround(scope);
    }
  }

  // --- resources read and written by kernels ---
  const SCALAR_ALIAS = /^(Float|Int|UInt|Half|Short|UShort|SLong|ULong|Long|Double|Bool|Byte|UByte)([234](x[234])?)?$/;
  const resourceOfType = (type: string, value: SyntaxNode | null, depth: number): ResourceInfo => {
    const t = type.replace(/\s+/g, '').replace(/^const/, '').replace(/[&*]+$/, '').replace(/^(luisa::compute::|compute::)/, '');
    let mm = /^(?:Buffer|BufferView|BufferVar|Var<(?:Buffer|BufferView)<(.+)>>)<(.+)>$/.exec(t) ?? /^Var<(?:Buffer|BufferView)<(.+)>>$/.exec(t);
    if (mm) return { kind: 'buffer', elem: (mm[2] ?? mm[1]).replace(/^(luisa::compute::|luisa::)/, '') };
    mm = /^Buffer(\w+)$/.exec(t);
    if (mm && SCALAR_ALIAS.test(mm[1])) return { kind: 'buffer', elem: mm[1].toLowerCase() };
    if (/^(Image|ImageView|ImageVar|Volume|VolumeView|VolumeVar|SparseImage|SparseVolume)\b|^(Image|Volume)(Float|Int|UInt)$/.test(t)) return { kind: 'image', elem: null };
    if (/^Shared</.test(t)) return { kind: 'shared', elem: null };
    if (/^(BindlessArray|BindlessVar|Accel|AccelVar)\b/.test(t)) return { kind: 'other', elem: null };
    if (t === 'auto' && value && depth < 3) return resourceOfExpr(value, depth + 1);
    return { kind: 'unknown', elem: null };
  };
  const resourceOfExpr = (e: SyntaxNode | null | undefined, depth: number): ResourceInfo => {
    let r = unparen(e ?? null);
    while (r && (r.type === 'pointer_expression' || r.type === 'reference_expression')) r = unparen(r.namedChildren[r.namedChildren.length - 1] ?? null);
    if (!r) return { kind: 'unknown', elem: null };
    if (r.type === 'call_expression') {
      // `device.create_buffer<float>(n)`, `heap->buffer<float>(id)`, `buf.view(offset, n)`.
      const f = r.childForFieldName('function');
      const field = f?.type === 'field_expression' ? f.childForFieldName('field') : null;
      if (field?.type === 'template_method') {
        const name = textOf(field.childForFieldName('name') ?? field);
        const targs = field.childForFieldName('arguments')?.namedChildren ?? [];
        if ((name === 'create_buffer' || name === 'buffer') && targs.length === 1) return { kind: 'buffer', elem: textOf(targs[0]).replace(/\s+/g, '') };
        if (/^create_(image|volume)$|^(tex2d|tex3d)$/.test(name)) return { kind: 'image', elem: null };
      }
      if (field && textOf(field) === 'view' && f?.type === 'field_expression' && depth < 3) {
        const base = resourceOfExpr(f.childForFieldName('argument'), depth + 1);
        if (base.kind === 'buffer' || base.kind === 'image') return base;
      }
      if (field && /^create_(image|volume)$/.test(textOf(field))) return { kind: 'image', elem: null };
      return { kind: 'unknown', elem: null };
    }
    if (r.type === 'identifier') {
      const name = textOf(r);
      const d = declOf(name, r);
      if (d) {
        const info = resourceOfType(d.type, d.value, depth);
        if (info.kind !== 'unknown') return info;
      }
      if (shared.some((s) => s.name === name)) return { kind: 'shared', elem: null };
    }
    return { kind: 'unknown', elem: null };
  };
  const resourceOf = (e: SyntaxNode | null | undefined): ResourceInfo => resourceOfExpr(e, 0);

  // --- block and warp sizes, shared memory ---
  // C++14 digit separators (`40'000'000u`) are common in LuisaCompute sizes, and the C++ model does
  // not read them; a local `constexpr` initialized with one is resolved through its declaration.
  const constValue = (n: SyntaxNode | null | undefined, depth = 0): number | null => {
    // The constant declared in scope first: two test functions may each have `constexpr auto block_size`.
    if (n?.type === 'identifier' && depth <= 6) {
      const d = declOf(textOf(n), n);
      const v = d && !d.param && d.value && /\b(constexpr|const)\b/.test(textOf(d.node)) ? constValue(d.value, depth + 1) : null;
      if (v !== null) return v;
    }
    const v = cuda.constValue(n);
    if (v !== null || !n || depth > 6) return v;
    if (n.type === 'number_literal') {
      const lit = /^(\d+)[uUlLzZ]*$/.exec(textOf(n).replace(/'/g, ''));
      return lit ? Number(lit[1]) : null;
    }
    if (n.type === 'parenthesized_expression') return constValue(n.namedChildren[0], depth + 1);
    // `set_warp_size(static_cast<uint8_t>(kWarp))`: set_warp_size takes a uint8_t, so pinned widths
    // are usually written through a cast.
    if (n.type === 'call_expression' && n.childForFieldName('arguments')?.namedChildren.length === 1) {
      const f = n.childForFieldName('function');
      const fname = f?.type === 'template_function' ? textOf(f.childForFieldName('name') ?? f) : f ? textOf(f) : '';
      if (/^(static_cast|u?int(8|16|32|64)?(_t)?|uint|unsigned)$/.test(fname)) return constValue(n.childForFieldName('arguments')!.namedChildren[0], depth + 1);
    }
    if (n.type === 'identifier') {
      const d = declOf(textOf(n), n);
      return d && !d.param && d.value && /\b(constexpr|const)\b/.test(textOf(d.node)) ? constValue(d.value, depth + 1) : null;
    }
    if (n.type === 'binary_expression') {
      const l = constValue(n.childForFieldName('left'), depth + 1);
      const r = constValue(n.childForFieldName('right'), depth + 1);
      const op = n.childForFieldName('operator')?.type;
      if (l === null || r === null) return null;
      return op === '+' ? l + r : op === '-' ? l - r : op === '*' ? l * r : op === '/' && r ? Math.trunc(l / r) : null;
    }
    return null;
  };
  function blockSizeAt(call: SyntaxNode): BlockSize | null {
    const c = calls.find((x) => x.node.id === call.id);
    if (!c || c.name !== 'set_block_size') return null;
    let args = c.args;
    // `set_block_size(make_uint3(16u, 16u, 1u))` / `set_block_size(uint2{16u, 16u})`: the vector overloads.
    const a0 = args.length === 1 ? args[0] : null;
    if (a0?.type === 'call_expression' && /^(luisa::)?(make_)?uint[23]$/.test(textOf(a0.childForFieldName('function') ?? a0).replace(/\s/g, ''))) {
      args = a0.childForFieldName('arguments')?.namedChildren ?? args;
    } else if (a0?.type === 'compound_literal_expression' && /^(luisa::)?uint[23]$/.test(textOf(a0.childForFieldName('type') ?? a0).replace(/\s/g, ''))) {
      args = a0.childForFieldName('value')?.namedChildren ?? args;
    }
    const v = args.map((a) => constValue(a));
    const dims: [number | null, number | null, number | null] = [v[0] ?? null, args.length > 1 ? v[1] : 1, args.length > 2 ? v[2] : 1];
    const product = dims.every((x) => x !== null) ? dims[0]! * dims[1]! * dims[2]! : null;
    return { node: c.node, args, dims, product };
  }
  for (const c of calls) {
    if (c.receiver || (c.name !== 'set_block_size' && c.name !== 'set_warp_size')) continue;
    const b = bodyOf(c.node);
    if (!b) continue;
    if (c.name === 'set_block_size' && !b.blockSize) {
      b.blockSize = blockSizeAt(c.node);
    } else if (c.name === 'set_warp_size' && !b.warpSize) {
      b.warpSize = { node: c.node, value: constValue(c.args[0]) };
    }
  }
  const shared: SharedDecl[] = [];
  const sharedElem = (t: SyntaxNode | null): string | null => {
    if (!t || t.type !== 'template_type') return null;
    if (lastName(textOf(t.childForFieldName('name') ?? t)) !== 'Shared') return null;
    const args = t.childForFieldName('arguments');
    return args ? textOf(args).replace(/^<|>$/g, '').trim() : '';
  };
  const countOf = (v: SyntaxNode | null): SyntaxNode | null => {
    if (!v) return null;
    if (v.type === 'initializer_list' || v.type === 'argument_list') return v.namedChildren[0] ?? null;
    if (v.type === 'compound_literal_expression' || v.type === 'call_expression') {
      const a = v.childForFieldName('value') ?? v.childForFieldName('arguments');
      return a?.namedChildren[0] ?? null;
    }
    return null;
  };
  for (const d of declarations) {
    let elem = sharedElem(d.childForFieldName('type'));
    for (const dd of d.namedChildren) {
      if (dd.type !== 'init_declarator' && dd.type !== 'identifier') continue;
      let value = dd.type === 'init_declarator' ? dd.childForFieldName('value') : null;
      let e = elem;
      // `auto s = Shared<float>{256};`
      if (e === null && value && (value.type === 'compound_literal_expression' || value.type === 'call_expression')) {
        const t = value.childForFieldName('type') ?? value.childForFieldName('function');
        e = sharedElem(t);
        if (e === null) continue;
      } else if (e === null) continue;
      else if (value && value.type !== 'initializer_list' && value.type !== 'argument_list') {
        // `Shared<float> b = a;`: a copy, not a declaration of new memory (kept for copy checks).
        value = null;
      }
      const cn = countOf(value);
      shared.push({ node: d, name: declName(dd)?.name ?? null, elemType: e, countNode: cn, count: constValue(cn), body: bodyOf(d), viaNew: false });
    }
    elem = null;
  }
  for (const n of newExprs) {
    const e = sharedElem(n.childForFieldName('type'));
    if (e === null) continue;
    const cn = countOf(n.childForFieldName('arguments'));
    let holder: SyntaxNode | null = n.parent;
    while (holder && holder.type !== 'init_declarator' && holder.type !== 'assignment_expression' && holder.type !== 'expression_statement') holder = holder.parent;
    let name: string | null = null;
    if (holder?.type === 'init_declarator') name = declName(holder)?.name ?? null;
    else if (holder?.type === 'assignment_expression') name = lastName(textOf(holder.childForFieldName('left') ?? holder).replace(/^\*/, ''));
    shared.push({ node: n, name, elemType: e, countNode: cn, count: constValue(cn), body: bodyOf(n), viaNew: true });
  }
  for (const s of shared) s.body?.shared.push(s);

  // Accesses by name: `s[i]`, `(*s)[i]`, `s->read(i)`, `s.write(i, v)`, `s.atomic(i).fetch_add(v)`.
  const baseName = (n: SyntaxNode | null): string | null => {
    let cur = unparen(n);
    while (cur && (cur.type === 'pointer_expression' || cur.type === 'parenthesized_expression')) cur = unparen(cur.namedChildren[cur.namedChildren.length - 1] ?? null);
    if (!cur) return null;
    if (cur.type === 'identifier') return textOf(cur);
    if (cur.type === 'field_expression') {
      const f = cur.childForFieldName('field');
      return f ? textOf(f) : null;
    }
    return null;
  };
  const accessMemo = new Map<SharedDecl, SharedAccess[]>();
  function sharedAccesses(decl: SharedDecl): SharedAccess[] {
    const hit = accessMemo.get(decl);
    if (hit) return hit;
    const out: SharedAccess[] = [];
    const scope = decl.body?.body ?? null;
    const within = (n: SyntaxNode): boolean => !scope || contains(scope, n);
    if (decl.name) {
      for (const s of subscripts) {
        if (baseName(s.childForFieldName('argument')) !== decl.name || !within(s)) continue;
        const idx = s.childForFieldName('indices')?.namedChildren[0] ?? s.childForFieldName('index') ?? null;
        const p = s.parent;
        const isWrite = p?.type === 'assignment_expression' && p.childForFieldName('left')?.id === s.id;
        const compound = isWrite && textOf(p!.childForFieldName('operator') ?? p!) !== '=';
        if (compound) out.push({ node: s, kind: 'read', index: idx, atomicOp: null });
        out.push({ node: s, kind: isWrite ? 'write' : p?.type === 'update_expression' ? 'write' : 'read', index: idx, atomicOp: null });
      }
      for (const c of calls) {
        if (!c.receiver || baseName(c.receiver) !== decl.name || !within(c.node)) continue;
        if (c.name === 'read') out.push({ node: c.node, kind: 'read', index: c.args[0] ?? null, atomicOp: null });
        else if (c.name === 'write') out.push({ node: c.node, kind: 'write', index: c.args[0] ?? null, atomicOp: null });
        else if (c.name === 'atomic') {
          const fe = c.node.parent;
          const op = fe?.type === 'field_expression' && fe.parent?.type === 'call_expression' ? textOf(fe.childForFieldName('field') ?? fe) : null;
          out.push({ node: c.node, kind: 'atomic', index: c.args[0] ?? null, atomicOp: op });
        }
      }
    }
    out.sort((a, b) => a.node.startIndex - b.node.startIndex);
    accessMemo.set(decl, out);
    return out;
  }

  // --- lane dependence ---
  // Locals of a DSL body that hold per-thread values: declared or assigned from a lane-dependent
  // expression (a fixpoint over the body's declarations and assignments, in textual order twice).
  const taintMemo = new Map<number, { lane: Set<string>; warp: Set<string> }>();
  const taintOf = (b: DslBody | null): { lane: Set<string>; warp: Set<string> } => {
    const key = b?.node.id ?? -1;
    const hit = taintMemo.get(key);
    if (hit) return hit;
    const t = { lane: new Set<string>(), warp: new Set<string>() };
    taintMemo.set(key, t);
    if (!b) return t;
    const defs: Array<{ name: string; value: SyntaxNode }> = [];
    for (const n of b.body.descendantsOfType(['init_declarator', 'assignment_expression'])) {
      if (n.type === 'init_declarator') {
        const nm = declName(n);
        let v = n.childForFieldName('value');
        if (v && (v.type === 'initializer_list' || v.type === 'argument_list')) v = v.namedChildren[0] ?? null;
        if (nm && v) defs.push({ name: nm.name, value: v });
      } else {
        const l = n.childForFieldName('left');
        const r = n.childForFieldName('right');
        if (l?.type === 'identifier' && r) defs.push({ name: textOf(l), value: r });
      }
    }
    // `$for (i, thread_x(), n, block_size())` / `dynamic_range(tid, n, 256u)`: the loop variable
    // takes start + k·step, so it is per-thread exactly when the start or the step is.
    for (const n of b.body.descendantsOfType(['if_statement', 'for_range_loop'])) {
      const lp = isDeviceLoop(n) ? loopParts(n) : null;
      if (!lp?.variable) continue;
      if (lp.start) defs.push({ name: lp.variable, value: lp.start });
      if (lp.step) defs.push({ name: lp.variable, value: lp.step });
    }
    for (let round = 0; round < 3; round++) {
      let changed = false;
      for (const d of defs) {
        if (!t.lane.has(d.name) && exprDepends(d.value, t.lane, false)) { t.lane.add(d.name); changed = true; }
        if (!t.warp.has(d.name) && exprDepends(d.value, t.warp, true)) { t.warp.add(d.name); changed = true; }
      }
      if (!changed) break;
    }
    return t;
  };
  const isWarpIndex = (n: SyntaxNode): boolean => {
    // `thread_x() / warp_lane_count()`, `/ 32u`, `>> 5u`: the same in every lane of a warp.
    if (n.type !== 'binary_expression') return false;
    const op = n.childForFieldName('operator')?.type;
    const r = n.childForFieldName('right');
    if (op === '/') return !!r && (/warp_lane_count|warp_size|kWarp|WARP/i.test(textOf(r)) || constValue(r) === 32 || constValue(r) === 64);
    if (op === '>>') return !!r && (constValue(r) === 5 || constValue(r) === 6);
    return false;
  };
  function exprDepends(e: SyntaxNode, tainted: Set<string>, warpLevel: boolean): boolean {
    const stack: SyntaxNode[] = [e];
    while (stack.length) {
      const n = stack.pop()!;
      if (warpLevel && isWarpIndex(n)) continue;
      if (n.type === 'identifier') {
        if (tainted.has(textOf(n))) return true;
        continue;
      }
      if (n.type === 'call_expression') {
        const fn = n.childForFieldName('function');
        const nm = fn?.type === 'identifier' ? textOf(fn) : fn?.type === 'template_function' ? textOf(fn.childForFieldName('name') ?? fn) : null;
        if (nm && WARP_UNIFORM_RESULTS.test(nm)) continue;
        if (nm && LANE_SOURCES.test(nm)) return true;
        if (nm === 'warp_read_lane') {
          // A broadcast from a uniform lane is uniform.
          const lane = n.childForFieldName('arguments')?.namedChildren[1];
          if (lane) stack.push(lane);
          continue;
        }
      }
      if (n.type === 'field_identifier' || n.type === 'lambda_expression') continue;
      for (const c of n.namedChildren) stack.push(c);
    }
    return false;
  }
  const laneDependent = (expr: SyntaxNode | null | undefined): boolean => !!expr && exprDepends(expr, taintOf(bodyOf(expr)).lane, false);
  const warpDivergent = (expr: SyntaxNode | null | undefined): boolean => !!expr && exprDepends(expr, taintOf(bodyOf(expr)).warp, true);
  const INDEX_SOURCES = /^(thread|dispatch|block)_id$/;
  // Assigned locals are not aliases: `half /= 2u` changes what `s[half]` names between accesses.
  const assignedNames = new Set<string>();
  for (const st of exprStatements) {
    const e = st.namedChildren[0];
    const l = e?.type === 'assignment_expression' ? e.childForFieldName('left') : e?.type === 'update_expression' ? e.childForFieldName('argument') : null;
    if (l?.type === 'identifier') assignedNames.add(textOf(l));
  }
  const indexKey = (expr: SyntaxNode | null | undefined, depth = 0): string => {
    const n = unparen(expr ?? null);
    if (!n) return '';
    if (n.type === 'field_expression') {
      const arg = n.childForFieldName('argument');
      const f = n.childForFieldName('field');
      const fn = arg?.type === 'call_expression' ? arg.childForFieldName('function') : null;
      if (fn?.type === 'identifier' && INDEX_SOURCES.test(textOf(fn)) && f && /^[xyz]$/.test(textOf(f))) return `${textOf(fn).replace(/_id$/, '')}_${textOf(f)}()`;
    }
    if (n.type === 'identifier' && depth < 4 && !assignedNames.has(textOf(n))) {
      const d = declOf(textOf(n), n);
      if (d && !d.param && !d.pointer && !d.reference && d.value && d.value.type !== 'initializer_list' && d.value.type !== 'argument_list') {
        const v = unparen(d.value)!;
        const inner = indexKey(v, depth + 1);
        return v.type === 'call_expression' || v.type === 'identifier' || v.type === 'field_expression' || v.type === 'number_literal' ? inner : `(${inner})`;
      }
    }
    if (n.type === 'number_literal') return textOf(n).replace(/^(\d+)[uUlLzZ]+$/, '$1');
    if (n.childCount === 0) return textOf(n);
    let out = '';
    for (const c of n.children) out += indexKey(c, depth);
    return out;
  };

  // --- host submissions ---
  const submissions: Submission[] = [];
  const STREAM_NAME = /^(stream|\w*_stream|stream_\w*|\w*Stream|s_?stream)$/i;
  const CMDLIST_NAME = /^(cl|cmd|cmdlist|cmd_list|command_list|commands|\w*_cl|\w*_cmdlist|\w*CommandList)$/;
  const classify = (target: SyntaxNode): { name: string; kind: SubmitTarget } => {
    let t = unparen(target)!;
    while (t.type === 'pointer_expression') t = unparen(t.namedChildren[t.namedChildren.length - 1])!;
    const name = t.type === 'field_expression' ? textOf(t.childForFieldName('field') ?? t) : textOf(t);
    if (t.type === 'identifier' || t.type === 'field_expression') {
      const d = t.type === 'identifier' ? declOf(name, t) : null;
      if (d) {
        const ty = d.type.replace(/\s/g, '');
        if (/(^|::)Stream\b/.test(ty)) return { name, kind: 'stream' };
        if (/(^|::)CommandList\b/.test(ty)) return { name, kind: 'cmdlist' };
        if (/^auto/.test(ty) && d.value && /CommandList::create\b/.test(textOf(d.value))) return { name, kind: 'cmdlist' };
        if (/^auto/.test(ty) && d.value && /\bcreate_stream\b/.test(textOf(d.value))) return { name, kind: 'stream' };
        if (!/^auto/.test(ty) && ty !== '') return { name, kind: STREAM_NAME.test(name) && /Stream/.test(ty) ? 'stream' : 'other' };
      }
      const bare = name.replace(/^_+|_+$/g, '');
      if (STREAM_NAME.test(bare)) return { name, kind: 'stream' };
      if (CMDLIST_NAME.test(bare)) return { name, kind: 'cmdlist' };
    }
    return { name, kind: 'other' };
  };
  for (const s of exprStatements) {
    const e = s.namedChildren[0];
    if (!e || e.type !== 'binary_expression' || e.childForFieldName('operator')?.type !== '<<') continue;
    const operands: SyntaxNode[] = [];
    let cur: SyntaxNode = e;
    while (cur.type === 'binary_expression' && cur.childForFieldName('operator')?.type === '<<') {
      const r = cur.childForFieldName('right');
      if (r) operands.unshift(r);
      cur = cur.childForFieldName('left')!;
    }
    const { name, kind } = classify(cur);
    if (kind === 'other') continue;
    const synchronizes = operands.some((o) => o.type === 'call_expression' && lastName(calleePath(o.childForFieldName('function'))) === 'synchronize' && (o.childForFieldName('arguments')?.namedChildren.length ?? 0) === 0);
    submissions.push({ stmt: s, expr: e, target: cur, targetName: name, targetKind: kind, operands, synchronizes });
  }

  // --- shaders and dispatches ---
  const shaderKernels = new Map<string, DslBody>();
  const bodiesByName = new Map<string, DslBody>();
  for (const b of bodies) if (b.name) bodiesByName.set(b.name, b);
  const kernelFromCompile = (v: SyntaxNode | null): DslBody | null => {
    if (v?.type === 'binary_expression') {
      // `device.compile<1>(lambda)` as parsed (see the DSL bodies above).
      const lam = v.childForFieldName('right')?.namedChildren[0];
      return lam?.type === 'lambda_expression' ? bodyByLambda.get(lam.id) ?? null : null;
    }
    if (!v || v.type !== 'call_expression') return null;
    const callee = calledName(v);
    if (callee !== 'compile' && callee !== 'compile_async') return null;
    const a = v.childForFieldName('arguments')?.namedChildren[0];
    if (!a) return null;
    if (a.type === 'lambda_expression') return bodyByLambda.get(a.id) ?? null;
    if (a.type === 'identifier') {
      // The kernel declared in this scope: two test functions may each have a `Kernel1D kernel`.
      const lam = unparen(declOf(textOf(a), a)?.value ?? null);
      return (lam?.type === 'lambda_expression' ? bodyByLambda.get(lam.id) : undefined) ?? bodiesByName.get(textOf(a)) ?? null;
    }
    return null;
  };
  for (const list of declsByFunction.values()) {
    for (const d of list) {
      const k = kernelFromCompile(d.value);
      if (k) shaderKernels.set(d.name, k);
    }
  }
  for (const s of exprStatements) {
    const a = s.namedChildren[0];
    if (a?.type !== 'assignment_expression') continue;
    const k = kernelFromCompile(a.childForFieldName('right'));
    const l = a.childForFieldName('left');
    if (k && l) shaderKernels.set(baseName(l) ?? textOf(l), k);
  }
  const dispatches: Dispatch[] = [];
  for (const c of calls) {
    if (c.name !== 'dispatch' || !c.receiver) continue;
    let shaderName: string | null = null;
    let kernel: DslBody | null = null;
    const r = unparen(c.receiver);
    if (r?.type === 'call_expression') {
      const f = unparen(r.childForFieldName('function'));
      if (f?.type === 'call_expression') kernel = kernelFromCompile(f);
      else if (f) {
        shaderName = baseName(f);
        // Prefer the shader declared in scope (`auto shader = device.compile(kernel)` in each test function).
        const local = shaderName && f.type === 'identifier' ? declOf(shaderName, c.node) : null;
        kernel = (local?.value ? kernelFromCompile(local.value) : null) ?? (shaderName ? shaderKernels.get(shaderName) ?? null : null);
      }
    }
    dispatches.push({ node: c.node, args: c.args, kernel, shaderName });
  }

  const callsByName = new Map<string, DslCall[]>();
  for (const c of calls) {
    let l = callsByName.get(c.name);
    if (!l) callsByName.set(c.name, (l = []));
    l.push(c);
  }
  const callsNamed = (name: string | RegExp): DslCall[] => {
    if (typeof name === 'string') return callsByName.get(name) ?? [];
    const out: DslCall[] = [];
    for (const [k, v] of callsByName) if (name.test(k)) out.push(...v);
    return out.sort((a, b) => a.node.startIndex - b.node.startIndex);
  };
  const callsIn = (scope: SyntaxNode, name: string | RegExp): DslCall[] => callsNamed(name).filter((c) => contains(scope, c.node));

  const hostLoopOf = (n: SyntaxNode): SyntaxNode | null => {
    let cur = n.parent;
    while (cur && cur.type !== 'function_definition') {
      if (cur.type === 'lambda_expression' && bodyByLambda.has(cur.id)) return null;
      if (NATIVE_LOOPS.has(cur.type) && !isDeviceLoop(cur) && !bodyOf(cur)) return cur;
      cur = cur.parent;
    }
    return null;
  };

  const RESTORE: Partial<Record<DslKind, [string, string]>> = {
    'dsl-if': [' if', '$if'],
    'dsl-else': [' else', '$else'],
    'dsl-while': [' while', '$while'],
    'dsl-switch': [' switch', '$switch'],
    'dsl-for': [' if ', '$for'],
    'dsl-case': [' if  ', '$case'],
    'dsl-default': [' if(1)  ', '$default'],
  };
  const lineStarts: number[] = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lineStarts.push(i + 1);
  function lineText(from: SyntaxNode, to: SyntaxNode = from): string | null {
    const a = lineStarts[from.startPosition.row] ?? 0;
    const endRow = to.endPosition.row + 1;
    const b = endRow < lineStarts.length ? lineStarts[endRow] - 1 : text.length;
    let out = text.slice(a, b);
    // `$shared<T>` and `Shared<T>` normalize to the same text.
    if (/\bShared\s*</.test(out)) return null;
    const edits: Array<[number, string, string]> = [];
    for (const [at, kind] of dsl) {
      if (at < a || at >= b) continue;
      const r = RESTORE[kind];
      if (!r) return null;
      edits.push([at - 1 - a, r[0], r[1]]);
    }
    edits.sort((x, y) => y[0] - x[0]);
    for (const [off, now, was] of edits) {
      if (out.slice(off, off + now.length) !== now) return null;
      out = out.slice(0, off) + was + out.slice(off + now.length);
    }
    return out;
  }

  return {
    source,
    cuda,
    bodies,
    bodyOf,
    kernelOf,
    inDsl: (n) => bodyOf(n) !== null,
    generatorOf,
    inDeviceCode: (n) => bodyOf(n) !== null || generatorOf(n) !== null,
    dslKind,
    isDeviceBranch,
    isDeviceLoop,
    isRecordTimeLoop,
    deviceBranchesAround,
    deviceLoopsAround,
    loopParts,
    conditionOf,
    laneDependent,
    warpDivergent,
    indexKey: (e) => indexKey(e),
    calls,
    callsNamed,
    callsIn,
    shared,
    sharedAccesses,
    submissions,
    dispatches,
    kernelOfShader: (name) => shaderKernels.get(name) ?? null,
    declOf,
    resourceOf,
    constValue: (n) => constValue(n),
    blockSizeAt,
    hostLoopOf,
    lineText,
    hotPath: (n) => cuda.hotPath(n),
    testOrBench: cuda.testOrBench,
  };
}

function contains(a: SyntaxNode, b: SyntaxNode): boolean {
  return a.startIndex <= b.startIndex && b.endIndex <= a.endIndex;
}

/**
 * A condition that lets only one thread (or one lane per warp) through: `thread_x() == 0u`,
 * `warp_lane_id() == 0u`, `warp_is_first_active_lane()`, or a conjunction (`&&`, or the DSL's `&`)
 * with one of them; an `||` alternative or a negation lets more through.
 */
export function selectsFewThreads(m: LuisaModel, cond: SyntaxNode | null): boolean {
  const c = unparen(cond);
  if (!c) return false;
  if (c.type === 'call_expression' && c.childForFieldName('function')?.text === 'warp_is_first_active_lane') return true;
  if (c.type !== 'binary_expression') return false;
  const op = c.childForFieldName('operator')?.type;
  const l = c.childForFieldName('left');
  const r = c.childForFieldName('right');
  if (op === '&&' || op === '&') return selectsFewThreads(m, l) || selectsFewThreads(m, r);
  if (op !== '==') return false;
  return (m.laneDependent(l) && m.constValue(r) !== null) || (m.laneDependent(r) && m.constValue(l) !== null);
}

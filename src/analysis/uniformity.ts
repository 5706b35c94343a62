import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { cudaModel, type CudaFunction, type CudaModel } from './cuda.js';
import { memoized } from './python.js';
import { pythonLaunches } from './pylaunch.js';
import { calleePath, lastName } from './syntax.js';

/**
 * Warp-uniformity of CUDA device expressions (catalog §1.4 WARP_UNIFORM / THREAD_DEPENDENT).
 *
 * Every expression gets one of three levels:
 * - `block`: the same value in every thread of the block (literals, parameters, `blockIdx`, `__constant__`, ...);
 * - `warp`: the same value in every lane of a warp, but different across warps (the warp index,
 *   `__ballot_sync` with a full mask, `__shfl_sync` from a uniform lane);
 * - `thread`: may differ between lanes of one warp.
 * WARP_UNIFORM is `block` or `warp`; THREAD_DEPENDENT is `thread`. A block barrier needs `block`:
 * all warps of the block must arrive, so a branch on the warp index is divergent for `__syncthreads`.
 */
export type UniformityLevel = 'block' | 'warp' | 'thread';
export type Uniformity = 'WARP_UNIFORM' | 'THREAD_DEPENDENT';

export interface DivergentBranch {
  /** The branching construct: `if_statement`, a loop, `conditional_expression`, `switch_statement`, a `&&`/`||`, or the early `return`/`continue`/`break`. */
  node: SyntaxNode;
  condition: SyntaxNode;
  kind: 'if' | 'loop' | 'ternary' | 'switch' | 'short-circuit' | 'early-exit';
  level: UniformityLevel;
}

export interface UniformityModel {
  level(expr: SyntaxNode): UniformityLevel;
  classify(expr: SyntaxNode): Uniformity;
  isWarpUniform(expr: SyntaxNode): boolean;
  isBlockUniform(expr: SyntaxNode): boolean;
  /**
   * Enclosing `if`/loop/`?:`/`switch`/`&&` conditions of `node` (within its function) that are not uniform at
   * the given granularity, plus earlier `return`/`continue`/`break` statements taken under such conditions.
   * `warp` (default) asks whether all lanes of a warp reach `node`; `block` whether all threads of the block do.
   */
  divergentBranchesAround(node: SyntaxNode, granularity?: 'warp' | 'block'): DivergentBranch[];
}

const RANK: Record<UniformityLevel, number> = { block: 0, warp: 1, thread: 2 };
const max = (a: UniformityLevel, b: UniformityLevel): UniformityLevel => (RANK[a] >= RANK[b] ? a : b);
const LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);
/** Parameter names that say they carry a thread's or lane's own index. */
const THREAD_PARAM = /^(tid|t_?id|ltid|gtid|tidx|tx|ty|lane|lane_?id|laneid|lane_?idx|thread_?id|thread_?idx|thread_?rank|thread|threadIdx_?x|local_?tid|global_?tid)$/i;
const THREAD_MACRO = /\bthreadIdx\b|\blane_?id\b|\blaneid\b|%laneid/i;
/** Calls whose result differs per lane whatever their arguments. */
const THREAD_CALLS = /^(atomic\w+|__lane_?id|lane_?id|laneid|__laneid|clock|clock64|__clock64|globaltimer|curand\w*|__shfl_(up|down|xor)_sync|__shfl_(up|down|xor)|__shfl|__match_any_sync|__fns|thread_rank|__popc_lanemask\w*|__lanemask_\w+)$/;
/** Warp-wide results: every lane of the (fully converged) warp receives the same value. */
const WARP_REDUCE = /^(__reduce_(add|min|max|and|or|xor)_sync|__match_all_sync|__activemask)$/;
const BLOCK_CALLS = /^(__syncthreads_count|__syncthreads_and|__syncthreads_or|group_index|num_threads|size|dim_threads|group_dim|num_blocks|block_index|block_rank)$/;
/** cooperative_groups: `meta_group_rank()` of a 32-wide tile is the warp index. */
const WARP_CALLS = /^(meta_group_rank|meta_group_size)$/;

export const uniformity: Analysis<UniformityModel> = {
  name: 'uniformity',
  compute: (source, config) => memoized(memo, source, config, build),
};
const memo = new WeakMap<Source, { config: ResolvedConfig; value: UniformityModel }>();

/**
 * Conventional names of the warp width (`WARP_SIZE`, `kWarpSize`, ...). When the source does not define one
 * (it comes from a shared header), it is the hardware warp width, 32.
 */
const WARP_WIDTH_NAME = /^(WARP_?SIZE|WARPSIZE|k_?[Ww]arp_?[Ss]ize|warp_?size|WarpSize|kWarpThreads|WARP_THREADS|THREADS_PER_WARP|kThreadsPerWarp|N_THREADS_PER_WARP)$/;
export function warpWidthValue(n: SyntaxNode | null | undefined, model: CudaModel): number | null {
  if (!n) return null;
  const v = model.constValue(n);
  if (v !== null) return v;
  const t = n.text.replace(/^.*::/, '');
  if ((n.type === 'identifier' || n.type === 'qualified_identifier' || n.type === 'type_identifier') && WARP_WIDTH_NAME.test(t) && !model.macros.has(t)) return 32;
  if (n.type === 'parenthesized_expression' && n.namedChildren.length === 1) return warpWidthValue(n.namedChildren[0], model);
  return null;
}

const fullMaskLiteral = /^(0x[fF]{8}[uUlL]*|~0[uUlL]*|~0x0+[uUlL]*|-1|0xffffffff[uUlL]*|\(unsigned\)\s*-1|~\(?0u?\)?)$/;

/** True when `n` is the full warp mask: a literal, `FULL_MASK`-style macro, or a const initialised to one. */
export function isFullMask(n: SyntaxNode | null | undefined, model: CudaModel, config: ResolvedConfig): boolean {
  if (!n) return false;
  const t = n.text.replace(/\s+/g, '');
  if (fullMaskLiteral.test(t) || fullMaskLiteral.test(t.replace(/^\((.*)\)$/, '$1'))) return true;
  if (n.type === 'identifier') {
    const mv = model.macros.get(n.text);
    if (mv !== undefined) return fullMaskLiteral.test(mv.replace(/\s+/g, '').replace(/^\((.*)\)$/, '$1'));
    if (config.vocab.full_mask_names.includes(n.text)) return true;
    // `const unsigned mask = 0xffffffffu;` in the same source.
    for (const d of model.source.root.descendantsOfType('init_declarator')) {
      if (d.childForFieldName('declarator')?.text === n.text && /\bconst(expr)?\b/.test(d.parent?.text.split('=')[0] ?? '')) {
        return isFullMask(d.childForFieldName('value'), model, config);
      }
    }
  }
  return false;
}

function build(source: Source, config: ResolvedConfig): UniformityModel {
  const model = cudaModel.compute(source, config);
  const root = source.root;

  // File-scope `__constant__`, `__shared__`, `__device__` and const variables: one address for every thread.
  const globals = new Set<string>();
  for (const d of root.descendantsOfType('declaration')) {
    if (model.functionOf(d)) continue;
    for (const c of d.namedChildren) {
      const id = c.type === 'init_declarator' || c.type === 'array_declarator' ? c.childForFieldName('declarator') : c.type === 'identifier' ? c : null;
      if (id?.type === 'identifier') globals.add(id.text);
    }
  }

  interface FnInfo {
    fn: CudaFunction | null;
    params: Map<string, number>;
    templ: Set<string>;
    /** Writes of each local: the written value (null: no value, e.g. `++i`) and the write node. */
    writes: Map<string, Array<{ value: SyntaxNode | null; at: SyntaxNode; index?: SyntaxNode | null; scope: SyntaxNode }>>;
    levels: Map<string, UniformityLevel>;
    /** The local a use of `name` at `use` refers to (innermost enclosing declaration), or null. */
    resolve(name: string, use: SyntaxNode): string | null;
    solved: boolean;
    /** Levels are final: expression results may be memoized. */
    final: boolean;
  }
  const fnInfo = new Map<number, FnInfo>();
  const levelMemo = new Map<number, UniformityLevel>();
  const paramBusy = new Set<string>();

  function declName(d: SyntaxNode | null): string | null {
    while (d && d.type !== 'identifier') {
      if (d.type === 'reference_declarator' || d.type === 'pointer_declarator' || d.type === 'array_declarator' || d.type === 'init_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
      else return null;
    }
    return d?.text ?? null;
  }

  function info(fn: CudaFunction | null, scopeNode: SyntaxNode): FnInfo {
    const key = fn?.node.id ?? -1;
    let fi = fnInfo.get(key);
    if (fi) return fi;
    const params = new Map<string, number>();
    const templ = new Set<string>();
    if (fn) {
      fn.params.forEach((p, i) => {
        const n = declName(p.childForFieldName('declarator'));
        if (n) params.set(n, i);
      });
      const t = fn.node.parent?.type === 'template_declaration' ? fn.node.parent.childForFieldName('parameters') : null;
      for (const p of t?.namedChildren ?? []) {
        const n = p.descendantsOfType(['identifier', 'type_identifier']).pop();
        if (n) templ.add(n.text);
      }
    }
    const writes: FnInfo['writes'] = new Map();
    // `__shared__` variables have one address per block: after the barrier that publishes them every thread
    // reads the same value, whichever thread wrote it (`if (tid == 0) s_total = ...; __syncthreads();`).
    const shared = new Set<string>();
    for (const d of (fn?.body ?? scopeNode).descendantsOfType('declaration')) {
      if (!/\b__shared__\b/.test(d.text.split(/[=;]/)[0])) continue;
      for (const c of d.namedChildren) {
        const nm = declName(c.type === 'init_declarator' ? c.childForFieldName('declarator') : c);
        if (nm) shared.add(nm);
      }
    }
    // Locals are keyed by their declaration: two loops that both declare `offset` are different variables.
    const body = fn?.body ?? scopeNode;
    const decls = new Map<string, Array<{ scope: SyntaxNode; start: number; key: string }>>();
    for (const d of body.descendantsOfType(['declaration', 'for_range_loop', 'condition_clause'])) {
      const scope = d.type === 'for_range_loop' ? d : d.parent?.type === 'for_statement' || d.parent?.type === 'condition_clause' ? (d.parent.type === 'condition_clause' ? d.parent.parent : d.parent) : d.parent;
      if (!scope) continue;
      const names = d.type === 'for_range_loop' ? [declName(d.childForFieldName('declarator'))] : d.namedChildren.map((c) => (c.type === 'init_declarator' ? declName(c.childForFieldName('declarator')) : c.type === 'identifier' || c.type === 'array_declarator' ? declName(c) : null));
      for (const nm of names) {
        if (!nm || shared.has(nm)) continue;
        const list = decls.get(nm) ?? [];
        list.push({ scope, start: d.startIndex, key: `${nm}#${d.id}` });
        decls.set(nm, list);
      }
    }
    const scopeOf = new Map<string, SyntaxNode>();
    const resolve = (name: string, use: SyntaxNode): string | null => {
      let best: { scope: SyntaxNode; key: string } | null = null;
      for (const c of decls.get(name) ?? []) {
        if (c.start > use.startIndex || c.scope.startIndex > use.startIndex || use.endIndex > c.scope.endIndex) continue;
        if (!best || c.scope.startIndex >= best.scope.startIndex) best = c;
      }
      if (best) scopeOf.set(best.key, best.scope);
      return best?.key ?? null;
    };
    const add = (name: string | null, value: SyntaxNode | null, at: SyntaxNode, index?: SyntaxNode | null) => {
      if (!name || shared.has(name)) return;
      const key = resolve(name, at);
      if (!key) return;
      const list = writes.get(key) ?? [];
      list.push({ value, at, index, scope: scopeOf.get(key)! });
      writes.set(key, list);
    };
    // Locals declared as pointers (`T* p = ...`), not arrays or values.
    const pointerLocals = new Set<string>();
    for (const d of body.descendantsOfType('declaration')) {
      for (const c of d.namedChildren) {
        const decl = c.type === 'init_declarator' ? c.childForFieldName('declarator') : c;
        if (decl?.type === 'pointer_declarator') {
          const nm = declName(decl);
          if (nm) pointerLocals.add(nm);
        }
      }
    }
    for (const d of body.descendantsOfType(['declaration', 'assignment_expression', 'update_expression', 'for_range_loop', 'condition_clause'])) {
      if (d.type === 'declaration' || d.type === 'condition_clause') {
        for (const c of d.namedChildren) {
          if (c.type === 'init_declarator') {
            const v = c.childForFieldName('value');
            // `int a[4] = {…}` / `T x(a, b)`: every element or argument contributes.
            add(declName(c.childForFieldName('declarator')), v, c);
          } else if (c.type === 'identifier' || c.type === 'array_declarator') {
            add(declName(c), null, c);
          }
        }
      } else if (d.type === 'for_range_loop') {
        add(declName(d.childForFieldName('declarator')), d.childForFieldName('right'), d);
      } else {
        let target = d.type === 'assignment_expression' ? d.childForFieldName('left') : d.childForFieldName('argument');
        let index: SyntaxNode | null = null;
        // `arr[i] = v` / `s.x = v`: the aggregate now holds a value that depends on v (and on i).
        let throughMemory = false;
        while (target && (target.type === 'subscript_expression' || target.type === 'field_expression' || target.type === 'parenthesized_expression' || target.type === 'pointer_expression')) {
          if (target.type === 'subscript_expression') index = target.childForFieldName('indices') ?? target.childForFieldName('index');
          if (target.type === 'subscript_expression' || (target.type === 'pointer_expression' && target.childForFieldName('operator')?.type === '*') || (target.type === 'field_expression' && target.childForFieldName('operator')?.type === '->')) throughMemory = true;
          target = target.childForFieldName('argument') ?? target.namedChildren[0] ?? null;
        }
        if (target?.type !== 'identifier') continue;
        // `*p = v` / `p[i] = v` / `p->f = v` through a local pointer stores to memory; the pointer keeps its value
        // (a pointer into shared memory set once for the block stays block-uniform, whatever is stored there).
        if (throughMemory && pointerLocals.has(target.text)) continue;
        const value = d.type === 'assignment_expression' ? d.childForFieldName('right') : null;
        add(target.text, value, d, index);
      }
    }
    fi = { fn, params, templ, writes, levels: new Map(), resolve, solved: false, final: false };
    fnInfo.set(key, fi);
    return fi;
  }

  /** Conditions of the branches and loops around `at` within `fi`'s function, at any level. */
  function controlLevel(at: SyntaxNode, fi: FnInfo, scope?: SyntaxNode): UniformityLevel {
    let lv: UniformityLevel = 'block';
    for (const b of enclosing(at)) {
      // A branch around the variable's whole scope does not make it differ between the lanes that are in there.
      if (scope && (b.node.startIndex < scope.startIndex || b.node.endIndex > scope.endIndex)) continue;
      lv = max(lv, evalExpr(b.condition, fi));
    }
    return lv;
  }

  function solve(fi: FnInfo): void {
    if (fi.solved) return;
    fi.solved = true;
    for (const k of fi.writes.keys()) fi.levels.set(k, 'block');
    // Monotone fixed point: levels only rise, three levels, so this ends quickly.
    for (let iter = 0; iter < 3 * fi.writes.size + 2; iter++) {
      let changed = false;
      for (const [name, ws] of fi.writes) {
        let lv = fi.levels.get(name)!;
        for (const w of ws) {
          if (lv === 'thread') break;
          if (w.value) lv = max(lv, evalExpr(w.value, fi));
          if (w.index) lv = max(lv, evalExpr(w.index, fi));
          lv = max(lv, controlLevel(w.at, fi, w.scope));
        }
        if (lv !== fi.levels.get(name)) {
          fi.levels.set(name, lv);
          changed = true;
        }
      }
      if (!changed) break;
    }
    fi.final = true;
  }

  function identLevel(node: SyntaxNode, fi: FnInfo): UniformityLevel {
    const name = node.text;
    if (name === 'threadIdx') return 'thread';
    if (name === 'blockIdx' || name === 'blockDim' || name === 'gridDim' || name === 'warpSize' || name === 'true' || name === 'false' || name === 'nullptr' || name === 'NULL') return 'block';
    const key = fi.resolve(name, node);
    if (key) {
      if (!fi.solved) solve(fi);
      return fi.levels.get(key) ?? 'block';
    }
    if (fi.templ.has(name)) return 'block';
    const pi = fi.params.get(name);
    if (pi !== undefined && fi.fn) return paramLevel(fi.fn, pi);
    const mv = model.macros.get(name);
    if (mv !== undefined) return THREAD_MACRO.test(mv) ? 'thread' : 'block';
    // Globals, enumerators, NVRTC placeholders and unknown names hold one value for the whole block.
    return 'block';
  }

  /**
   * A device function that runs a block barrier or a full-mask warp collective must be entered by the whole
   * block (warp) together, so it is written to be steered by values its callers share (tile indices, problem
   * sizes, a params struct). When none of its callers is in view, its parameters are taken as those shared
   * values; a parameter named as a thread or lane index is not. Visible callers are checked instead.
   */
  const collectiveMemo = new Map<number, boolean>();
  function collectiveHelper(fn: CudaFunction): boolean {
    let hit = collectiveMemo.get(fn.node.id);
    if (hit !== undefined) return hit;
    collectiveMemo.set(fn.node.id, false);
    hit = false;
    for (const c of fn.body?.descendantsOfType('call_expression') ?? []) {
      const path = calleePath(c.childForFieldName('function')) ?? '';
      const name = lastName(path) ?? path;
      // Calling a collective helper of this source makes the caller collective too.
      const callee = model.functions.find((g) => g.name === name && g.body && (g.isDevice || g.isKernel) && g.node.id !== fn.node.id);
      if (callee && collectiveHelper(callee)) {
        hit = true;
        break;
      }
      if (/^(__syncthreads(_count|_and|_or)?|__barrier_sync)$/.test(name) || /^(cg::|cooperative_groups::)?sync$/.test(path) || (/\.sync$/.test(path) && /this_thread_block|\bblock\b/.test(path))) {
        hit = true;
        break;
      }
      if (/^__(shfl(_up|_down|_xor)?|ballot|any|all|reduce_\w+|match_\w+)_sync$|^__syncwarp$/.test(name)) {
        const a = c.childForFieldName('arguments')?.namedChildren.filter((x) => x.type !== 'comment')[0];
        if (name === '__syncwarp' ? !a || isFullMask(a, model, config) : isFullMask(a, model, config)) {
          hit = true;
          break;
        }
      }
    }
    collectiveMemo.set(fn.node.id, hit);
    return hit;
  }
  const paramName = (fn: CudaFunction, i: number): string => declName(fn.params[i]?.childForFieldName('declarator') ?? null) ?? '';

  /** Kernel parameters are set once per launch; a device function's parameter is as uniform as its arguments at every call. */
  function paramLevel(fn: CudaFunction, i: number): UniformityLevel {
    if (fn.isKernel) return 'block';
    const key = `${fn.node.id}:${i}`;
    if (paramBusy.has(key)) return 'block';
    paramBusy.add(key);
    try {
      const sites = model.calls.filter((c) => c.name === fn.name && c.node.startIndex > 0 && !(c.node.startIndex >= fn.node.startIndex && c.node.endIndex <= fn.node.endIndex));
      // No visible caller: the catalog's definition leaves it THREAD_DEPENDENT, except in a collective helper.
      if (!sites.length) return collectiveHelper(fn) && !THREAD_PARAM.test(paramName(fn, i)) ? 'block' : 'thread';
      let lv: UniformityLevel = 'block';
      for (const s of sites) {
        const a = s.args[i];
        if (!a) continue;
        const cf = model.functionOf(s.node);
        const cfi = info(cf, root);
        lv = max(lv, max(evalExpr(a, cfi), controlLevel(s.node, cfi)));
      }
      return lv;
    } finally {
      paramBusy.delete(key);
    }
  }

  /** `threadIdx.x` itself, through locals written once from it, possibly plus a multiple of 32 (`blockIdx.x * blockDim.x`). */
  function isLinearThreadX(n: SyntaxNode | null, fi: FnInfo, depth = 0): boolean {
    if (!n || depth > 6) return false;
    if (n.type === 'parenthesized_expression' || n.type === 'cast_expression') return isLinearThreadX(n.childForFieldName('value') ?? n.namedChildren[n.namedChildren.length - 1] ?? null, fi, depth + 1);
    if (n.type === 'field_expression') return n.text.replace(/\s+/g, '') === 'threadIdx.x';
    if (n.type === 'identifier') {
      const key = fi.resolve(n.text, n);
      const ws = key ? fi.writes.get(key) : undefined;
      return !!ws && ws.length === 1 && isLinearThreadX(ws[0].value, fi, depth + 1);
    }
    if (n.type === 'binary_expression' && n.childForFieldName('operator')?.type === '+') {
      const l = n.childForFieldName('left');
      const r = n.childForFieldName('right');
      const multipleOf32 = (x: SyntaxNode | null) => {
        if (!x || evalExpr(x, fi) !== 'block') return false;
        const v = warpWidthValue(x, model);
        if (v !== null) return v % 32 === 0;
        // blockIdx.x * blockDim.x: blocks are made of whole warps when blockDim.x is a multiple of 32, the common case.
        return /\bblockDim\.x\b|\bwarpSize\b/.test(x.text);
      };
      return (isLinearThreadX(l, fi, depth + 1) && multipleOf32(r)) || (isLinearThreadX(r, fi, depth + 1) && multipleOf32(l));
    }
    return false;
  }

  /**
   * What the function shows about its block's x (and y) extent: every launch of the kernel in view uses one
   * constant block, an `assert(blockDim.x == K)`, or a block-stride loop `for (i = threadIdx.x; ...; i += K)`
   * (it covers each element once only when blockDim.x is K).
   */
  const shapeMemo = new Map<number, { x: number | null; y: number | null }>();
  function blockShape(fn: CudaFunction | null): { x: number | null; y: number | null } {
    if (!fn?.body) return { x: null, y: null };
    const hit = shapeMemo.get(fn.node.id);
    if (hit) return hit;
    const out: { x: number | null; y: number | null } = { x: null, y: null };
    shapeMemo.set(fn.node.id, out);
    const b = constantBlockOf(source, config, fn);
    if (b) {
      out.x = b[0];
      out.y = b[1];
      return out;
    }
    const valueOfText = (t: string): number | null => {
      const v = model.constValueOfText(t.trim());
      if (v !== null) return v;
      return WARP_WIDTH_NAME.test(t.trim().replace(/^.*::/, '')) ? 32 : null;
    };
    for (const c of fn.body.descendantsOfType('call_expression')) {
      const name = lastName(calleePath(c.childForFieldName('function')) ?? '') ?? '';
      if (!/^(assert|static_assert|CUDA_KERNEL_ASSERT|__builtin_assume|assume)$/.test(name)) continue;
      for (const m of c.text.matchAll(/blockDim\.([xy])\s*==\s*([A-Za-z_][\w:]*|\d+)/g)) {
        const v = valueOfText(m[2]);
        if (v !== null) out[m[1] as 'x' | 'y'] = v;
      }
    }
    if (out.x === null) {
      const fi = info(fn, root);
      for (const loop of fn.body.descendantsOfType('for_statement')) {
        const init = loop.childForFieldName('initializer');
        const upd = loop.childForFieldName('update');
        if (!init || upd?.type !== 'assignment_expression' || upd.childForFieldName('operator')?.type !== '+=') continue;
        const decl = init.type === 'declaration' ? init.namedChildren.find((c) => c.type === 'init_declarator') : null;
        const start = decl ? decl.childForFieldName('value') : init.type === 'assignment_expression' ? init.childForFieldName('right') : null;
        const name = decl ? declName(decl.childForFieldName('declarator')) : init.childForFieldName('left')?.text;
        if (!start || !name || upd.childForFieldName('left')?.text !== name) continue;
        if (start.type === 'field_expression' ? start.text.replace(/\s+/g, '') !== 'threadIdx.x' : !(start.type === 'identifier' && isLinearThreadX(start, fi))) continue;
        const k = warpWidthValue(upd.childForFieldName('right'), model);
        if (k !== null && k > 0) {
          out.x = k;
          break;
        }
      }
    }
    return out;
  }

  /** `threadIdx.y` is the same in a warp when blockDim.x is a multiple of 32 (the warp covers whole x rows); `.z` when blockDim.x·blockDim.y is. */
  function threadAxisLevel(axis: string, fi: FnInfo): UniformityLevel {
    if (axis !== 'y' && axis !== 'z') return 'thread';
    const sh = blockShape(fi.fn);
    if (sh.x === null) return 'thread';
    if (axis === 'y') return sh.x % 32 === 0 ? 'warp' : 'thread';
    if (sh.x % 32 === 0) return 'warp';
    return sh.y !== null && (sh.x * sh.y) % 32 === 0 ? 'warp' : 'thread';
  }

  function binaryLevel(n: SyntaxNode, fi: FnInfo): UniformityLevel {
    const op = n.childForFieldName('operator')?.type ?? '';
    const l = n.childForFieldName('left');
    const r = n.childForFieldName('right');
    const rv = r ? warpWidthValue(r, model) : null;
    const lv = l ? warpWidthValue(l, model) : null;
    if (l && isLinearThreadX(l, fi)) {
      // Warp index: threadIdx.x / 32, >> 5, / warpSize, & ~31 (lanes 32w..32w+31 share it).
      if (op === '/' && ((rv !== null && rv > 0 && rv % 32 === 0) || r?.text === 'warpSize')) return 'warp';
      if (op === '>>' && rv !== null && rv >= 5) return 'warp';
      if (op === '&' && rv !== null && (rv & 31) === 0) return 'warp';
      if (op === '&' && r && /^~\s*\(?\s*(31|0x1[fF]|warpSize\s*-\s*1)\s*\)?$/.test(r.text)) return 'warp';
      // threadIdx.x < 64 splits the block at a warp boundary: whole warps on each side.
      if (rv !== null && ((['<', '>='].includes(op) && rv % 32 === 0) || (['<=', '>'].includes(op) && (rv + 1) % 32 === 0))) return 'warp';
    }
    if (r && lv !== null && isLinearThreadX(r, fi) && ((['>', '<='].includes(op) && lv % 32 === 0) || (['>=', '<'].includes(op) && (lv + 1) % 32 === 0))) return 'warp';
    return max(l ? evalExpr(l, fi) : 'block', r ? evalExpr(r, fi) : 'block');
  }

  function callLevel(n: SyntaxNode, fi: FnInfo): UniformityLevel {
    const fnNode = n.childForFieldName('function');
    const path = calleePath(fnNode) ?? '';
    const name = lastName(path) ?? path;
    const args = n.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
    if (THREAD_CALLS.test(name)) return 'thread';
    if (name === '__ballot_sync' || name === '__any_sync' || name === '__all_sync') return isFullMask(args[0], model, config) ? 'warp' : 'thread';
    if (name === '__shfl_sync') {
      if (!isFullMask(args[0], model, config)) return 'thread';
      return args[2] && RANK[evalExpr(args[2], fi)] <= RANK.warp ? 'warp' : 'thread';
    }
    if (WARP_REDUCE.test(name)) return name === '__activemask' || isFullMask(args[0], model, config) ? 'warp' : 'thread';
    if (WARP_CALLS.test(name) && fnNode?.type === 'field_expression') return 'warp';
    if (BLOCK_CALLS.test(name) && (name.startsWith('__syncthreads') || fnNode?.type === 'field_expression')) return 'block';
    let lv: UniformityLevel = 'block';
    if (fnNode?.type === 'field_expression') lv = evalExpr(fnNode.childForFieldName('argument')!, fi);
    for (const a of args) lv = max(lv, evalExpr(a, fi));
    // A device function of this source that reads the thread index returns a per-thread value.
    const callee = model.functions.find((f) => f.name === name && f.body);
    if (callee && callee.body && THREAD_MACRO.test(callee.body.text)) lv = 'thread';
    return lv;
  }

  function evalExpr(n: SyntaxNode, fi: FnInfo): UniformityLevel {
    const hit = fi.final ? levelMemo.get(n.id) : undefined;
    if (hit !== undefined) return hit;
    let lv: UniformityLevel;
    switch (n.type) {
      case 'number_literal':
      case 'char_literal':
      case 'string_literal':
      case 'raw_string_literal':
      case 'true':
      case 'false':
      case 'null':
      case 'nullptr':
      case 'sizeof_expression':
      case 'alignof_expression':
      case 'type_descriptor':
      case 'primitive_type':
      case 'type_identifier':
        lv = 'block';
        break;
      case 'identifier':
        lv = identLevel(n, fi);
        break;
      case 'field_expression': {
        const arg = n.childForFieldName('argument');
        const t = arg?.text;
        lv = t === 'threadIdx' ? threadAxisLevel(n.childForFieldName('field')?.text ?? 'x', fi) : t === 'blockIdx' || t === 'blockDim' || t === 'gridDim' ? 'block' : arg ? evalExpr(arg, fi) : 'block';
        break;
      }
      case 'qualified_identifier':
        lv = 'block';
        break;
      case 'binary_expression':
        lv = binaryLevel(n, fi);
        break;
      case 'call_expression':
        lv = callLevel(n, fi);
        break;
      case 'comment':
        lv = 'block';
        break;
      default: {
        lv = 'block';
        for (const c of n.namedChildren) {
          lv = max(lv, evalExpr(c, fi));
          if (lv === 'thread') break;
        }
      }
    }
    if (fi.final && !paramBusy.size) levelMemo.set(n.id, lv);
    return lv;
  }

  /** Branch constructs around `node` inside its function, innermost first, with the condition each one tests. */
  function enclosing(node: SyntaxNode): Array<Omit<DivergentBranch, 'level'>> {
    const out: Array<Omit<DivergentBranch, 'level'>> = [];
    let child = node;
    let p = node.parent;
    const inside = (a: SyntaxNode | null, b: SyntaxNode) => !!a && a.startIndex <= b.startIndex && b.endIndex <= a.endIndex;
    while (p && p.type !== 'function_definition' && p.type !== 'lambda_expression' && p.type !== 'translation_unit') {
      const cond = p.childForFieldName('condition');
      if (p.type === 'if_statement' && cond && !inside(cond, child)) out.push({ node: p, condition: cond, kind: 'if' });
      else if (p.type === 'conditional_expression' && cond && !inside(cond, child)) out.push({ node: p, condition: cond, kind: 'ternary' });
      else if (p.type === 'switch_statement' && cond && !inside(cond, child)) out.push({ node: p, condition: cond, kind: 'switch' });
      else if (LOOPS.has(p.type)) {
        // Only the loop's initializer runs unconditionally once; everything else repeats while the condition holds.
        const init = p.childForFieldName('initializer');
        if (!inside(init, child)) {
          const c = cond ?? (p.type === 'for_range_loop' ? p.childForFieldName('right') : null);
          if (c) out.push({ node: p, condition: c, kind: 'loop' });
        }
      } else if (p.type === 'binary_expression' && ['&&', '||'].includes(p.childForFieldName('operator')?.type ?? '') && p.childForFieldName('right')?.id === child.id) {
        out.push({ node: p, condition: p.childForFieldName('left')!, kind: 'short-circuit' });
      }
      child = p;
      p = p.parent;
    }
    return out;
  }

  const levelOf = (n: SyntaxNode): UniformityLevel => {
    const fi = info(model.functionOf(n), root);
    if (!fi.solved) solve(fi);
    return evalExpr(n, fi);
  };

  function divergentBranchesAround(node: SyntaxNode, granularity: 'warp' | 'block' = 'warp'): DivergentBranch[] {
    const limit = granularity === 'warp' ? RANK.warp : RANK.block;
    const out: DivergentBranch[] = [];
    for (const b of enclosing(node)) {
      const level = levelOf(b.condition);
      if (RANK[level] > limit) out.push({ ...b, level });
    }
    const fn = model.functionOf(node);
    const body = fn?.body;
    if (!body) return out;
    const around = new Set(enclosing(node).map((b) => b.node.id));
    // An earlier exit taken by some threads: they never reach `node`.
    for (const ex of body.descendantsOfType(['return_statement', 'continue_statement', 'break_statement'])) {
      if (ex.startIndex >= node.startIndex) continue;
      if (model.functionOf(ex)?.node.id !== fn.node.id) continue;
      if (ex.type !== 'return_statement') {
        // `continue`/`break` only skip `node` when their own loop (or switch) also encloses `node`.
        let q = ex.parent;
        while (q && !LOOPS.has(q.type) && !(ex.type === 'break_statement' && q.type === 'switch_statement')) q = q.parent;
        if (!q || q.type === 'switch_statement' || !(q.startIndex <= node.startIndex && node.endIndex <= q.endIndex)) continue;
      }
      const guards = enclosing(ex).filter((b) => !around.has(b.node.id) && b.kind !== 'loop');
      for (const g of guards) {
        const level = levelOf(g.condition);
        if (RANK[level] > limit) {
          out.push({ node: ex, condition: g.condition, kind: 'early-exit', level });
          break;
        }
      }
    }
    return out;
  }

  return {
    level: levelOf,
    classify: (e) => (levelOf(e) === 'thread' ? 'THREAD_DEPENDENT' : 'WARP_UNIFORM'),
    isWarpUniform: (e) => levelOf(e) !== 'thread',
    isBlockUniform: (e) => levelOf(e) === 'block',
    divergentBranchesAround,
  };
}

/**
 * The constant block shape a kernel is launched with: every `<<<…>>>` of it in this source agrees, or, for a
 * kernel string, every Python launch of it in the module does. Null when unknown or inconsistent.
 */
export function constantBlockOf(source: Source, config: ResolvedConfig, fn: CudaFunction): [number, number, number] | null {
  if (!fn.isKernel) return null;
  const m = cudaModel.compute(source, config);
  let shapes = m.launches.filter((l) => l.kernel === fn.name).map((l) => m.dim3(l.block));
  if (!shapes.length && source.parent) {
    const pl = pythonLaunches.compute(source.parent, config);
    shapes = pl.launches.filter((l) => l.cudaName === fn.name).map((l) => pl.dims(l.block));
  }
  return shapes.length && shapes.every((s) => s && s.join() === shapes[0]!.join()) ? shapes[0] : null;
}

/** Integer value of `text` once `blockDim.x` is `bx` (C integer division), or null. */
export function evalWithBlockDim(text: string, bx: number, model: CudaModel): number | null {
  const t = text.replace(/\bblockDim\.x\b/g, String(bx)).replace(/\bwarpSize\b/g, '32').replace(/\b([A-Za-z_]\w*)\b/g, (id) => {
    const mv = model.macros.get(id);
    const v = mv !== undefined ? Number(mv.trim().replace(/[uUlL]+$/, '')) : NaN;
    return Number.isFinite(v) ? String(v) : id;
  }).replace(/(\d+)[uUlL]+\b/g, '$1');
  const tokens = t.match(/\d+|[-+*/%()]|\S/g);
  if (!tokens) return null;
  let i = 0;
  const prim = (): number | null => {
    const tok = tokens[i++];
    if (tok === '(') {
      const v = sum();
      return tokens[i++] === ')' ? v : null;
    }
    return tok !== undefined && /^\d+$/.test(tok) ? Number(tok) : null;
  };
  const prod = (): number | null => {
    let v = prim();
    while (v !== null && ['*', '/', '%'].includes(tokens[i] ?? '')) {
      const op = tokens[i++];
      const r = prim();
      if (r === null || (op !== '*' && r === 0)) return null;
      v = op === '*' ? v * r : op === '/' ? Math.trunc(v / r) : v % r;
    }
    return v;
  };
  const sum = (): number | null => {
    let v = prod();
    while (v !== null && ['+', '-'].includes(tokens[i] ?? '')) {
      const op = tokens[i++];
      const r = prod();
      if (r === null) return null;
      v = op === '+' ? v + r : v - r;
    }
    return v;
  };
  const v = sum();
  return i === tokens.length ? v : null;
}

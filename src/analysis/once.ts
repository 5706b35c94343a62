import type { NamePattern } from '../core/regex.js';
import type { ResolvedConfig } from '../config/schema.js';
import type { SyntaxNode } from '../core/types.js';
import type { ApiCall, CudaModel } from './cuda.js';
import type { PyModel } from './python.js';
import { calleePath, contains, unparen } from './syntax.js';

/**
 * Code that runs once (or only when a cached resource must grow) even though it sits in a loop or a
 * hot function: lazy initialization and grow-only reallocation. Allocation and configuration rules
 * (catalog `sync/*-in-hot-path` do-not-flag: "one-time configuration helper guarded by a
 * 'configured' flag") use it next to HOT_PATH:
 *
 * - `if (!d_buf) cudaMalloc(&d_buf, n);`, `if self._buf is None: self._buf = ...` — a null test of a
 *   value the guarded block then sets;
 * - `if (!configured) { ...; configured = true; }`, `if first: ...; first = False` — a flag the block resets;
 * - `if (bytes > cap) { cudaFree(p); cudaMalloc(&p, bytes); cap = bytes; }` — a capacity the block raises;
 * - `if key not in cache: cache[key] = ...`, `if (cache.find(k) == cache.end()) cache.emplace(...)`;
 * - `if (it == 0)` / `if i == 0:` on the loop variable (first iteration only);
 * - C++ `std::call_once(flag, [] { ... })` and the initializer of a function-local `static`.
 */
export function onceGuarded(n: SyntaxNode): boolean {
  let child = n;
  let p = n.parent;
  while (p && p.type !== 'function_definition') {
    if (p.type === 'lambda_expression' && p.parent?.type === 'argument_list') {
      const call = p.parent.parent;
      if (call?.type === 'call_expression' && /(^|::)call_once$/.test(calleePath(call.childForFieldName('function')) ?? '')) return true;
    }
    if (p.type === 'declaration' && p.children.some((c) => c.type === 'storage_class_specifier' && c.text === 'static') && p.parent?.type !== 'translation_unit') {
      // A function-local static is initialized once, on first pass.
      if (p.namedChildren.some((d) => d.type === 'init_declarator' && d.childForFieldName('value') && contains(d.childForFieldName('value')!, n))) return true;
    }
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const consequence = p.childForFieldName('consequence');
      if (consequence && consequence.id === child.id && guardsOnce(p, consequence)) return true;
    }
    child = p;
    p = p.parent;
  }
  return false;
}

function conditionOf(ifNode: SyntaxNode): SyntaxNode | null {
  let c = ifNode.childForFieldName('condition');
  // tree-sitter-cpp wraps the condition in a `condition_clause`.
  if (c?.type === 'condition_clause') c = c.childForFieldName('value') ?? c.namedChildren[0] ?? null;
  return unparen(c);
}

function guardsOnce(ifNode: SyntaxNode, block: SyntaxNode): boolean {
  const cond = conditionOf(ifNode);
  if (!cond) return false;
  return conjunctGuards(cond, ifNode, block);
}

const norm = (t: string) => t.replace(/^this->/, '').replace(/^self\./, '').replace(/\s+/g, '');

/** `a && b`: the block runs only when every conjunct holds, so one once-guard suffices; `a || b` needs all. */
function conjunctGuards(c: SyntaxNode, ifNode: SyntaxNode, block: SyntaxNode): boolean {
  const u = unparen(c);
  if (!u) return false;
  const op = u.childForFieldName('operator')?.text ?? u.children.find((x) => !x.isNamed)?.text;
  if ((u.type === 'binary_expression' || u.type === 'boolean_operator') && (op === '&&' || op === 'and')) {
    return conjunctGuards(u.childForFieldName('left')!, ifNode, block) || conjunctGuards(u.childForFieldName('right')!, ifNode, block);
  }
  if ((u.type === 'binary_expression' || u.type === 'boolean_operator') && (op === '||' || op === 'or')) {
    return conjunctGuards(u.childForFieldName('left')!, ifNode, block) && conjunctGuards(u.childForFieldName('right')!, ifNode, block);
  }
  return singleGuard(u, ifNode, block);
}

const CAPACITY = /(?:^|_|\.|>|(?<=[a-z])(?=[A-Z]))(?:cap|capacity|Cap|Capacity|allocated|Allocated|reserved|Reserved|high_water|HighWater)(?=$|_|[A-Z(\]])/;

function singleGuard(u: SyntaxNode, ifNode: SyntaxNode, block: SyntaxNode): boolean {
  // `!x`, `not x`, `!cache.count(k)`, `!cache.contains(k)`.
  if ((u.type === 'unary_expression' && u.childForFieldName('operator')?.text === '!') || u.type === 'not_operator') {
    const arg = unparen(u.childForFieldName('argument') ?? u.namedChildren[0]);
    if (!arg) return false;
    if (arg.type === 'call_expression' || arg.type === 'call') {
      const fn = arg.childForFieldName('function');
      const recv = fn?.childForFieldName('argument') ?? fn?.childForFieldName('object');
      return !!recv && /(^|[.>])(count|contains|has_key)$/.test(fn?.text ?? '') && writes(block, recv.text, true);
    }
    return isName(arg) && writes(block, arg.text, false);
  }
  // A bare flag the block resets: `if (first) { ...; first = false; }`.
  if (isName(u)) return writes(block, u.text, false);
  if (u.type === 'binary_expression' || u.type === 'comparison_operator') {
    const parts = u.namedChildren;
    const ops = u.children.filter((x) => !x.isNamed).map((x) => x.text);
    if (parts.length !== 2) return false;
    const [a, b] = parts.map((x) => unparen(x)!);
    const op = ops.join(' ');
    if (!a || !b) return false;
    // Membership: `key not in cache` / `cache.find(k) == cache.end()`.
    if (op === 'not in') return writes(block, b.text, true);
    if (op === '==' && /\.find\(/.test(a.text) && /\.end\(\)$/.test(b.text)) return writes(block, a.text.replace(/\.find\(.*$/s, ''), true);
    // Null test of something the block then sets (lazy initialization).
    const nullish = (x: SyntaxNode) => /^(nullptr|NULL|None)$/.test(x.text);
    if ((op === '==' || op === 'is') && (nullish(b) || nullish(a))) {
      const g = nullish(b) ? a : b;
      return isName(g) && writes(block, g.text, false);
    }
    // First iteration of a loop: `it == 0`.
    if (op === '==' && (b.text === '0' || a.text === '0')) {
      const g = b.text === '0' ? a : b;
      return g.type === 'identifier' && loopVariables(ifNode).has(g.text);
    }
    // Grow-only reallocation: `bytes > cap` where the block raises `cap`.
    if (/^[<>]=?$/.test(op)) {
      for (const side of [a, b]) if (CAPACITY.test(side.text) && isName(side) && writes(block, side.text, false)) return true;
      return false;
    }
  }
  return false;
}

function isName(n: SyntaxNode): boolean {
  return ['identifier', 'attribute', 'field_expression', 'qualified_identifier'].includes(n.type);
}

/** The block assigns `name` (or, for a container, stores into it), or passes `&name` out. */
function writes(block: SyntaxNode, name: string, container: boolean): boolean {
  const want = norm(name);
  for (const a of block.descendantsOfType(['assignment', 'augmented_assignment', 'assignment_expression', 'pattern_list', 'pointer_expression', 'call', 'call_expression'])) {
    if (a.type === 'pointer_expression') {
      if (a.children[0]?.text === '&' && norm(a.childForFieldName('argument')?.text ?? '') === want) return true;
      continue;
    }
    if (a.type === 'call' || a.type === 'call_expression') {
      if (!container) continue;
      const fn = a.childForFieldName('function');
      const recv = fn?.childForFieldName('object') ?? fn?.childForFieldName('argument');
      const meth = fn?.childForFieldName('attribute')?.text ?? fn?.childForFieldName('field')?.text ?? '';
      if (recv && norm(recv.text) === want && /^(add|append|setdefault|update|insert|emplace|try_emplace|insert_or_assign|__setitem__)$/.test(meth)) return true;
      continue;
    }
    if (a.type === 'pattern_list') {
      if (a.namedChildren.some((c) => norm(c.text) === want)) return true;
      continue;
    }
    let left = a.childForFieldName('left');
    if (!left) continue;
    if (container) while (left && (left.type === 'subscript' || left.type === 'subscript_expression')) left = left.childForFieldName('value') ?? left.childForFieldName('argument') ?? left.namedChildren[0];
    if (left && norm(left.text) === want) return true;
    if (left?.type === 'pattern_list' || left?.type === 'tuple_pattern') if (left.namedChildren.some((c) => norm(c.text) === want)) return true;
  }
  return false;
}

/**
 * Iteration counters of the loops around `n` in its function: `for i in ...`, `for (int it = 0; ...)`,
 * and names a `while` loop's body increments (`++rounds`, `rounds += 1`).
 */
function loopVariables(n: SyntaxNode): Set<string> {
  const out = new Set<string>();
  let p = n.parent;
  while (p && p.type !== 'function_definition') {
    if (p.type === 'while_statement' || p.type === 'do_statement') {
      for (const u of p.descendantsOfType(['update_expression', 'augmented_assignment', 'assignment_expression'])) {
        const target = u.childForFieldName('argument') ?? u.childForFieldName('left');
        const op = u.type === 'update_expression' ? '++' : u.childForFieldName('operator')?.text ?? u.children.find((c) => !c.isNamed)?.text;
        if (target?.type === 'identifier' && (op === '++' || op === '+=' || /\+\+/.test(u.text))) out.add(target.text);
      }
    }
    if (p.type === 'for_statement') {
      const left = p.childForFieldName('left');
      if (left) for (const id of left.type === 'identifier' ? [left] : left.descendantsOfType('identifier')) out.add(id.text);
      const init = p.childForFieldName('initializer');
      if (init) for (const d of init.descendantsOfType('init_declarator')) out.add(d.childForFieldName('declarator')?.text ?? '');
      if (init?.type === 'assignment_expression') out.add(init.childForFieldName('left')?.text ?? '');
    }
    p = p.parent;
  }
  return out;
}

// ---------------------------------------------------------------- setup once per buffer

/**
 * A raw device allocation or free (`alloc_calls`) that HOT_PATH calls hot but that runs once per
 * buffer, not once per work item, so `sync/malloc-free-in-hot-path` leaves it to the cold-path rule
 * `memory/raw-cuda-malloc` (which reports the allocations):
 *
 * - a setup or teardown loop: the call allocates a different, kept buffer on each iteration
 *   (`cudaMalloc(&plan[dev].d_data, n)` per device, a local `d_tile` pushed into a vector) or frees
 *   each element of a collection (`for (auto& kv : cache) cudaFree(kv.second)`), with no counterpart
 *   call on the same buffer in the loop nest (that would be churn) and outside `hot_path_functions`;
 * - in a function hot only by its name (`run_*`) that drives its own loop of GPU work, an allocation
 *   before that loop or a free after it (the hoisted form), unless it sits between two GPU operations.
 */
export function setupOnceCall(m: CudaModel, c: ApiCall, config: ResolvedConfig): boolean {
  const f = allocFacts(m, config);
  const isFree = f.isFree(c);
  const counterparts = f.allocs.filter((o) => f.isFree(o) !== isFree);
  return perElement(m, c, counterparts, isFree, config.hotPathFunctions) || hoistedOutOfDriverLoop(m, c, f.gpuOps);
}

interface AllocFacts { allocs: ApiCall[]; isFree: (c: ApiCall) => boolean; gpuOps: SyntaxNode[] }
const factsMemo = new WeakMap<CudaModel, { config: ResolvedConfig; value: AllocFacts }>();

function allocFacts(m: CudaModel, config: ResolvedConfig): AllocFacts {
  const hit = factsMemo.get(m);
  if (hit && hit.config === config) return hit.value;
  const allocs = m.callsMatching(config.vocab.alloc_calls);
  const frees = new Set(m.callsMatching(config.vocab.raw_free_calls));
  const gpuOps = [...m.launches.map((l) => l.node), ...m.calls.filter((c) => m.isGpuOp(c.node)).map((c) => c.node)];
  const value: AllocFacts = { allocs, isFree: (c) => frees.has(c) || /Free/.test(c.name), gpuOps };
  factsMemo.set(m, { config, value });
  return value;
}

/** The buffer a call allocates into (`&p`, `&bufs[i]`, `(void**)&plan[i].d`) or frees (`p`, `it->second`). */
function bufferOf(c: ApiCall, isFree: boolean): SyntaxNode | null {
  const arg = c.args[0];
  if (!arg) return null;
  if (isFree) return unparen(arg);
  const addr = [arg, ...arg.descendantsOfType('pointer_expression')].find((n) => n.type === 'pointer_expression' && n.children[0]?.text === '&');
  return unparen(addr?.childForFieldName('argument'));
}

const identifiersIn = (n: SyntaxNode): string[] => [n, ...n.descendantsOfType('identifier')].filter((x) => x.type === 'identifier').map((x) => x.text);

/**
 * Names that take a new value on every iteration of `loop`: the variables a `for` declares, assigns
 * or steps, a range-for's declarators, `++`/`--` targets, and locals the body pulls out of a
 * container (`auto it = blocks.begin();`, `Plan& p = plans[i];`).
 */
function perIterationNames(loop: SyntaxNode): Set<string> {
  const out = new Set<string>();
  const add = (n: SyntaxNode | null | undefined) => n && identifiersIn(n).forEach((t) => out.add(t));
  if (loop.type === 'for_range_loop') add(loop.childForFieldName('declarator'));
  if (loop.type === 'for_statement') {
    const init = loop.childForFieldName('initializer');
    for (const d of init ? [init, ...init.descendantsOfType('init_declarator')] : []) {
      if (d.type === 'init_declarator') add(d.childForFieldName('declarator'));
      if (d.type === 'assignment_expression') add(d.childForFieldName('left'));
    }
    add(loop.childForFieldName('update'));
  }
  for (const u of loop.descendantsOfType('update_expression')) add(u.childForFieldName('argument'));
  const body = loop.childForFieldName('body');
  for (const d of body?.descendantsOfType('init_declarator') ?? []) {
    const v = unparen(d.childForFieldName('value'));
    const fromContainer = v && (v.type === 'subscript_expression' || (v.type === 'call_expression' && /(^|[.>])(begin|front|back|top)$/.test(calleePath(v.childForFieldName('function')) ?? '')));
    if (fromContainer) add(d.childForFieldName('declarator'));
  }
  return out;
}

const STORE_CALL = /(^|[.>])(push_back|emplace_back|emplace|insert|push|push_front|append)$/;

/** `name` is declared in `loop`'s body and its value is kept in a container there (`v.push_back(p)`, `m[k] = p`). */
function storedPerIteration(loop: SyntaxNode, name: string): boolean {
  const body = loop.childForFieldName('body');
  if (!body) return false;
  const declared = body.descendantsOfType('init_declarator').some((d) => identifiersIn(d.childForFieldName('declarator') ?? d).includes(name))
    || body.descendantsOfType('declaration').some((d) => d.namedChildren.some((c) => c.type !== 'init_declarator' && identifiersIn(c).includes(name) && c.type !== 'primitive_type' && c.type !== 'type_identifier'));
  if (!declared) return false;
  const stored = body.descendantsOfType('call_expression').some((call) => STORE_CALL.test(calleePath(call.childForFieldName('function')) ?? '') && identifiersIn(call.childForFieldName('arguments') ?? call).includes(name));
  const assigned = body.descendantsOfType('assignment_expression').some((a) => a.childForFieldName('left')?.type === 'subscript_expression' && identifiersIn(a.childForFieldName('right') ?? a).includes(name));
  return stored || assigned;
}

/**
 * A setup or teardown loop: the call allocates a different, kept buffer on each iteration or frees
 * each element of a collection. The number of calls is the number of buffers, not of work items,
 * and no pool avoids them; churn (a buffer allocated and freed again on each pass) is excluded by
 * requiring no counterpart call on the same buffer anywhere in the loop nest.
 */
function perElement(m: CudaModel, c: ApiCall, counterparts: ApiCall[], isFree: boolean, hotNames: NamePattern): boolean {
  const loops = m.loopsOf(c.node);
  const fn = m.functionOf(c.node);
  if (!loops.length || !fn || hotNames.test(fn.name)) return false;
  const buf = bufferOf(c, isFree);
  if (!buf) return false;
  const vars = perIterationNames(loops[0]);
  const varies = identifiersIn(buf).some((t) => vars.has(t) && t !== buf.text) || (vars.has(buf.text) && loops[0].type === 'for_range_loop');
  const kept = !isFree && buf.type === 'identifier' && storedPerIteration(loops[0], buf.text);
  if (!varies && !kept) return false;
  const nest = loops[loops.length - 1];
  const key = buf.text.replace(/\s+/g, '');
  return !counterparts.some((o) => o !== c && contains(nest, o.node) && bufferOf(o, !isFree)?.text.replace(/\s+/g, '') === key);
}

/**
 * A function that is hot only by its name (`run_*`, `launch_*`) but drives its own loop of GPU work:
 * an allocation before that loop or a free after it is the hoisted, once-per-run form, unless it
 * sits between two GPU operations.
 */
function hoistedOutOfDriverLoop(m: CudaModel, c: ApiCall, gpuOps: SyntaxNode[]): boolean {
  const fn = m.functionOf(c.node);
  if (!fn?.body || m.loopOf(c.node)) return false;
  const inFn = gpuOps.filter((o) => contains(fn.body!, o) && m.functionOf(o)?.node.id === fn.node.id);
  const drivesLoop = inFn.some((o) => m.loopOf(o));
  const between = inFn.some((o) => o.startIndex < c.node.startIndex) && inFn.some((o) => o.startIndex > c.node.endIndex);
  return drivesLoop && !between;
}

/**
 * Python counterpart of `setupOnceCall`, for frees only: `for label, ptr in buffers: runtime.free(ptr)`
 * is a teardown loop that frees each element of a collection once (the loop's own target is freed
 * and the loop allocates nothing), not a buffer allocated and released again on every pass.
 * (`memory/raw-cuda-malloc` reports allocations, never frees, so only the hot-path rule needs it.)
 */
export function pySetupOnceCall(m: PyModel, call: SyntaxNode, config: ResolvedConfig): boolean {
  const { raw_free_calls: freeCalls, alloc_calls: allocCalls } = config.vocab;
  const loop = m.loopOf(call);
  if (!loop || loop.type !== 'for_statement' || !m.callMatches(call, freeCalls)) return false;
  const targets = new Set(identifiersIn(loop.childForFieldName('left') ?? loop));
  const arg = call.childForFieldName('arguments')?.namedChildren[0];
  if (!arg || !identifiersIn(arg).some((t) => targets.has(t))) return false;
  const body = loop.childForFieldName('body');
  return !body?.descendantsOfType('call').some((c) => c.id !== call.id && m.callMatches(c, allocCalls) && !m.callMatches(c, freeCalls));
}

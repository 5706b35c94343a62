import { cudaModel, type CudaFunction, type CudaModel } from '../../../src/analysis/cuda.js';
import { pythonLaunches } from '../../../src/analysis/pylaunch.js';
import { uniformity, type UniformityModel } from '../../../src/analysis/uniformity.js';
import { calleePath, pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { collectSingleAssignments } from '../../../src/sources/nvrtc.js';

const RESTRICT = /^(__restrict__|__restrict|restrict)$/;
const ATOMIC = /^atomic\w*$/;
const LDG = /^__ldg$/;
/** Explicit cache-operator loads: the author chose the cache policy; const __restrict__ changes none of them. */
const CACHE_HINT_LOAD = /^__ld(cg|ca|cs|lu|cv)$/;

interface PtrParam {
  index: number;
  node: SyntaxNode;
  name: string;
  pointeeConst: boolean;
  restrict: boolean;
  /** `volatile T* p`: data another agent changes while the kernel runs (flags, mailboxes). */
  volatile: boolean;
  star: SyntaxNode;
}

/** `T* p` parameters (one level of indirection, named): the only shape `const T* __restrict__` applies to. */
function pointerParams(fn: CudaFunction): PtrParam[] {
  const out: PtrParam[] = [];
  fn.params.forEach((p, index) => {
    if (p.type !== 'parameter_declaration') return;
    const d = p.childForFieldName('declarator');
    const inner = d?.childForFieldName('declarator');
    if (d?.type !== 'pointer_declarator' || inner?.type !== 'identifier') return;
    const star = d.children.find((c) => c.text === '*');
    if (!star) return;
    out.push({
      index,
      node: p,
      name: inner.text,
      pointeeConst: p.children.some((c) => c.type === 'type_qualifier' && c.text === 'const'),
      // `__restrict` (no trailing underscores) parses as ms_pointer_modifier > ms_restrict_modifier.
      restrict: d.children.some((c) => (c.type === 'type_qualifier' || c.type === 'ms_pointer_modifier') && RESTRICT.test(c.text)),
      volatile: p.children.some((c) => c.type === 'type_qualifier' && c.text === 'volatile'),
      star,
    });
  });
  return out;
}

const isConstPointerParam = (p: SyntaxNode | undefined): boolean =>
  !!p && p.childForFieldName('declarator')?.type === 'pointer_declarator' && p.children.some((c) => c.type === 'type_qualifier' && c.text === 'const');

const LOOP_TYPES = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);

/** Some pointer parameter of a function in this source is declared `__restrict__` / `__restrict`. */
const restrictMemo = new WeakMap<SyntaxNode, boolean>();
function usesRestrict(root: SyntaxNode): boolean {
  let v = restrictMemo.get(root);
  if (v === undefined) {
    v = root.descendantsOfType('parameter_declaration').some((p) => /\b(__restrict__|__restrict)\b/.test(p.text));
    restrictMemo.set(root, v);
  }
  return v;
}

const inLoop = (n: SyntaxNode, body: SyntaxNode): boolean => {
  for (let p = n.parent; p && p.id !== body.id; p = p.parent) if (LOOP_TYPES.has(p.type)) return true;
  return false;
};

/**
 * The pointer's data is loaded more than once per thread: a read inside a loop, two or more read sites, or the
 * same through a `const T* row = p + off` local. Only then can the read-only path or load reordering pay.
 */
function reused(body: SyntaxNode, name: string, mine: SyntaxNode[], uses: Use[]): boolean {
  let sites = 0;
  const aliases = new Set<string>();
  for (let i = 0; i < mine.length; i++) {
    const id = mine[i];
    if (uses[i] === 'read' || uses[i] === 'scalar' || uses[i] === 'ldg') {
      const decl = ancestorOf(id, 'init_declarator', body);
      const local = decl?.childForFieldName('declarator');
      // Only a pointer local (`const float* row = p + off`) carries the loads on; `float v = p[i]` is the load.
      const aliasName = local?.type === 'pointer_declarator' ? local.descendantsOfType('identifier').pop()?.text : undefined;
      if (aliasName && aliasName !== name) aliases.add(aliasName);
      else sites++;
      if (inLoop(id, body)) return true;
    }
  }
  if (aliases.size) {
    for (const a of body.descendantsOfType('identifier')) {
      if (!aliases.has(a.text)) continue;
      const d = a.parent?.type === 'init_declarator' || a.parent?.type === 'pointer_declarator';
      if (d) continue;
      sites++;
      if (inLoop(a, body)) return true;
    }
  }
  return sites >= 2;
}

function ancestorOf(n: SyntaxNode, type: string, stop: SyntaxNode): SyntaxNode | null {
  for (let p = n.parent; p && p.id !== stop.id; p = p.parent) if (p.type === type) return p;
  return null;
}

/** `scalar`: a load of one fixed element (`*p`, `p[2]`, `p->n`), a by-reference scalar rather than an array. */
type Use = 'read' | 'scalar' | 'ldg' | 'write' | 'neutral' | 'unknown';

/** What a call does with a pointer passed at argument `i`. */
function callUse(m: CudaModel, call: SyntaxNode, arg: SyntaxNode): Use {
  const name = calleePath(call.childForFieldName('function'))?.split(/::|\./).pop() ?? '';
  if (ATOMIC.test(name)) return 'write';
  if (LDG.test(name) || CACHE_HINT_LOAD.test(name)) return 'ldg';
  const i = call.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment').findIndex((a) => a.id === arg.id) ?? -1;
  const callee = m.functions.find((f) => f.name === name && (f.isDevice || f.isKernel));
  // A device function of the same source that takes `const T*` there only reads; anything else may write.
  if (callee && i >= 0 && isConstPointerParam(callee.params[i])) return 'read';
  return 'unknown';
}

/** Classify one use of pointer parameter `id` in the kernel body. */
function useOf(m: CudaModel, id: SyntaxNode, u?: UniformityModel): Use {
  let top = id;
  let p = top.parent;
  while (p && (p.type === 'parenthesized_expression' || (p.type === 'binary_expression' && /^[+-]$/.test(p.childForFieldName('operator')?.text ?? '')))) {
    top = p;
    p = p.parent;
  }
  if (!p) return 'unknown';
  let access: SyntaxNode | null = null;
  if (p.type === 'subscript_expression' && p.childForFieldName('argument')?.id === top.id) access = p;
  else if (p.type === 'pointer_expression' && p.childForFieldName('operator')?.text === '*') access = p;
  else if (p.type === 'field_expression' && p.childForFieldName('operator')?.text === '->' && p.childForFieldName('argument')?.id === top.id) access = p;
  if (!access) {
    if (p.type === 'argument_list' && p.parent?.type === 'call_expression') return callUse(m, p.parent, top);
    if (p.type === 'binary_expression') return 'neutral'; // comparisons (`p != nullptr`)
    if (p.type === 'assignment_expression' && p.childForFieldName('left')?.id === top.id) return 'neutral';
    if (p.type === 'update_expression') return 'neutral';
    if (p.type === 'init_declarator' || p.type === 'assignment_expression') {
      // Copied into a local: fine only when the local is itself a pointer to const.
      const decl = p.type === 'init_declarator' ? p.parent : null;
      return decl?.children.some((c) => c.type === 'type_qualifier' && c.text === 'const') ? 'read' : 'unknown';
    }
    if (p.type === 'condition_clause' || p.type === 'if_statement') return 'neutral';
    // `bias ? bias[i] : 0`: the pointer as the test only; as a branch value it may flow anywhere.
    if (p.type === 'conditional_expression') return p.childForFieldName('condition')?.id === top.id ? 'neutral' : 'unknown';
    if (p.type === 'unary_expression' && p.childForFieldName('operator')?.text === '!') return 'neutral';
    return 'unknown';
  }
  let a = access;
  while (a.parent && (a.parent.type === 'field_expression' || a.parent.type === 'parenthesized_expression' || a.parent.type === 'subscript_expression') && a.parent.namedChildren[0]?.id === a.id) a = a.parent;
  const q = a.parent;
  if (!q) return 'read';
  if (q.type === 'assignment_expression' && q.childForFieldName('left')?.id === a.id) return 'write';
  if (q.type === 'update_expression') return 'write';
  if (q.type === 'pointer_expression' && q.childForFieldName('operator')?.text === '&') {
    const c = q.parent;
    if (c?.type === 'argument_list' && c.parent?.type === 'call_expression') return callUse(m, c.parent, q);
    return 'unknown';
  }
  return top.id === id.id && (fixedElement(access) || (!!u && warpUniformElement(access, u))) ? 'scalar' : 'read';
}

/**
 * `const float m = mean[row];` with `row` the same for every lane of a warp (`blockIdx.x * warps + threadIdx.x / 32`):
 * each warp loads one address into a register, a broadcast served by one transaction, like a by-reference scalar;
 * the read-only path gains nothing there.
 */
function warpUniformElement(access: SyntaxNode, u: UniformityModel): boolean {
  if (access.type !== 'subscript_expression') return false;
  // Only a load the code itself keeps in a register (`const float m = mean[row];`): inside an expression a
  // uniform `w[k]` may be re-read after every store, which is what `__restrict__` lets the compiler skip.
  if (access.parent?.type !== 'init_declarator' || access.parent.childForFieldName('value')?.id !== access.id) return false;
  const idx = access.childForFieldName('indices') ?? access.childForFieldName('index') ?? access.namedChildren[1];
  const inner = idx?.type === 'subscript_argument_list' ? idx.namedChildren.filter((c) => c.type !== 'comment') : idx ? [idx] : [];
  return inner.length === 1 && u.isWarpUniform(inner[0]);
}

/** `*p`, `p[3]`, `p->n` on the parameter itself: one fixed element, the same address for every thread. */
function fixedElement(access: SyntaxNode): boolean {
  if (access.type === 'pointer_expression' || access.type === 'field_expression') return true;
  const idx = access.childForFieldName('indices') ?? access.childForFieldName('index') ?? access.namedChildren[1];
  const inner = idx?.type === 'subscript_argument_list' ? idx.namedChildren.filter((c) => c.type !== 'comment') : idx ? [idx] : [];
  return inner.length === 1 && unparen(inner[0])?.type === 'number_literal';
}

/** The buffer a launch argument names: `d_x`, `d_x + off`, `(double*)d_x`, `x.data.ptr`, `runtime.pointer(x)` → `d_x` / `x`. */
function bufferOf(text: string): string {
  let t = text.replace(/\s+/g, '');
  t = t.replace(/\((?:const)?[\w:]+\*+\)/g, '').replace(/^(?:reinterpret_cast|static_cast)<[^>]*>/, '');
  for (;;) {
    const m = /^(?:[\w.]+\.)?(?:pointer|int|raw_pointer_cast|thrust::raw_pointer_cast|get)\((.*)\)$/.exec(t);
    if (!m) break;
    t = m[1];
  }
  t = t.replace(/^&/, '');
  const id = /^[A-Za-z_][\w]*(?:(?:\.|->)[A-Za-z_]\w*)*/.exec(t)?.[0] ?? t;
  return id.replace(/(\.data\.ptr|\.data|\.ptr|\.data_ptr)$/, '');
}

interface LaunchFacts {
  /** Per launch, the argument texts by parameter index. */
  argLists: string[][];
  /** Argument names known to hold `__constant__` memory. */
  constantNames: Set<string>;
}

function launchFacts(ctx: CheckContext, m: CudaModel, fn: CudaFunction): LaunchFacts {
  const argLists: string[][] = [];
  const constantNames = new Set<string>();
  const py = ctx.source.parent;
  if (py) {
    const assigns = collectSingleAssignments(py.root);
    const pl = pythonLaunches.compute(py, ctx.config);
    for (const l of pl.launches) {
      if (l.cudaName !== fn.name) continue;
      const a = pyArgs(l.node);
      let tuple = unparen(l.via === 'runtime.launch' ? (a.keywords.get('args') ?? a.keywords.get('params') ?? a.keywords.get('kernel_args') ?? a.positional[3]) : (a.positional[2] ?? a.keywords.get('args')));
      if (tuple?.type === 'identifier') tuple = unparen(assigns.get(tuple.text) ?? tuple);
      if (tuple?.type !== 'tuple' && tuple?.type !== 'list') continue;
      argLists.push(tuple.namedChildren.filter((c) => c.type !== 'comment').map((c) => c.text));
    }
    // `mod.get_global("c_table")`: a pointer into the module's __constant__ bank.
    for (const [name, v] of assigns) {
      if (v?.type === 'call' && /(^|\.)get_global$/.test(calleePath(v.childForFieldName('function')) ?? '')) constantNames.add(name);
    }
  } else {
    for (const l of m.launches) if (l.kernel === fn.name) argLists.push(l.args.map((x) => x.text));
    for (const d of ctx.source.root.descendantsOfType('declaration')) {
      if (!/\b__constant__\b/.test(d.text.split(/[=;[]/)[0])) continue;
      const decl = d.childForFieldName('declarator');
      const first = decl?.type === 'identifier' ? decl : decl?.descendantsOfType('identifier')[0];
      if (first) constantNames.add(first.text);
    }
    for (const c of m.calls) {
      if (c.name === 'cudaGetSymbolAddress' && c.args[0]) constantNames.add(bufferOf(c.args[0].text));
    }
  }
  return { argLists, constantNames };
}

function analyse(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  let uniModel: UniformityModel | null = null;
  const uni = () => (uniModel ??= ctx.get(uniformity));
  const kernels = m.functions.filter((f) => f.isKernel && f.body);
  if (!kernels.length) return;
  const pyLines = ctx.source.parent?.text.split('\n');
  for (const fn of kernels) {
    const params = pointerParams(fn);
    // nvcc already emits ld.global.nc for a read-only `T* __restrict__` (checked in
    // test/checks-config/nvcc-nvrtc-linkage-ldg.test.ts): only a missing __restrict__ loses the path.
    const candidates = params.filter((p) => !p.restrict && !p.volatile && !/\b__constant__\b/.test(p.node.text) && p.node.childForFieldName('type')?.text !== 'void' && (!p.pointeeConst || usesRestrict(ctx.source.root)));
    // A `const T*` without __restrict__ is a deliberate spelling in code that never uses the qualifier (many
    // mature libraries leave aliasing to the compiler); only where the source already declares restrict pointers
    // is a read-only `const T*` that lacks it a slip. A non-const `T*` that is only read is flagged either way.
    const idents = fn.body!.descendantsOfType('identifier');
    const flagged: PtrParam[] = [];
    for (const p of candidates) {
      const mine = idents.filter((i) => i.text === p.name);
      const uses = mine.map((i) => useOf(m, i, uni()));
      // `p += tid; … *p`: once the parameter itself moves, a fixed-element load walks the array.
      const moved = mine.some((i) => i.parent?.type === 'update_expression' || (i.parent?.type === 'assignment_expression' && i.parent.childForFieldName('left')?.id === i.id));
      const reads = uses.filter((u) => u === 'read' || (moved && u === 'scalar')).length;
      if (uses.some((u) => u === 'write' || u === 'unknown')) continue;
      // Already on the read-only path (every load is an explicit __ldg or cache-hinted __ldcs/__ldcg/…),
      // or only fixed elements are read (`*alpha`, `corner[0..2]`): a by-reference scalar that every
      // thread loads from one address, not an array the read-only cache could help.
      if (reads === 0) continue;
      // One load per thread, outside any loop (`out[i] = a[i] * b[i]`, a single `x = p[tid]`): each element is
      // read once, before any store could alias it, so neither the read-only cache nor load reordering gains anything.
      if (!reused(fn.body!, p.name, mine, uses)) continue;
      flagged.push(p);
    }
    if (!flagged.length) continue;
    const facts = launchFacts(ctx, m, fn);
    const aliased = (p: PtrParam) =>
      facts.argLists.some((args) => {
        const mine = args[p.index];
        if (mine === undefined) return false;
        const b = bufferOf(mine);
        return params.some((o) => o !== p && args[o.index] !== undefined && bufferOf(args[o.index]) === b);
      });
    const constant = (p: PtrParam) => facts.argLists.some((args) => args[p.index] !== undefined && facts.constantNames.has(bufferOf(args[p.index])));
    const report = flagged.filter((p) => !aliased(p) && !constant(p));
    // Whole-line suggestions: every flagged parameter of one line is rewritten by one edit.
    const byLine = new Map<number, PtrParam[]>();
    for (const p of report) {
      const at = ctx.source.toFile(p.node.startPosition.row, p.node.startPosition.column);
      const line = at?.line ?? -1;
      byLine.set(line, [...(byLine.get(line) ?? []), p]);
    }
    for (const [line, group] of byLine) {
      const fix = lineFix(ctx, group, line, pyLines, facts.argLists.length > 0);
      group.forEach((p, i) => {
        ctx.report({
          node: p.node,
          messageId: 'notConstRestrict',
          data: { p: `\`${p.node.text.replace(/\s+/g, ' ')}\``, kernel: fn.name },
          fix: i === 0 ? fix : { description: `See the suggestion on this line: \`${rewrite(p)}\`.` },
        });
      });
    }
  }
}

/** `double* x` → `const double* __restrict__ x`, keeping what is already there. */
function rewrite(p: PtrParam): string {
  const t = p.node.text;
  const cut = p.star.endIndex - p.node.startIndex;
  const rest = t.slice(cut);
  return (p.pointeeConst ? '' : 'const ') + t.slice(0, cut) + (p.restrict ? '' : ' __restrict__' + (/^\s/.test(rest) ? '' : ' ')) + rest;
}

/**
 * The catalog's `safe-one-line` rewrite, only when no launch in the file aliases the pointer (the
 * do-not-flag list already drops known aliases) and at least one launch was seen: with no launch
 * visible, `__restrict__` is a promise the reviewer cannot check, so it stays prose.
 */
function lineFix(ctx: CheckContext, group: PtrParam[], line: number, pyLines: string[] | undefined, launchesSeen: boolean): FixSpec {
  const texts = group.map(rewrite);
  const description = `Declare ${texts.map((t) => `\`${t}\``).join(', ')}`;
  if (!launchesSeen) return { description: `${description}, once every launch passes separate buffers for it and the kernel's outputs (__restrict__ promises no aliasing; no launch of this kernel is visible in the file).` };
  if (group.some((p) => p.node.startPosition.row !== p.node.endPosition.row) || line < 1) return { description: `${description}.` };
  const edits: Array<{ col: number; len: number; text: string }> = [];
  let text: string;
  if (pyLines) {
    text = pyLines[line - 1];
    for (const p of group) {
      const a = ctx.source.toFile(p.node.startPosition.row, p.node.startPosition.column);
      if (!a) return { description: `${description}.` };
      const col = a.column - 1;
      // The Python line must hold the parameter verbatim (no `{placeholder}` or escape inside it).
      if (text.slice(col, col + p.node.text.length) !== p.node.text) return { description: `${description}.` };
      edits.push({ col, len: p.node.text.length, text: rewrite(p) });
    }
  } else {
    text = ctx.linesOf(group[0].node);
    if (/\balignas\b|\[\[/.test(text)) return { description: `${description}.` };
    for (const p of group) edits.push({ col: p.node.startPosition.column, len: p.node.text.length, text: rewrite(p) });
  }
  for (const e of edits.sort((x, y) => y.col - x.col)) text = text.slice(0, e.col) + e.text + text.slice(e.col + e.len);
  return { description: `${description}.`, replace: { from: group[0].node, text } };
}

export default defineCheck({
  id: 'nvrtc/missing-const-restrict',
  pass: 6,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['nvrtc-in-python', 'cuda'],
  citation: '003 §4.4 Read-Only Data Cache (__ldg) ("the compiler automatically uses __ldg for const __restrict__ pointers. Prefer annotating pointers"); 003 §9 Pass 6',
  summary: 'Kernel pointer parameter that is only read but not declared const T* __restrict__.',
  why: 'Only a const __restrict__ pointer lets the compiler route loads through the read-only data cache (ld.global.nc, the __ldg path), a cache separate from L1 that raises effective cache capacity for read-only coordinate arrays (003 §4.4, §9 Pass 6).',
  messages: {
    notConstRestrict:
      'Pointer parameter {{p}} of kernel {{kernel}} is only read but is not declared const … __restrict__; the read-only data path (__ldg) is not used.',
  },
  fix: 'safe',
  group: 'function',
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

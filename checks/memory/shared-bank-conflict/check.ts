import { cudaModel, type CudaFunction } from '../../../src/analysis/cuda.js';
import { laneEvaluator, type LaneEvaluator, type WarpShape } from '../../../src/analysis/lanes.js';
import { pythonLaunches } from '../../../src/analysis/pylaunch.js';
import { bankConflictDegree, defaultLimitBytes, fmtBytes, smemFacts, type SharedDecl, type SmemFacts, quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { BANK } from '../../../src/config/costs.js';

const short = (t: string) => quoteCode(t, 60);

interface Hit {
  node: SyntaxNode;
  degree: number;
  padded: number;
  loopDepth: number;
  strideWords: number;
  label: string;
  values: string;
  elemBytes: number;
  w: number;
}

/** Index expressions of a full subscript chain, outermost dimension first (`t[a][b]` → [a, b]). */
function indicesOf(top: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  let cur: SyntaxNode | null = top;
  while (cur?.type === 'subscript_expression') {
    const idx = cur.childForFieldName('indices');
    const first = idx?.namedChildren.find((c) => c.type !== 'comment');
    if (!first || (idx?.namedChildren.length ?? 0) > 1) return [];
    out.unshift(first);
    cur = cur.childForFieldName('argument');
  }
  return out;
}

/**
 * Catalog do-not-flag "arrays already padded (W+1)": an inner extent written `X + c` (c ≤ 4) or equal to
 * a power of two plus one (`[32][33]`, `[16][17]`, `double [8][9]`). Padding by one makes a column walk
 * conflict-free only when a warp spans one row of threads; in a 16×16 block the transposed access of a
 * `[16][17]` tile keeps a 2-way conflict, which is the padding the author chose, not an oversight.
 */
function alreadyPadded(f: SmemFacts, d: SharedDecl): boolean {
  const last = d.dims[d.dims.length - 1];
  if (last.type === 'binary_expression' && last.childForFieldName('operator')?.text === '+') {
    const c = Number(last.childForFieldName('right')?.text);
    if (Number.isInteger(c) && c >= 1 && c <= 4) return true;
  }
  const insts = d.fn ? f.instantiations(d.fn) : [{ bindings: new Map<string, number | null>() }];
  return insts.some((i) => {
    const w = f.size(d, i.bindings).extents[d.dims.length - 1];
    return w !== null && w >= 5 && Number.isInteger(Math.log2(w - 1));
  });
}

/** Name of the function `n` is passed to as an argument, or ''. */
function calleeOfArgument(n: SyntaxNode): string {
  const call = n.parent?.type === 'argument_list' ? n.parent.parent : null;
  return call?.type === 'call_expression' ? (call.childForFieldName('function')?.text ?? '') : '';
}

/** `threadIdx.x`, or a local initialized from it once (`const int tx = threadIdx.x;`). */
function isThreadX(n: SyntaxNode, fn: CudaFunction): boolean {
  if (n.text.replace(/\s/g, '') === 'threadIdx.x') return true;
  if (n.type !== 'identifier' || !fn.body) return false;
  const inits = fn.body.descendantsOfType('init_declarator').filter((d) => d.childForFieldName('declarator')?.text === n.text);
  return inits.length === 1 && inits[0].childForFieldName('value')?.text.replace(/\s/g, '') === 'threadIdx.x';
}

/**
 * Block shape for the lanes of one warp: the launches' constant `blockDim` when every launch of the
 * kernel in this file (or, for a kernel string, in its Python module) agrees; otherwise a 1-D block
 * of at least 32 threads, or, in a 2-D kernel, `blockDim.x` equal to the tile extent that
 * `threadIdx.x` indexes when that is below 32 (16×16 tiles are launched as 16×16 blocks).
 */
function warpShape(ctx: CheckContext, f: SmemFacts, fn: CudaFunction, idx: SyntaxNode[], extents: Array<number | null>, usesY: boolean): WarpShape {
  let shape: [number, number, number] | null = fn.isKernel ? f.blockShape(fn.name) : null;
  if (!shape && fn.isKernel && ctx.source.parent) {
    const pl = pythonLaunches.compute(ctx.source.parent, ctx.config);
    const shapes = pl.launches.filter((l) => l.cudaName === fn.name).map((l) => pl.dims(l.block));
    if (shapes.length && shapes.every((s) => s && s.join() === shapes[0]!.join())) shape = shapes[0];
  }
  if (shape) return { bx: shape[0], by: shape[1] };
  if (usesY) {
    const d = idx.findIndex((n) => isThreadX(n, fn));
    const e = d >= 0 ? extents[d] : null;
    if (e !== null && e < 32 && 32 % e === 0) return { bx: e, by: null };
  }
  return { bx: 32, by: null };
}

function analyse(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const f = ctx.get(smemFacts);
  const candidates = new Set(f.decls.filter((d) => d.dims.length >= 2 && !d.dynamic && !alreadyPadded(f, d)));
  if (!candidates.size) return;
  const names = new Set([...candidates].map((d) => d.name));
  // Uses are searched where the arrays are visible: their functions, or the whole file for file-scope arrays.
  const scopes = [...candidates].some((d) => !d.fn) ? [ctx.source.root] : [...new Map([...candidates].map((d) => [d.fn!.node.id, d.fn!.node])).values()];
  const hits = new Map<SharedDecl, Hit[]>();
  const flattened = new Set<SharedDecl>();
  const usesY = new Map<number, boolean>();
  const evaluators = new Map<string, LaneEvaluator>();

  for (const id of scopes.flatMap((sc) => sc.descendantsOfType('identifier'))) {
    if (!names.has(id.text)) continue;
    const decl = f.declFor(id.text, id);
    if (!decl || !candidates.has(decl) || id.parent?.id === decl.declarator.id || decl.declarator.descendantsOfType('identifier')[0]?.id === id.id) continue;
    let top = id;
    let depth = 0;
    while (top.parent?.type === 'subscript_expression' && top.parent.childForFieldName('argument')?.id === top.id) {
      top = top.parent;
      depth++;
    }
    // `&tile[0][0]`, `tile[r]` (a row pointer), `sizeof(tile)`: code that relies on the row length.
    const addressTaken = top.parent?.type === 'pointer_expression' && !/^(atomic|__)/.test(calleeOfArgument(top.parent));
    if (depth !== decl.dims.length || addressTaken) {
      flattened.add(decl);
      continue;
    }
    const fn = m.functionOf(top);
    if (!fn || !(fn.isKernel || fn.isDevice)) continue;
    const idx = indicesOf(top);
    if (idx.length !== decl.dims.length) continue;
    let y = usesY.get(fn.node.id);
    if (y === undefined) usesY.set(fn.node.id, (y = /\bthreadIdx\s*\.\s*y\b/.test(fn.body?.text ?? '')));
    const insts = decl.fn ? f.instantiations(decl.fn) : [{ label: '', values: '', bindings: new Map<string, number | null>() }];
    for (const inst of insts) {
      const s = f.size(decl, inst.bindings);
      const e = s.elemBytes;
      if (e === null || ![1, 2, 4, 8, 16].includes(e)) continue;
      const inner = s.extents.slice(1);
      if (inner.some((x) => x === null)) continue;
      const shape = warpShape(ctx, f, fn, idx, s.extents, y);
      const evKey = `${fn.node.id}|${shape.bx}|${shape.by}|${fn === decl.fn ? inst.label : ''}`;
      let ev = evaluators.get(evKey);
      if (!ev) evaluators.set(evKey, (ev = laneEvaluator(m, fn, shape, fn === decl.fn ? inst.bindings : new Map())));
      const vals = idx.map((n) => ev.eval(n));
      if (vals.some((v) => v === null)) continue;
      const extents = s.extents;
      const active = Array.from({ length: 32 }, (_, l) => vals.every((v, d) => extents[d] === null || (v!.vals[l] >= 0 && v!.vals[l] < extents[d]!)));
      const rowVaries = vals.slice(0, -1).some((v) => {
        const seen = new Set(v!.vals.filter((_, l) => active[l]));
        return seen.size > 1;
      });
      if (!rowVaries) continue;
      const addrs = (pad: number) => {
        const ext = extents.map((x, d) => (d === extents.length - 1 ? x! + pad : x));
        const strides = ext.map((_, d) => ext.slice(d + 1).reduce((p: number, x) => p * (x ?? 1), 1));
        return active.map((on, l) => (on ? vals.reduce((acc, v, d) => acc + v!.vals[l] * strides[d], 0) * e : null));
      };
      const degree = bankConflictDegree(addrs(0), e);
      if (degree < 2) continue;
      const w = inner[inner.length - 1]!;
      hits.set(decl, [
        ...(hits.get(decl) ?? []),
        { node: top, degree, padded: bankConflictDegree(addrs(1), e), loopDepth: m.loopsOf(top).length, strideWords: (w * e) / 4, label: inst.label, values: inst.values, elemBytes: e, w },
      ]);
    }
  }

  for (const [decl, list] of hits) {
    // One finding per array: the worst access, preferring the innermost loop (catalog: prioritize IN_INNER_LOOP).
    const best = [...list].sort((a, b) => b.loopDepth - a.loopDepth || b.degree - a.degree || a.node.startIndex - b.node.startIndex)[0];
    const padFixes = list.every((h) => h.padded === 1);
    const fix = padFixes ? (flattened.has(decl) ? 'the array is also used through a pointer, a row reference or sizeof' : paddingFix(ctx, f, decl)) : null;
    const padded = `${decl.name}[..][${paddedExtent(decl.dims[decl.dims.length - 1]).replace(/__FMT_(\w+?)__/g, '{$1}')}]`;
    const judgment = padFixes
      ? `Pad the row by one element (\`${padded}\`); not offered as a suggestion because ${fix as string}.`
      : `Padding by one element leaves a conflict in at least one access of \`${decl.name}\`: swizzle the column index (\`${decl.name}[r][c ^ (r % 32)]\`) or pick a row stride that spreads the warp's rows over all banks.`;
    ctx.report({
      node: best.node,
      messageId: best.padded === 1 ? 'conflict' : 'conflictSwizzle',
      data: { access: short(best.node.text), T: decl.type, name: decl.name, W: best.w, N: best.degree, stride: best.strideWords, inst: best.label ? ` in \`${best.label}\`${best.values ? ` (${best.values})` : ''}` : '' },
      fix: fix && typeof fix !== 'string' ? fix : { description: judgment },
    });
  }
}

/**
 * The catalog's `safe-one-line` rewrite: `T s[R][W]` → `T s[R][W + 1]`, only when every access is a
 * full subscript (no flattened pointer arithmetic), padding removes every conflict found, and the
 * extra bytes keep the kernel's static shared memory within the 48 KB static limit.
 */
function paddingFix(ctx: CheckContext, f: SmemFacts, decl: SharedDecl): FixSpec | string {
  if (!decl.fn?.isKernel) return 'the array is not declared in the kernel, so the kernels sharing it cannot be checked against the shared-memory budget';
  if (decl.node.startPosition.row !== decl.node.endPosition.row) return 'the declaration spans several lines';
  const limit = defaultLimitBytes(ctx.config.targets);
  let extraMax = 0;
  for (const inst of f.instantiations(decl.fn)) {
    const s = f.size(decl, inst.bindings);
    if (s.bytes === null || s.elemBytes === null) return 'its size is not a constant';
    const rows = s.extents.slice(0, -1).reduce((p: number, x) => p * (x ?? 0), 1);
    const extra = rows * s.elemBytes;
    const u = f.staticUsage(decl.fn).find((x) => x.inst.label === inst.label);
    if (!u || u.unknown.length) return "the kernel's other shared arrays have no constant size, so the padded total cannot be checked against the 48 KB static limit";
    if (u.bytes + extra > limit) return `the padded tile would take the kernel's static shared memory to ${fmtBytes(u.bytes + extra)} B, over the 48 KB static limit`;
    extraMax = Math.max(extraMax, extra);
  }
  const line = ctx.linesOf(decl.node);
  // Masked CUDA syntax (`__align__` → `alignas`) must not leak into a suggestion.
  if (/\balignas\b|\[\[/.test(line)) return 'the line carries CUDA attributes the reviewer rewrote for parsing';
  const last = decl.dims[decl.dims.length - 1];
  const lit = paddedExtent(last);
  const col = last.startPosition.column;
  const text = line.slice(0, col) + lit + line.slice(col + last.text.length);
  if (ctx.source.parent && !sameAsPythonLine(ctx, decl.node, line)) return 'the Python line holds escapes or `{placeholders}`';
  return { description: `Pad the row by one element: \`${text.trim()}\` (+${fmtBytes(extraMax)} B of shared memory per block).`, replace: { from: decl.node, text } };
}

/** `32` → `33`, `TILE` → `TILE + 1`. */
function paddedExtent(dim: SyntaxNode): string {
  return dim.type === 'number_literal' && /^\d+$/.test(dim.text) ? String(Number(dim.text) + 1) : `${dim.text} + 1`;
}

/** A kernel string line can only be rewritten when the Python line holds exactly that text (no escapes or `{placeholders}`). */
function sameAsPythonLine(ctx: CheckContext, node: SyntaxNode, line: string): boolean {
  const py = ctx.source.parent!;
  const at = ctx.source.toFile(node.startPosition.row, 0);
  if (!at) return false;
  const rows = py.text.split('\n');
  for (let r = 0; r < rows.length; r++) if (py.toFile(r, 0)?.line === at.line) return rows[r] === line;
  return false;
}

export default defineCheck({
  id: 'memory/shared-bank-conflict',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §4.2 Shared Memory Usage (bank rules; padding); 003 §10 (row "Shared memory bank conflict: Any N-way conflict in inner loop → Pad or swizzle")',
  summary: 'Column walk over a 2-D __shared__ tile whose row stride maps a warp onto the same banks.',
  why: 'Shared memory has 32 banks of 4 bytes; when N lanes of a warp hit different words of one bank the access is serialized N ways, up to 32 ways per access (003 §4.2, §10); ' + BANK + '.',
  messages: {
    conflict:
      'Column access `{{access}}` to __shared__ {{T}} {{name}}[..][{{W}}] makes threads of a warp hit the same bank ({{N}}-way conflict: rows are {{stride}} words apart){{inst}}; pad the inner dimension by one element.',
    conflictSwizzle:
      'Column access `{{access}}` to __shared__ {{T}} {{name}}[..][{{W}}] makes threads of a warp hit the same bank ({{N}}-way conflict: rows are {{stride}} words apart){{inst}}; padding by one element does not remove it here, swizzle the column index.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

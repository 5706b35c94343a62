/**
 * CUDA C++ generator: kernels (grid-stride loops, shared tiles, warp shuffles, atomics, launch
 * bounds, templates) and host code (allocations, async copies, streams, events, launches, CUB and
 * Thrust), assembled from many templates with randomised names, sizes, nesting and comments.
 * `cudaKernel` is also used for the kernels held in Python strings, so it never emits a backslash.
 */
import { Code, comment, LICENSES, Names, Rng } from './common.js';

export interface KernelOpts {
  /** `extern "C"` linkage (NVRTC / RawKernel sources). */
  externC: boolean;
  /** Element type of the data: float, double, compute_t, T. */
  T: string;
  /** Emit `template <typename T, int BLOCK>` (only when T === 'T'). */
  templated: boolean;
  /** Python-string mode: no backslashes, no #include, no host code. */
  embedded: boolean;
}

export interface GeneratedKernel {
  name: string;
  text: string;
  /** Parameter names in order, for host launch code. */
  params: Array<{ name: string; type: string }>;
  blockSize: number;
  usesSmem: boolean;
}

const MATH1 = ['sqrt', 'fabs', 'exp', 'log1p', 'rsqrt', 'floor', 'ceil', 'tanh'];
const MATH2 = ['fmin', 'fmax', 'hypot', 'atan2', 'copysign'];

export function lit(T: string, v: number): string {
  const s = Number.isInteger(v) ? v.toFixed(1) : String(v);
  if (T === 'float') return `${s}f`;
  if (T === 'double') return s;
  return `(${T})${s}`;
}

function rndLit(rng: Rng, T: string): string {
  return lit(T, rng.pick([0, 0.5, 1, 2, 0.25, 1e-6, 1e-12, 3.14159265, 0.70710678, 1e30, -1, 4, 0.125]));
}

export function cExpr(rng: Rng, vars: readonly string[], T: string, depth = 0): string {
  const leaf = () => (rng.chance(0.8) && vars.length ? rng.pick(vars) : rndLit(rng, T));
  if (depth > 2) return leaf();
  const k = rng.int(0, 9);
  switch (k) {
    case 0:
    case 1:
      return leaf();
    case 2:
    case 3:
      return `${cExpr(rng, vars, T, depth + 1)} ${rng.pick(['+', '-', '*', '*', '+'])} ${cExpr(rng, vars, T, depth + 1)}`;
    case 4:
      return `(${cExpr(rng, vars, T, depth + 1)} ${rng.pick(['+', '-'])} ${leaf()}) * ${leaf()}`;
    case 5:
      return `${rng.pick(MATH1)}(${cExpr(rng, vars, T, depth + 1)})`;
    case 6:
      return `${rng.pick(MATH2)}(${leaf()}, ${cExpr(rng, vars, T, depth + 1)})`;
    case 7:
      return `fma(${leaf()}, ${leaf()}, ${cExpr(rng, vars, T, depth + 1)})`;
    case 8:
      return `(${leaf()} ${rng.pick(['<', '>', '<=', '>='])} ${leaf()} ? ${leaf()} : ${leaf()})`;
    default:
      return `${leaf()} / (${leaf()} + ${lit(T, 1e-9)})`;
  }
}

interface StmtCtx {
  T: string;
  vars: string[];
  /** Arrays readable at `idx`. */
  arrays: string[];
  idx: string;
  acc: string;
  tmp: number;
  embedded: boolean;
}

/** A random block of straight-line code, branches and unrolled loops. */
export function cStmts(rng: Rng, c: Code, ctx: StmtCtx, depth: number, count: number): void {
  for (let s = 0; s < count; s++) {
    const k = rng.weighted<string>([
      [4, 'decl'],
      [3, 'acc'],
      [depth < 3 ? 2 : 0, 'if'],
      [depth < 2 ? 1.5 : 0, 'for'],
      [1, 'comment'],
      [ctx.arrays.length ? 1.5 : 0, 'load'],
      [depth < 3 ? 0.6 : 0, 'ifelse'],
    ]);
    switch (k) {
      case 'decl': {
        const v = `t${ctx.tmp++}`;
        c.line(`${rng.chance(0.6) ? 'const ' : ''}${ctx.T} ${v} = ${cExpr(rng, ctx.vars, ctx.T)};`);
        ctx.vars.push(v);
        break;
      }
      case 'acc':
        c.line(`${ctx.acc} ${rng.pick(['+=', '+=', '-=', '*='])} ${cExpr(rng, ctx.vars, ctx.T)};`);
        break;
      case 'load': {
        const v = `t${ctx.tmp++}`;
        const a = rng.pick(ctx.arrays);
        c.line(rng.chance(0.5) ? `const ${ctx.T} ${v} = __ldg(&${a}[${ctx.idx}]);` : `const ${ctx.T} ${v} = ${a}[${ctx.idx}];`);
        ctx.vars.push(v);
        break;
      }
      case 'comment':
        c.line(`// ${comment(rng)}`);
        break;
      case 'if': {
        c.open(`if (${cExpr(rng, ctx.vars, ctx.T, 2)} ${rng.pick(['>', '<', '>=', '!='])} ${rndLit(rng, ctx.T)})`);
        const saved = ctx.vars.length;
        cStmts(rng, c, ctx, depth + 1, rng.int(1, 3));
        ctx.vars.length = saved;
        c.close();
        break;
      }
      case 'ifelse': {
        c.open(`if (${cExpr(rng, ctx.vars, ctx.T, 2)} < ${rndLit(rng, ctx.T)})`);
        const saved = ctx.vars.length;
        cStmts(rng, c, ctx, depth + 1, rng.int(1, 3));
        ctx.vars.length = saved;
        c.mid('} else {');
        cStmts(rng, c, ctx, depth + 1, rng.int(1, 2));
        ctx.vars.length = saved;
        c.close();
        break;
      }
      case 'for': {
        const n = rng.pick([2, 3, 4, 8]);
        const iv = rng.pick(['k', 'j', 'r', 'q']);
        if (rng.chance(0.7)) c.line('#pragma unroll');
        c.open(`for (int ${iv} = 0; ${iv} < ${n}; ++${iv})`);
        const saved = ctx.vars.length;
        ctx.vars.push(`(${ctx.T})${iv}`);
        cStmts(rng, c, ctx, depth + 1, rng.int(1, 3));
        ctx.vars.length = saved;
        c.close();
        break;
      }
    }
  }
}

function head(c: Code, opts: KernelOpts, name: string, params: Array<{ name: string; type: string }>, bounds: string | null, blockTemplate: boolean): void {
  if (opts.templated && opts.T === 'T') c.line(blockTemplate ? 'template <typename T, int BLOCK>' : 'template <typename T>');
  const linkage = opts.externC ? 'extern "C" ' : '';
  const lb = bounds ? `__launch_bounds__(${bounds}) ` : '';
  c.line(`${linkage}__global__ ${lb}void ${name}(`);
  params.forEach((p, i) => c.line(`    ${p.type} ${p.name}${i + 1 < params.length ? ',' : ')'}`));
}

type KernelKind = 'elementwise' | 'reduce' | 'tile2d' | 'histogram' | 'count' | 'scatter' | 'pip' | 'warpItem' | 'scan' | 'compact' | 'shoelace' | 'bbox';

export const KERNEL_KINDS: ReadonlyArray<readonly [number, KernelKind]> = [
  [3, 'elementwise'], [2, 'reduce'], [1.5, 'tile2d'], [1, 'histogram'], [2, 'count'], [2, 'scatter'], [1.5, 'pip'],
  [1.5, 'warpItem'], [1, 'scan'], [1, 'compact'], [1.2, 'shoelace'], [1, 'bbox'],
];

/** One `__global__` kernel. */
export function cudaKernel(rng: Rng, names: Names, opts: KernelOpts, kind?: KernelKind): GeneratedKernel {
  const K = kind ?? rng.weighted(KERNEL_KINDS);
  const T = opts.T;
  const c = new Code(4);
  const noun = names.noun();
  const name = names.unique(() => `${rng.pick(['', '', 'k_', ''])}${rng.pick(['count', 'scatter', 'reduce', 'fill', 'classify', 'measure', 'build', 'refine', 'gather', 'compact', 'transform', 'accumulate', 'clip', 'label'])}_${noun}${rng.chance(0.3) ? 's' : ''}${rng.chance(0.3) ? '_kernel' : ''}`);
  const block = rng.pick([64, 128, 128, 256, 256, 256, 512, 1024]);
  const bounds = !opts.embedded || rng.chance(0.5) ? (rng.chance(0.55) ? (rng.chance(0.4) ? `${block}, ${rng.int(1, 4)}` : `${block}`) : null) : null;
  const BLOCK = opts.templated && opts.T === 'T' ? 'BLOCK' : String(block);
  const ctx: StmtCtx = { T, vars: [], arrays: [], idx: 'i', acc: 'acc', tmp: 0, embedded: opts.embedded };
  const restrict = rng.chance(0.7) ? ' __restrict__' : '';
  const P = (type: string, n: string) => ({ type, name: n });
  let params: Array<{ name: string; type: string }>;
  let usesSmem = false;
  const tidx = rng.chance(0.5) ? 'blockIdx.x * blockDim.x + threadIdx.x' : 'threadIdx.x + blockIdx.x * blockDim.x';
  const idxT = rng.pick(['int', 'int', 'long long', 'size_t', 'unsigned int']);
  const nT = idxT === 'size_t' || idxT === 'long long' ? idxT : 'int';
  if (rng.chance(0.35)) c.line(`// ${comment(rng)}`);
  switch (K) {
    case 'elementwise': {
      const ins = rng.sample(['x', 'y', 'z', 'w', 'src', 'lhs', 'rhs', 'values', 'weights', 'coords'], rng.int(1, 3));
      const out = rng.pick(['out', 'dst', 'result', 'output']);
      params = [...ins.map((a) => P(`const ${T}*${restrict}`, a)), P(`${T}*${restrict}`, out), P(T, rng.pick(['alpha', 'scale', 'eps'])), P(nT, 'n')];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.line(`const ${idxT} stride = ${idxT === 'int' ? '' : `(${idxT})`}blockDim.x * gridDim.x;`);
      c.open(`for (${idxT} i = ${tidx}; i < n; i += stride)`);
      c.line(`${T} acc = ${lit(T, 0)};`);
      ctx.arrays = ins;
      ctx.vars.push(params[params.length - 2].name);
      for (const a of ins) {
        ctx.vars.push(`v_${a}`);
        c.line(`const ${T} v_${a} = ${a}[i];`);
      }
      cStmts(rng, c, ctx, 1, rng.int(3, 9));
      c.line(`${out}[i] = ${rng.chance(0.5) ? 'acc' : cExpr(rng, ['acc', ...ctx.vars.slice(0, 4)], T)};`);
      c.close();
      c.close();
      break;
    }
    case 'reduce': {
      usesSmem = true;
      params = [P(`const ${T}*${restrict}`, 'values'), P(`${T}*`, 'block_sums'), P(`${T}*`, 'total'), P(nT, 'n')];
      head(c, opts, name, params, bounds, true);
      c.open('');
      c.line(`__shared__ ${T} warp_partials[${BLOCK} / 32];`);
      c.line(`${T} acc = ${lit(T, 0)};`);
      if (rng.chance(0.5)) c.line(`${T} kahan_c = ${lit(T, 0)};`);
      c.open(`for (${idxT} i = ${tidx}; i < n; i += blockDim.x * gridDim.x)`);
      ctx.arrays = ['values'];
      c.line(`const ${T} v = values[i];`);
      ctx.vars.push('v');
      cStmts(rng, c, ctx, 2, rng.int(1, 5));
      c.line('acc += v;');
      c.close();
      c.line('const unsigned lane = threadIdx.x & 31u;');
      c.line('const unsigned warp = threadIdx.x >> 5;');
      if (rng.chance(0.7)) c.line('#pragma unroll');
      c.open(`for (int offset = 16; offset > 0; offset >>= 1)`);
      c.line(`acc += __shfl_down_sync(0xffffffffu, acc, offset);`);
      c.close();
      c.line('if (lane == 0) warp_partials[warp] = acc;');
      c.line('__syncthreads();');
      c.open('if (warp == 0)');
      c.line(`acc = (lane < blockDim.x / 32) ? warp_partials[lane] : ${lit(T, 0)};`);
      c.open('for (int offset = 16; offset > 0; offset >>= 1)');
      c.line(rng.chance(0.5) ? 'acc += __shfl_down_sync(0xffffffffu, acc, offset);' : 'acc += __shfl_xor_sync(0xffffffffu, acc, offset);');
      c.close();
      c.open('if (lane == 0)');
      c.line('block_sums[blockIdx.x] = acc;');
      c.line('atomicAdd(total, acc);');
      c.close();
      c.close();
      c.close();
      break;
    }
    case 'tile2d': {
      usesSmem = true;
      const TILE = rng.pick([8, 16, 16, 32]);
      params = [P(`const ${T}*${restrict}`, 'src'), P(`${T}*${restrict}`, 'dst'), P('int', 'width'), P('int', 'height'), P(T, 'weight')];
      head(c, opts, name, params, rng.chance(0.5) ? `${TILE * TILE}` : null, false);
      c.open('');
      c.line(`__shared__ ${T} tile[${TILE}][${TILE} + 1];`);
      c.line(`const int x = blockIdx.x * ${TILE} + threadIdx.x;`);
      c.line(`const int y = blockIdx.y * ${TILE} + threadIdx.y;`);
      c.open('if (x < width && y < height)');
      c.line('tile[threadIdx.y][threadIdx.x] = src[y * width + x];');
      c.mid('} else {');
      c.line(`tile[threadIdx.y][threadIdx.x] = ${lit(T, 0)};`);
      c.close();
      c.line('__syncthreads();');
      c.line(`${T} acc = ${lit(T, 0)};`);
      const r = rng.int(1, 2);
      if (rng.chance(0.6)) c.line('#pragma unroll');
      c.open(`for (int dy = -${r}; dy <= ${r}; ++dy)`);
      c.open(`for (int dx = -${r}; dx <= ${r}; ++dx)`);
      c.line(`const int tx = min(max((int)threadIdx.x + dx, 0), ${TILE - 1});`);
      c.line(`const int ty = min(max((int)threadIdx.y + dy, 0), ${TILE - 1});`);
      c.line('acc += weight * tile[ty][tx];');
      c.close();
      c.close();
      ctx.vars.push('weight', 'tile[threadIdx.x][threadIdx.y]');
      cStmts(rng, c, ctx, 1, rng.int(1, 4));
      c.line('__syncthreads();');
      c.line('if (x < width && y < height) dst[y * width + x] = acc;');
      c.close();
      break;
    }
    case 'histogram': {
      usesSmem = true;
      const BINS = rng.pick([32, 64, 128, 256]);
      params = [P(`const ${T}*${restrict}`, 'values'), P('unsigned int*', 'bins'), P(T, 'lo'), P(T, 'inv_width'), P(nT, 'n')];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.line(`__shared__ unsigned int local_bins[${BINS}];`);
      c.line(`for (int b = threadIdx.x; b < ${BINS}; b += blockDim.x) local_bins[b] = 0u;`);
      c.line('__syncthreads();');
      c.open(`for (${idxT} i = ${tidx}; i < n; i += blockDim.x * gridDim.x)`);
      c.line(`int b = (int)((values[i] - lo) * inv_width);`);
      c.line(`b = min(max(b, 0), ${BINS - 1});`);
      c.line('atomicAdd(&local_bins[b], 1u);');
      c.close();
      c.line('__syncthreads();');
      c.open(`for (int b = threadIdx.x; b < ${BINS}; b += blockDim.x)`);
      c.line('if (local_bins[b]) atomicAdd(&bins[b], local_bins[b]);');
      c.close();
      c.close();
      break;
    }
    case 'count':
    case 'pip': {
      const pip = K === 'pip';
      params = [
        P(`const ${T}*${restrict}`, 'px'), P(`const ${T}*${restrict}`, 'py'),
        P(`const ${T}*${restrict}`, 'x'), P(`const ${T}*${restrict}`, 'y'),
        P(`const int*${restrict}`, 'ring_offsets'), P(`int*${restrict}`, pip ? 'inside' : 'counts'), P('int', 'n_rings'),
      ];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.line(`const int i = ${tidx};`);
      c.line('if (i >= n_rings) return;');
      c.line('const int begin = ring_offsets[i];');
      c.line('const int end = ring_offsets[i + 1];');
      if (rng.chance(0.5)) c.line(`// ${comment(rng)}`);
      c.line(`const ${T} qx = px[i];`);
      c.line(`const ${T} qy = py[i];`);
      c.line(pip ? 'int winding = 0;' : 'int count = 0;');
      c.open('for (int v = begin; v + 1 < end; ++v)');
      c.line(`const ${T} x0 = x[v], y0 = y[v];`);
      c.line(`const ${T} x1 = x[v + 1], y1 = y[v + 1];`);
      if (pip) {
        c.line(`const ${T} cross = (x1 - x0) * (qy - y0) - (qx - x0) * (y1 - y0);`);
        c.open('if (y0 <= qy)');
        c.line('if (y1 > qy && cross > 0) ++winding;');
        c.mid('} else {');
        c.line('if (y1 <= qy && cross < 0) --winding;');
        c.close();
      } else {
        c.line(`${T} acc = ${lit(T, 0)};`);
        ctx.vars.push('x0', 'y0', 'x1', 'y1', 'qx', 'qy');
        cStmts(rng, c, ctx, 2, rng.int(1, 4));
        c.line(`if (((y0 > qy) != (y1 > qy)) && (qx < (x1 - x0) * (qy - y0) / (y1 - y0) + x0)) ++count;`);
      }
      c.close();
      c.line(pip ? 'inside[i] = winding != 0;' : 'counts[i] = count;');
      c.close();
      break;
    }
    case 'scatter': {
      params = [P(`const ${T}*${restrict}`, 'x'), P(`const ${T}*${restrict}`, 'y'), P(`const int*${restrict}`, 'offsets'), P(`const int*${restrict}`, 'counts'), P(`${T}*${restrict}`, 'out_x'), P(`${T}*${restrict}`, 'out_y'), P('int', 'n')];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.open(`for (int i = ${tidx}; i < n; i += blockDim.x * gridDim.x)`);
      c.line('const int base = offsets[i];');
      c.line('const int m = counts[i];');
      c.line(`const ${T} cx = x[i];`);
      c.line(`const ${T} cy = y[i];`);
      c.open('for (int k = 0; k < m; ++k)');
      c.line(`const ${T} t = (${T})k / (${T})max(m, 1);`);
      ctx.vars.push('cx', 'cy', 't');
      ctx.acc = 'out_x[base + k]';
      c.line(`out_x[base + k] = cx + t;`);
      c.line(`out_y[base + k] = cy - t;`);
      cStmts(rng, c, ctx, 3, rng.int(0, 3));
      c.close();
      c.close();
      c.close();
      break;
    }
    case 'warpItem': {
      params = [P(`const ${T}*${restrict}`, 'x'), P(`const ${T}*${restrict}`, 'y'), P(`const int*${restrict}`, 'offsets'), P(`${T}*${restrict}`, 'lengths'), P('int', 'n_items')];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.line('const int lane = threadIdx.x & 31;');
      c.line('const int item = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;');
      c.line('if (item >= n_items) return;');
      c.line(`${T} acc = ${lit(T, 0)};`);
      c.open('for (int v = offsets[item] + lane; v + 1 < offsets[item + 1]; v += 32)');
      c.line(`const ${T} dx = x[v + 1] - x[v];`);
      c.line(`const ${T} dy = y[v + 1] - y[v];`);
      c.line('acc += sqrt(dx * dx + dy * dy);');
      ctx.vars.push('dx', 'dy');
      cStmts(rng, c, ctx, 2, rng.int(0, 3));
      c.close();
      if (rng.chance(0.6)) c.line('#pragma unroll');
      c.open('for (int o = 16; o > 0; o >>= 1)');
      c.line(`acc += __shfl_${rng.pick(['down', 'xor'])}_sync(0xffffffffu, acc, o);`);
      c.close();
      c.line('if (lane == 0) lengths[item] = acc;');
      c.close();
      break;
    }
    case 'scan': {
      usesSmem = true;
      params = [P(`const int*${restrict}`, 'counts'), P(`int*${restrict}`, 'offsets'), P('int*', 'block_totals'), P('int', 'n')];
      head(c, opts, name, params, bounds, true);
      c.open('');
      c.line(`__shared__ int warp_sums[${BLOCK} / 32];`);
      c.line(`const int i = ${tidx};`);
      c.line('const int lane = threadIdx.x & 31;');
      c.line('const int warp = threadIdx.x >> 5;');
      c.line('int v = i < n ? counts[i] : 0;');
      c.line('const int own = v;');
      c.line('#pragma unroll');
      c.open('for (int d = 1; d < 32; d <<= 1)');
      c.line('const int up = __shfl_up_sync(0xffffffffu, v, d);');
      c.line('if (lane >= d) v += up;');
      c.close();
      c.line('if (lane == 31) warp_sums[warp] = v;');
      c.line('__syncthreads();');
      c.open('if (warp == 0)');
      c.line('int w = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0;');
      c.open('for (int d = 1; d < 32; d <<= 1)');
      c.line('const int up = __shfl_up_sync(0xffffffffu, w, d);');
      c.line('if (lane >= d) w += up;');
      c.close();
      c.line('if (lane < (int)(blockDim.x >> 5)) warp_sums[lane] = w;');
      c.close();
      c.line('__syncthreads();');
      c.line('if (warp > 0) v += warp_sums[warp - 1];');
      c.line('if (i < n) offsets[i] = v - own;');
      c.line('if (threadIdx.x == blockDim.x - 1) block_totals[blockIdx.x] = v;');
      c.close();
      break;
    }
    case 'compact': {
      params = [P(`const ${T}*${restrict}`, 'values'), P(`const unsigned char*${restrict}`, 'keep'), P(`${T}*${restrict}`, 'out'), P('int*', 'out_count'), P('int', 'n')];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.line(`const int i = ${tidx};`);
      c.line('const int lane = threadIdx.x & 31;');
      c.line('const bool pred = i < n && keep[i] != 0;');
      c.line('const unsigned ballot = __ballot_sync(0xffffffffu, pred);');
      c.line('const int warp_count = __popc(ballot);');
      c.line('int base = 0;');
      c.line('if (lane == 0 && warp_count) base = atomicAdd(out_count, warp_count);');
      c.line('base = __shfl_sync(0xffffffffu, base, 0);');
      c.open('if (pred)');
      c.line('const int rank = __popc(ballot & ((1u << lane) - 1u));');
      c.line('out[base + rank] = values[i];');
      c.close();
      c.close();
      break;
    }
    case 'shoelace': {
      params = [P(`const double*${restrict}`, 'x'), P(`const double*${restrict}`, 'y'), P(`const int*${restrict}`, 'ring_offsets'), P(`double*${restrict}`, 'area'), P('double', 'center_x'), P('double', 'center_y'), P('int', 'n_rings')];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.line(`const int r = ${tidx};`);
      c.line('if (r >= n_rings) return;');
      c.line(`${T} sum = ${lit(T, 0)};`);
      c.line(`${T} comp = ${lit(T, 0)};`);
      c.open('for (int v = ring_offsets[r]; v + 1 < ring_offsets[r + 1]; ++v)');
      c.line(`const ${T} x0 = (${T})(x[v] - center_x);`);
      c.line(`const ${T} y0 = (${T})(y[v] - center_y);`);
      c.line(`const ${T} x1 = (${T})(x[v + 1] - center_x);`);
      c.line(`const ${T} y1 = (${T})(y[v + 1] - center_y);`);
      c.line(`const ${T} term = x0 * y1 - x1 * y0 - comp;`);
      c.line(`const ${T} t = sum + term;`);
      c.line('comp = (t - sum) - term;');
      c.line('sum = t;');
      c.close();
      c.line(`area[r] = (double)(sum * ${lit(T, 0.5)});`);
      c.close();
      break;
    }
    case 'bbox':
    default: {
      params = [P(`const ${T}*${restrict}`, 'x'), P(`const ${T}*${restrict}`, 'y'), P(`const int*${restrict}`, 'offsets'), P(`${T}*${restrict}`, 'bounds'), P('int', 'n_geoms')];
      head(c, opts, name, params, bounds, false);
      c.open('');
      c.open(`for (int g = ${tidx}; g < n_geoms; g += blockDim.x * gridDim.x)`);
      c.line(`${T} minx = ${lit(T, 1e30)}, miny = ${lit(T, 1e30)};`);
      c.line(`${T} maxx = -${lit(T, 1e30)}, maxy = -${lit(T, 1e30)};`);
      c.open('for (int v = offsets[g]; v < offsets[g + 1]; ++v)');
      c.line('minx = fmin(minx, x[v]);');
      c.line('maxx = fmax(maxx, x[v]);');
      c.line('miny = fmin(miny, y[v]);');
      c.line('maxy = fmax(maxy, y[v]);');
      c.close();
      c.line('bounds[4 * g + 0] = minx;');
      c.line('bounds[4 * g + 1] = miny;');
      c.line('bounds[4 * g + 2] = maxx;');
      c.line('bounds[4 * g + 3] = maxy;');
      c.close();
      c.close();
      break;
    }
  }
  return { name, text: c.toString(), params, blockSize: block, usesSmem };
}

/** `__device__` helpers. */
function deviceHelper(rng: Rng, names: Names, T: string): string {
  const c = new Code(4);
  const name = names.snake();
  const inl = rng.pick(['__forceinline__ ', 'inline ', '']);
  const tmpl = T === 'T';
  if (tmpl) c.line('template <typename T>');
  const k = rng.int(0, 3);
  if (k === 0) {
    c.open(`__device__ ${inl}${T} ${name}(${T} a, ${T} b, ${T} c)`);
    const ctx: StmtCtx = { T, vars: ['a', 'b', 'c'], arrays: [], idx: '0', acc: 'r', tmp: 0, embedded: true };
    c.line(`${T} r = ${cExpr(rng, ctx.vars, T)};`);
    cStmts(rng, c, ctx, 1, rng.int(1, 5));
    c.line('return r;');
    c.close();
  } else if (k === 1) {
    c.open(`__device__ ${inl}${T} warp_reduce_${name}(${T} v)`);
    c.line('#pragma unroll');
    c.open('for (int o = 16; o > 0; o >>= 1)');
    const op = rng.pick(['sum', 'max', 'min']);
    c.line(op === 'sum' ? 'v += __shfl_xor_sync(0xffffffffu, v, o);' : `v = f${op}(v, __shfl_xor_sync(0xffffffffu, v, o));`);
    c.close();
    c.line('return v;');
    c.close();
  } else if (k === 2) {
    c.open(`__device__ ${inl}bool ${name}(${T} px, ${T} py, ${T} x0, ${T} y0, ${T} x1, ${T} y1)`);
    c.line(`const ${T} cross = (x1 - x0) * (py - y0) - (px - x0) * (y1 - y0);`);
    c.line(`if (fabs(cross) > ${lit(T, 1e-12)}) return false;`);
    c.line('return fmin(x0, x1) <= px && px <= fmax(x0, x1) && fmin(y0, y1) <= py && py <= fmax(y0, y1);');
    c.close();
  } else {
    c.open(`__device__ ${inl}unsigned int ${name}(unsigned int v)`);
    c.line('v = (v * 0x00010001u) & 0xFF0000FFu;');
    c.line('v = (v * 0x00000101u) & 0x0F00F00Fu;');
    c.line('v = (v * 0x00000011u) & 0xC30C30C3u;');
    c.line('v = (v * 0x00000005u) & 0x49249249u;');
    c.line('return v;');
    c.close();
  }
  return c.toString();
}

const CUDA_CHECK_MACRO = `#define CUDA_CHECK(call)                                                        \\
    do {                                                                        \\
        cudaError_t err__ = (call);                                             \\
        if (err__ != cudaSuccess) {                                             \\
            fprintf(stderr, "CUDA error %s at %s:%d\\n", cudaGetErrorString(err__), \\
                    __FILE__, __LINE__);                                        \\
            std::abort();                                                       \\
        }                                                                       \\
    } while (0)
`;

function argList(k: GeneratedKernel, ptrPrefix: string): string {
  return k.params.map((p) => (p.type.includes('*') ? `${ptrPrefix}${p.name}` : p.name === 'n' || p.name.startsWith('n_') ? p.name : p.name)).join(', ');
}

/** Host launcher or pipeline for a kernel of this file. */
function hostCode(rng: Rng, names: Names, kernels: GeneratedKernel[], T: string, templated: boolean): string {
  const c = new Code(4);
  const k = rng.pick(kernels);
  const kname = templated ? `${k.name}<${T === 'T' ? 'float' : T}${k.text.includes('int BLOCK') ? `, ${k.blockSize}` : ''}>` : k.name;
  const ET = T === 'T' ? 'float' : T === 'compute_t' ? 'double' : T;
  const fn = names.snake();
  const kind = rng.weighted<string>([
    [3, 'launcher'], [2, 'pipeline'], [1.2, 'cub'], [1.2, 'thrust'], [1.5, 'antiLoop'], [1, 'timing'], [0.8, 'graph'], [0.8, 'occupancy'],
  ]);
  const sizeArg = k.params.find((p) => /^n(_|$)|width/.test(p.name))?.name ?? 'n';
  const smem = k.usesSmem && rng.chance(0.4) ? `${rng.pick([0, 1024, 4096, 8192])}` : '0';
  if (rng.chance(0.4)) c.line(`// ${comment(rng)}`);
  switch (kind) {
    case 'launcher': {
      const ps = k.params.map((p) => `${p.type.replace(/\bT\b/g, ET).replace(/\bcompute_t\b/g, 'double')} ${p.name}`);
      c.open(`${rng.chance(0.3) ? 'static ' : ''}void launch_${fn}(${[...ps, 'cudaStream_t stream'].join(', ')})`);
      c.line(`constexpr int block = ${k.blockSize};`);
      c.line(`const int grid = static_cast<int>((${sizeArg} + block - 1) / block);`);
      c.line(`if (grid == 0) return;`);
      c.line(`${kname}<<<${rng.chance(0.5) ? 'dim3(grid), dim3(block)' : 'grid, block'}, ${smem}, stream>>>(${argList(k, '')});`);
      c.line('CUDA_CHECK(cudaGetLastError());');
      c.close();
      break;
    }
    case 'pipeline':
    case 'antiLoop':
    case 'timing': {
      const anti = kind === 'antiLoop';
      const ptrs = k.params.filter((p) => p.type.includes('*'));
      const returnsInt = rng.chance(0.5);
      c.open(`${returnsInt ? 'int' : 'void'} run_${fn}(const std::vector<${ET}>& host_in, std::vector<${ET}>& host_out, int ${sizeArg === 'n' ? 'n' : sizeArg}${anti ? ', int n_batches' : ''})`);
      c.line('cudaStream_t stream;');
      c.line(`CUDA_CHECK(cudaStreamCreate${rng.chance(0.5) ? 'WithFlags(&stream, cudaStreamNonBlocking)' : '(&stream)'});`);
      if (kind === 'timing') {
        c.line('cudaEvent_t start, stop;');
        c.line('CUDA_CHECK(cudaEventCreate(&start));');
        c.line('CUDA_CHECK(cudaEventCreate(&stop));');
      }
      for (const p of ptrs) c.line(`${p.type.replace(/^const /, '').replace(/\s*__restrict__/, '').replace(/\bT\b/g, ET).replace(/\bcompute_t\b/g, 'double')} d_${p.name} = nullptr;`);
      if (!anti) {
        for (const p of ptrs) c.line(`CUDA_CHECK(cudaMalloc(&d_${p.name}, sizeof(*d_${p.name}) * (${sizeArg} + 1)));`);
        c.line(`CUDA_CHECK(cudaMemcpyAsync(d_${ptrs[0].name}, host_in.data(), sizeof(${ET}) * ${sizeArg}, cudaMemcpyHostToDevice, stream));`);
        if (kind === 'timing') c.line('CUDA_CHECK(cudaEventRecord(start, stream));');
        c.line(`const int block = ${k.blockSize};`);
        c.line(`const int grid = (${sizeArg} + block - 1) / block;`);
        const reps = rng.int(1, 3);
        for (let r = 0; r < reps; r++) c.line(`${kname}<<<grid, block, ${smem}, stream>>>(${argList(k, 'd_')});`);
        if (kind === 'timing') {
          c.line('CUDA_CHECK(cudaEventRecord(stop, stream));');
          c.line('CUDA_CHECK(cudaEventSynchronize(stop));');
          c.line('float ms = 0.f;');
          c.line('CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));');
          c.line(`std::printf("${fn}: %.3f ms\\n", ms);`);
        }
        c.line(`host_out.resize(${sizeArg});`);
        c.line(`CUDA_CHECK(cudaMemcpyAsync(host_out.data(), d_${ptrs[ptrs.length - 1].name}, sizeof(${ET}) * ${sizeArg}, cudaMemcpyDeviceToHost, stream));`);
        c.line(rng.chance(0.6) ? 'CUDA_CHECK(cudaStreamSynchronize(stream));' : 'CUDA_CHECK(cudaDeviceSynchronize());');
      } else {
        c.line(`int total = 0;`);
        c.open('for (int b = 0; b < n_batches; ++b)');
        c.line(`// ${rng.pick(['allocate per batch', 'resize for this batch', 'FIXME: hoist out of the loop'])}`);
        for (const p of ptrs) c.line(`CUDA_CHECK(cudaMalloc(&d_${p.name}, sizeof(*d_${p.name}) * (${sizeArg} + 1)));`);
        c.line(`CUDA_CHECK(cudaMemcpy(d_${ptrs[0].name}, host_in.data() + b * ${sizeArg}, sizeof(${ET}) * ${sizeArg}, cudaMemcpyHostToDevice));`);
        c.line(`${kname}<<<(${sizeArg} + ${k.blockSize - 1}) / ${k.blockSize}, ${k.blockSize}>>>(${argList(k, 'd_')});`);
        c.line('CUDA_CHECK(cudaDeviceSynchronize());');
        c.line('int count = 0;');
        c.line(`CUDA_CHECK(cudaMemcpy(&count, d_${ptrs[ptrs.length - 1].name}, sizeof(int), cudaMemcpyDeviceToHost));`);
        c.line('total += count;');
        c.open('if (count == 0)');
        for (const p of ptrs) c.line(`cudaFree(d_${p.name});`);
        c.line('continue;');
        c.close();
        for (const p of ptrs) c.line(`CUDA_CHECK(cudaFree(d_${p.name}));`);
        c.close();
        c.line('host_out.assign(1, static_cast<' + ET + '>(total));');
      }
      if (!anti) for (const p of ptrs) c.line(`CUDA_CHECK(cudaFree(d_${p.name}));`);
      if (kind === 'timing') {
        c.line('CUDA_CHECK(cudaEventDestroy(start));');
        c.line('CUDA_CHECK(cudaEventDestroy(stop));');
      }
      c.line('CUDA_CHECK(cudaStreamDestroy(stream));');
      if (returnsInt) c.line('return 0;');
      c.close();
      break;
    }
    case 'cub': {
      const op = rng.pick(['DeviceScan::ExclusiveSum', 'DeviceScan::InclusiveSum', 'DeviceReduce::Sum', 'DeviceReduce::Max']);
      c.open(`void ${fn}(const int* d_counts, int* d_offsets, int n, cudaStream_t stream)`);
      c.line('void* d_temp = nullptr;');
      c.line('size_t temp_bytes = 0;');
      c.line(`CUDA_CHECK(cub::${op}(d_temp, temp_bytes, d_counts, d_offsets, n, stream));`);
      c.line(rng.chance(0.6) ? 'CUDA_CHECK(cudaMallocAsync(&d_temp, temp_bytes, stream));' : 'CUDA_CHECK(cudaMalloc(&d_temp, temp_bytes));');
      c.line(`CUDA_CHECK(cub::${op}(d_temp, temp_bytes, d_counts, d_offsets, n, stream));`);
      if (rng.chance(0.5)) {
        c.line('int* d_keys_out = nullptr;');
        c.line('int* d_vals_out = nullptr;');
        c.line('CUDA_CHECK(cudaMallocAsync(&d_keys_out, sizeof(int) * n, stream));');
        c.line('CUDA_CHECK(cudaMallocAsync(&d_vals_out, sizeof(int) * n, stream));');
        c.line('size_t sort_bytes = 0;');
        c.line('cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, d_counts, d_keys_out, d_offsets, d_vals_out, n, 0, sizeof(int) * 8, stream);');
        c.line('CUDA_CHECK(cudaFreeAsync(d_keys_out, stream));');
        c.line('CUDA_CHECK(cudaFreeAsync(d_vals_out, stream));');
      }
      c.line('CUDA_CHECK(cudaFreeAsync(d_temp, stream));');
      c.close();
      break;
    }
    case 'thrust': {
      c.open(`${ET} ${fn}(thrust::device_vector<int>& keys, thrust::device_vector<${ET}>& values, cudaStream_t stream)`);
      c.line('auto policy = thrust::cuda::par.on(stream);');
      c.line('thrust::sort_by_key(policy, keys.begin(), keys.end(), values.begin());');
      if (rng.chance(0.6)) {
        c.line('thrust::device_vector<int> offsets(keys.size());');
        c.line('thrust::exclusive_scan(policy, keys.begin(), keys.end(), offsets.begin());');
      }
      if (rng.chance(0.5)) {
        c.line(`thrust::transform(policy, values.begin(), values.end(), values.begin(), [] __device__ (${ET} v) { return v * ${lit(ET, 0.5)}; });`);
      }
      c.line(`const ${ET} total = thrust::reduce(policy, values.begin(), values.end(), ${lit(ET, 0)});`);
      c.line('return total;');
      c.close();
      break;
    }
    case 'graph': {
      c.open(`void ${fn}(${k.params.map((p) => `${p.type.replace(/\bT\b/g, ET).replace(/\bcompute_t\b/g, 'double')} ${p.name}`).join(', ')}, int iterations)`);
      c.line('cudaStream_t stream;');
      c.line('CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));');
      c.line('cudaGraph_t graph;');
      c.line('cudaGraphExec_t exec;');
      c.line('CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));');
      c.line(`${kname}<<<(${sizeArg} + ${k.blockSize - 1}) / ${k.blockSize}, ${k.blockSize}, 0, stream>>>(${argList(k, '')});`);
      c.line('CUDA_CHECK(cudaStreamEndCapture(stream, &graph));');
      c.line('CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));');
      c.open('for (int it = 0; it < iterations; ++it)');
      c.line('CUDA_CHECK(cudaGraphLaunch(exec, stream));');
      c.close();
      c.line('CUDA_CHECK(cudaStreamSynchronize(stream));');
      c.line('CUDA_CHECK(cudaGraphExecDestroy(exec));');
      c.line('CUDA_CHECK(cudaGraphDestroy(graph));');
      c.line('CUDA_CHECK(cudaStreamDestroy(stream));');
      c.close();
      break;
    }
    case 'occupancy':
    default: {
      c.open(`dim3 ${fn}_config(int n)`);
      c.line('int min_grid = 0;');
      c.line('int block = 0;');
      c.line(`CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, ${kname}, 0, 0));`);
      c.line('int device = 0;');
      c.line('CUDA_CHECK(cudaGetDevice(&device));');
      c.line('int sms = 0;');
      c.line('CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));');
      c.line('const int grid = std::min((n + block - 1) / block, sms * 32);');
      c.line('return dim3(grid);');
      c.close();
      break;
    }
  }
  return c.toString();
}

function structDef(rng: Rng, names: Names, T: string): string {
  const c = new Code(4);
  const name = names.pascal();
  c.open(`struct ${rng.chance(0.4) ? '__align__(16) ' : ''}${name}`);
  const fields = rng.sample(['x', 'y', 'z', 'weight', 'id', 'flags', 'offset', 'count', 'minx', 'maxx'], rng.int(2, 5));
  for (const f of fields) c.line(`${['id', 'flags', 'offset', 'count'].includes(f) ? 'int' : T} ${f};`);
  if (rng.chance(0.5)) {
    c.line();
    c.open(`__host__ __device__ ${T} ${rng.pick(['norm', 'extent', 'score'])}() const`);
    c.line(`return ${fields.filter((f) => !['id', 'flags', 'offset', 'count'].includes(f)).map((f) => f).join(' + ') || lit(T, 0)};`);
    c.close();
  }
  c.close('};');
  return c.toString();
}

/** A whole `.cu` or `.cuh` file of about `target` bytes. */
export function cudaFile(rng: Rng, target: number, header: boolean): string {
  const names = new Names(rng);
  const out = new Code(4);
  out.line(`// ${rng.pick(LICENSES)}`);
  if (header) out.line('#pragma once');
  out.line();
  const includes = ['<cuda_runtime.h>', '<cstdint>', '<cstdio>', '<cstdlib>', '<vector>'];
  if (rng.chance(0.6)) includes.push('<cub/cub.cuh>');
  if (rng.chance(0.5)) includes.push('<thrust/device_vector.h>', '<thrust/sort.h>', '<thrust/scan.h>', '<thrust/reduce.h>', '<thrust/execution_policy.h>');
  if (rng.chance(0.3)) includes.push('<cooperative_groups.h>');
  if (rng.chance(0.3)) includes.push('<cuda_fp16.h>');
  if (rng.chance(0.3)) includes.push('<algorithm>');
  for (const i of includes) out.line(`#include ${i}`);
  if (rng.chance(0.4)) out.line(`#include "${rng.pick(['common', 'geometry', 'launch_utils', 'device_buffer', 'precision'])}.cuh"`);
  out.line();
  out.raw(`#ifndef CUDA_CHECK\n${CUDA_CHECK_MACRO}#endif`);
  out.line();
  const ns = rng.chance(0.7) ? rng.pick(['vibespatial', 'spatial', 'geom', 'raster', 'kernels']) : null;
  if (ns) {
    out.line(`namespace ${ns} {`);
    if (rng.chance(0.5)) out.line('namespace detail {');
    out.line();
  }
  const nestedNs = ns ? out.toString().includes('namespace detail {') : false;
  const templated = rng.chance(header ? 0.6 : 0.3);
  const T = templated ? 'T' : rng.pick(['float', 'double', 'double', 'float']);
  const constants = rng.int(1, 4);
  for (let i = 0; i < constants; i++) {
    out.line(`constexpr ${rng.pick(['int', 'int', 'unsigned'])} k${rng.pick(['Block', 'Tile', 'Warps', 'Items', 'Bins', 'Radix'])}${rng.pick(['Size', 'Count', 'Width', 'Bits'])}${i} = ${rng.pick([4, 8, 16, 32, 64, 128, 256])};`);
  }
  if (rng.chance(0.5)) out.line(`__constant__ ${T === 'T' ? 'float' : T} c_${rng.pick(['weights', 'coeffs', 'table', 'params'])}[${rng.pick([16, 32, 64])}];`);
  out.line();
  const kernels: GeneratedKernel[] = [];
  let guard = 0;
  while (out.length < target && guard++ < 500) {
    const what = rng.weighted<string>([[5, 'kernel'], [header ? 1 : 3, 'host'], [1.5, 'helper'], [0.7, 'struct'], [0.6, 'comment']]);
    if (what === 'kernel' || (what === 'host' && !kernels.length)) {
      const k = cudaKernel(rng, names, { externC: !templated && rng.chance(0.15), T, templated, embedded: false });
      kernels.push(k);
      if (rng.chance(0.4)) out.line(`/**\n * ${comment(rng)}.\n * ${comment(rng)}.\n */`.split('\n').join('\n'));
      out.raw(k.text);
    } else if (what === 'host') {
      out.raw(hostCode(rng, names, kernels, T, templated));
    } else if (what === 'helper') {
      out.raw(deviceHelper(rng, names, T));
    } else if (what === 'struct') {
      out.raw(structDef(rng, names, T === 'T' ? 'float' : T));
    } else {
      out.line(`// ${'-'.repeat(rng.int(20, 70))}`);
      out.line(`// ${comment(rng)}`);
    }
    out.line();
  }
  if (ns) {
    if (nestedNs) out.line('}  // namespace detail');
    out.line(`}  // namespace ${ns}`);
  }
  return out.toString();
}

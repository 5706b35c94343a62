import { describe, expect, it } from 'vitest';
import { uniformity } from '../../src/analysis/uniformity.js';
import type { SyntaxNode } from '../../src/core/types.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

const SRC = `
#define BLOCK 256
#define FULL_MASK 0xffffffffu
#define TID threadIdx.x
__constant__ float c_scale;
__device__ int lane_helper() { return threadIdx.x & 31; }
__device__ float scaled(float v, int k) { return k > 0 ? v * k : v; }
template <int TILE>
__global__ void k(const int* __restrict__ geom_type, const float* xs, float* out, int n, float eps) {
  __shared__ int s_count;
  int tid = threadIdx.x;
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  int warp2 = threadIdx.x >> 5;
  int warp3 = tid / warpSize;
  int base = blockIdx.x * BLOCK;
  int row = gid;
  int t = geom_type[row];
  int first = geom_type[blockIdx.x];
  unsigned ballot = __ballot_sync(0xffffffff, xs[gid] > eps);
  unsigned partial = __ballot_sync(__activemask(), xs[gid] > eps);
  int any = __any_sync(FULL_MASK, t == 3);
  float v = xs[gid];
  float bcast = __shfl_sync(0xffffffffu, v, 0);
  float mine = __shfl_sync(0xffffffffu, v, lane ^ 1);
  float down = __shfl_down_sync(0xffffffffu, v, 16);
  int acc = 0;
  for (int i = 0; i < n; ++i) acc += i;
  int strided = 0;
  for (int j = tid; j < n; j += blockDim.x) strided = j;
  int flag = 0;
  if (tid == 0) flag = 1;
  int fromBlock = 0;
  if (blockIdx.x > 3) fromBlock = n;
  int slot = atomicAdd(&s_count, 1);
  int macroTid = TID;
  int helper = lane_helper();
  float sc = scaled(eps, n);
  int sum = __reduce_add_sync(0xffffffff, t);
  out[gid] = (float)(tid + gid + lane + warp + warp2 + warp3 + base + row + t + first + ballot + partial + any + acc + strided + flag + fromBlock + slot + macroTid + helper + sum) + bcast + mine + down + sc + c_scale + TILE + s_count;
}
__global__ void caller(float* out, int n) { out[0] = scaled(1.0f, n); }
`;

function setup() {
  const [s] = buildSources('src/k.cu', 'cuda', { text: SRC, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return { s, u: uniformity.compute(s, config()) };
}

/** The expression of the last `(` ... `)` term in the out[] sum, or an initializer value, by variable name. */
function init(root: SyntaxNode, name: string): SyntaxNode {
  for (const d of root.descendantsOfType('init_declarator')) {
    if (d.childForFieldName('declarator')?.text === name) return d.childForFieldName('value')!;
  }
  throw new Error(name);
}
function ident(root: SyntaxNode, name: string): SyntaxNode {
  const all = root.descendantsOfType('identifier').filter((i) => i.text === name);
  return all[all.length - 1];
}
function expr(root: SyntaxNode, text: string): SyntaxNode {
  const hit = root.descendantsOfType(['binary_expression', 'field_expression', 'call_expression', 'subscript_expression']).find((n) => n.text === text);
  if (!hit) throw new Error(text);
  return hit;
}

describe('uniformity: WARP_UNIFORM / THREAD_DEPENDENT', () => {
  const { s, u } = setup();
  const r = s.root;
  const uniform: Array<[string, SyntaxNode]> = [
    ['literal', init(r, 'acc')],
    ['blockIdx.x', expr(r, 'blockIdx.x')],
    ['blockDim.x', expr(r, 'blockDim.x')],
    ['by-value param n', ident(r, 'n')],
    ['by-value param eps', ident(r, 'eps')],
    ['pointer param value', ident(r, 'xs')],
    ['warp index /32', init(r, 'warp')],
    ['warp index >>5', init(r, 'warp2')],
    ['warp index /warpSize via tid', init(r, 'warp3')],
    ['local from #define', ident(r, 'base')],
    ['load at uniform index', ident(r, 'first')],
    ['full-mask ballot', ident(r, 'ballot')],
    ['full-mask any via FULL_MASK macro', ident(r, 'any')],
    ['shfl from lane 0', ident(r, 'bcast')],
    ['uniform loop accumulator', ident(r, 'acc')],
    ['assigned under uniform branch', ident(r, 'fromBlock')],
    ['__constant__ variable', ident(r, 'c_scale')],
    ['template parameter', ident(r, 'TILE')],
    ['shared scalar', ident(r, 's_count')],
    ['__reduce_add_sync full mask', ident(r, 'sum')],
    ['device fn param with uniform callers', ident(r, 'k')],
    ['device fn of uniform args', ident(r, 'sc')],
    ['warpSize', expr(r, 'tid / warpSize').childForFieldName('right')!],
    ['comparison on blockIdx', expr(r, 'blockIdx.x > 3')],
  ];
  const dependent: Array<[string, SyntaxNode]> = [
    ['threadIdx.x', init(r, 'tid')],
    ['tid alias', ident(r, 'tid')],
    ['global index', ident(r, 'gid')],
    ['lane id', ident(r, 'lane')],
    ['load at thread index', ident(r, 't')],
    ['row alias of gid', ident(r, 'row')],
    ['value loaded at gid', ident(r, 'v')],
    ['partial-mask ballot', ident(r, 'partial')],
    ['shfl from per-lane source lane', ident(r, 'mine')],
    ['shfl_down', ident(r, 'down')],
    ['grid/block-stride loop variable', ident(r, 'strided')],
    ['assigned under thread-dependent branch', ident(r, 'flag')],
    ['atomic result', ident(r, 'slot')],
    ['macro expanding to threadIdx', ident(r, 'macroTid')],
    ['device function reading threadIdx', ident(r, 'helper')],
    ['tid == 0', expr(r, 'tid == 0')],
    ['xs[gid] > eps', expr(r, 'xs[gid] > eps')],
    ['lane ^ 1', expr(r, 'lane ^ 1')],
    ['threadIdx.x % 32', init(r, 'lane')],
    ['subscript at gid', expr(r, 'xs[gid]')],
  ];
  it.each(uniform)('WARP_UNIFORM: %s', (_l, n) => expect(u.classify(n)).toBe('WARP_UNIFORM'));
  it.each(dependent)('THREAD_DEPENDENT: %s', (_l, n) => expect(u.classify(n)).toBe('THREAD_DEPENDENT'));
  it('the warp index is warp-uniform but not block-uniform; blockIdx is block-uniform', () => {
    expect(u.level(init(r, 'warp'))).toBe('warp');
    expect(u.isBlockUniform(init(r, 'warp'))).toBe(false);
    expect(u.isBlockUniform(ident(r, 'ballot'))).toBe(false);
    expect(u.isBlockUniform(ident(r, 'fromBlock'))).toBe(true);
  });
});

const BR = `
__global__ void b(float* out, const int* flags, int n) {
  int tid = threadIdx.x;
  int warp = tid / 32;
  if (tid >= n) return;
  if (blockIdx.x == 0) {
    out[0] = 1.f;                        // A
  }
  if (warp == 0) {
    out[1] = 2.f;                        // B
  }
  if (threadIdx.x < 32) {
    out[2] = 3.f;                        // C
  }
  if (tid < n / 2) {
    for (int o = 16; o > 0; o >>= 1) out[o] = 5.f;   // F
  }
  __shared__ int s_total;
  if (tid == 0) s_total = flags[blockIdx.x];
  if (s_total > 2) out[4] = 6.f;         // G
  for (int i = tid; i < n; i += 256) {
    out[i] = 4.f;                        // D
  }
  float q = flags[tid] ? out[3] : 0.f;   // E
}
`;
describe('uniformity: divergentBranchesAround', () => {
  const [s] = buildSources('src/b.cu', 'cuda', { text: BR, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  const u = uniformity.compute(s, config());
  const at = (k: string) => s.root.descendantsOfType('assignment_expression').find((a) => a.text.startsWith(k)) ?? s.root.descendantsOfType('subscript_expression').find((a) => a.text === k)!;
  const conds = (n: SyntaxNode, g: 'warp' | 'block') => u.divergentBranchesAround(n, g).map((b) => `${b.kind}:${b.condition.text}`);
  it('reports the early return for both granularities', () => {
    expect(conds(at('out[0]'), 'warp')).toEqual(['early-exit:(tid >= n)']);
  });
  it('warp-index and warp-aligned conditions are divergent only for the block', () => {
    expect(conds(at('out[1]'), 'warp')).toEqual(['early-exit:(tid >= n)']);
    expect(conds(at('out[1]'), 'block')).toContain('if:(warp == 0)');
    expect(conds(at('out[2]'), 'warp')).not.toContain('if:(threadIdx.x < 32)');
    expect(conds(at('out[2]'), 'block')).toContain('if:(threadIdx.x < 32)');
  });
  it('a loop declared inside a divergent branch is itself uniform; a published shared scalar is block-uniform', () => {
    expect(conds(at('out[o]'), 'warp').filter((c) => c.startsWith('loop'))).toEqual([]);
    expect(conds(at('out[o]'), 'warp')).toContain('if:(tid < n / 2)');
    expect(conds(at('out[4]'), 'block').filter((c) => c.startsWith('if'))).toEqual([]);
  });
  it('thread-dependent loop and ternary', () => {
    expect(conds(at('out[i]'), 'warp')).toContain('loop:i < n');
    expect(conds(at('out[3]'), 'warp')).toContain('ternary:flags[tid]');
  });
});

const ROWS = `
__global__ void rows32(const float* a, float* out, int c) {
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  for (int k = threadIdx.x; k < c; k += 32) out[y] += a[k];
}
__global__ void rows16(const float* a, float* out, int c) {
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  for (int k = threadIdx.x; k < c; k += 16) out[y] += a[k];
}
__global__ void ticket(unsigned* counter, float* out) {
  extern __shared__ float sm[];
  unsigned* t = (unsigned*)(sm + 4);
  if (threadIdx.x == 0) *t = atomicInc(counter, gridDim.x);
  __syncthreads();
  unsigned got = *t;
  out[got] = 1.f;
}
__device__ void worker(int tile, int tid) { __syncthreads(); }
`;
describe('uniformity: block shape, pointers, collective helpers', () => {
  const [s] = buildSources('src/r.cu', 'cuda', { text: ROWS, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  const u = uniformity.compute(s, config());
  const decl = (fn: string, name: string) => {
    const f = s.root.descendantsOfType('function_definition').find((d) => d.text.includes(`void ${fn}(`))!;
    return f.descendantsOfType('init_declarator').find((d) => d.childForFieldName('declarator')?.text === name)!.childForFieldName('value')!;
  };
  it('threadIdx.y is warp-uniform when a block-stride loop shows 32-wide rows, not with 16-wide rows', () => {
    expect(u.level(decl('rows32', 'y'))).toBe('warp');
    expect(u.level(decl('rows16', 'y'))).toBe('thread');
  });
  it('a store through a local pointer into shared memory does not make the pointer per-thread', () => {
    expect(u.level(decl('ticket', 'got'))).toBe('block');
  });
  it('parameters of a collective helper without visible callers are shared, except thread-index names', () => {
    const f = s.root.descendantsOfType('function_definition').find((d) => d.text.includes('void worker('))!;
    const ids = f.descendantsOfType('identifier');
    expect(u.level(ids.find((i) => i.text === 'tile')!)).toBe('block');
    expect(u.level(ids.find((i) => i.text === 'tid')!)).toBe('thread');
  });
});

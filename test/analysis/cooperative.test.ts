import { describe, expect, it } from 'vitest';
import { gridSyncCalls, gridSyncIn } from '../../src/analysis/cooperative.js';
import { buildSources } from '../../src/sources/build.js';

function body(src: string) {
  const [s] = buildSources('src/c.cu', 'cuda', { text: src, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return s.root.descendantsOfType('function_definition')[0].childForFieldName('body');
}

describe('gridSyncIn', () => {
  it.each([
    ['__global__ void k() { auto g = cg::this_grid(); g.sync(); }', 'g.sync()'],
    ['__global__ void k() { cg::grid_group grid = cg::this_grid(); cg::sync(grid); }', 'cg::sync(grid)'],
    ['__global__ void k() { cooperative_groups::this_grid().sync(); }', 'cooperative_groups::this_grid().sync()'],
    ['__global__ void k() { cg::sync(cg::this_grid()); }', 'cg::sync(cg::this_grid())'],
    ['__global__ void k() { auto block = cg::this_thread_block(); block.sync(); }', null],
    ['__global__ void k() { auto g = cg::this_grid(); int r = g.thread_rank(); }', null],
    ['__global__ void k() { __syncthreads(); }', null],
  ])('%s', (src, want) => {
    expect(gridSyncIn(body(src))).toBe(want);
  });
});

describe('gridSyncCalls', () => {
  it('finds every grid barrier and no block barrier', () => {
    const b = body('__global__ void k() { auto g = cg::this_grid(); auto blk = cg::this_thread_block(); g.sync(); blk.sync(); cg::sync(g); cg::this_grid().sync(); __syncthreads(); }');
    expect(gridSyncCalls(b).map((c) => c.text)).toEqual(['g.sync()', 'cg::sync(g)', 'cg::this_grid().sync()']);
  });
});

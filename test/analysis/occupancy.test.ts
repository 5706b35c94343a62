import { describe, expect, it } from 'vitest';
import { GPU_TABLE } from '../../src/config/gpus.js';
import { occupancy, regsPerWarp, warpsByRegisters, waves } from '../../src/analysis/occupancy.js';

const A100 = GPU_TABLE.A100!;
const H100 = GPU_TABLE.H100!;
const RTX3090 = GPU_TABLE['RTX 3090']!;
const RTX4090 = GPU_TABLE['RTX 4090']!;

describe('occupancy: catalog §5.3 warps by registers (no block granularity)', () => {
  // [R, regs/warp, 64-warp SM warps, 48-warp SM warps, 256-thread blocks on 64-warp SM %, on 48-warp SM %]
  // Warps are what the runtime gives (whole warps per register sub-partition, test/data/occupancy-h200.tsv);
  // the seed's catalog (⌊65536 / regs per warp⌋) said 51 / 42 / 25 / 23 / 21 for 40 / 41–48 / 80 / 81–88 / 96.
  const rows: [number, number, number, number, number, number][] = [
    [32, 1024, 64, 48, 100, 100],
    [40, 1280, 48, 48, 75, 100],
    [41, 1536, 40, 40, 62.5, 83.3],
    [48, 1536, 40, 40, 62.5, 83.3],
    [56, 1792, 36, 36, 50, 66.7],
    [64, 2048, 32, 32, 50, 66.7],
    [65, 2304, 28, 28, 37.5, 50],
    [72, 2304, 28, 28, 37.5, 50],
    [80, 2560, 24, 24, 37.5, 50],
    [81, 2816, 20, 20, 25, 33.3],
    [88, 2816, 20, 20, 25, 33.3],
    [96, 3072, 20, 20, 25, 33.3],
    [128, 4096, 16, 16, 25, 33.3],
    [168, 5376, 12, 12, 12.5, 16.7],
    [255, 8192, 8, 8, 12.5, 16.7],
  ];
  for (const [R, rpw, w64, w48, occ64, occ48] of rows) {
    it(`R=${R}`, () => {
      expect(regsPerWarp(R, A100)).toBe(rpw);
      expect(warpsByRegisters(R, A100)).toBe(w64);
      expect(warpsByRegisters(R, H100)).toBe(w64);
      expect(warpsByRegisters(R, RTX3090)).toBe(w48);
      expect(warpsByRegisters(R, RTX4090)).toBe(w48);
      const o64 = occupancy(A100, { threadsPerBlock: 256, regsPerThread: R });
      const o48 = occupancy(RTX4090, { threadsPerBlock: 256, regsPerThread: R });
      expect(Math.round(o64.occupancy * 1000) / 10).toBeCloseTo(occ64, 1);
      expect(Math.round(o48.occupancy * 1000) / 10).toBeCloseTo(occ48, 1);
    });
  }
});

describe('occupancy: catalog §5.2 (003 §8.6 tables)', () => {
  it('CC 8.0: 32/64/128/255 registers give 64/32/16/8 warps', () => {
    // 003 §8.6 counts threads per SM (no block granularity); 64-thread blocks stay under the 32-block cap.
    for (const [R, w] of [[32, 64], [64, 32], [128, 16], [255, 8]] as const) {
      const o = occupancy(A100, { threadsPerBlock: 64, regsPerThread: R });
      expect(warpsByRegisters(R, A100)).toBe(w);
      expect(o.activeWarps).toBe(w);
    }
    expect(occupancy(A100, { threadsPerBlock: 128, regsPerThread: 64 }).occupancy).toBe(0.5);
    expect(occupancy(A100, { threadsPerBlock: 128, regsPerThread: 255 }).occupancy).toBe(0.125);
  });
  it('CC 8.6/8.9: 32/43/64/85/128 registers give 48/40/32/20/16 warps (seed: 48/42/32/23/16)', () => {
    for (const [R, w, occ] of [[32, 48, 100], [43, 40, 83.3], [64, 32, 66.7], [85, 20, 41.7], [128, 16, 33.3]] as const) {
      expect(warpsByRegisters(R, RTX3090)).toBe(w);
      expect(Math.round((warpsByRegisters(R, RTX3090) / 48) * 1000) / 10).toBeCloseTo(occ, 1);
    }
    // I-03: 41 and 42 registers already lose warps (40: the sub-partition rule; the seed said 42).
    expect(warpsByRegisters(41, RTX3090)).toBe(40);
    expect(warpsByRegisters(40, RTX3090)).toBe(48);
  });
  it('derived thresholds: 100 % lost above 32 (64-warp) / 40 (48-warp); < 50 % above 64 / 80', () => {
    expect(warpsByRegisters(32, A100)).toBe(64);
    expect(warpsByRegisters(33, A100)).toBeLessThan(64);
    expect(warpsByRegisters(40, RTX4090)).toBe(48);
    expect(warpsByRegisters(41, RTX4090)).toBeLessThan(48);
    expect(warpsByRegisters(64, H100) / 64).toBe(0.5);
    expect(warpsByRegisters(65, H100) / 64).toBeLessThan(0.5);
    expect(warpsByRegisters(80, RTX3090) / 48).toBeGreaterThanOrEqual(0.5);
    expect(warpsByRegisters(81, RTX3090) / 48).toBeLessThan(0.5);
  });
});

describe('occupancy: block limits', () => {
  it('without register or smem data: warps and hardware block caps', () => {
    expect(occupancy(H100, { threadsPerBlock: 256 }).blocks).toBe(8);
    expect(occupancy(RTX4090, { threadsPerBlock: 256 }).blocks).toBe(6);
    expect(occupancy(RTX4090, { threadsPerBlock: 1024 }).blocks).toBe(1);
    expect(occupancy(A100, { threadsPerBlock: 1024 }).blocks).toBe(2);
    expect(occupancy(A100, { threadsPerBlock: 32 }).blocks).toBe(32);
    expect(occupancy(A100, { threadsPerBlock: 32 }).limiter).toBe('blocks per SM');
    expect(occupancy(RTX3090, { threadsPerBlock: 32 }).blocks).toBe(16);
    expect(occupancy(RTX3090, { threadsPerBlock: 64 }).blocks).toBe(16);
    expect(occupancy(RTX4090, { threadsPerBlock: 64 }).blocks).toBe(24);
  });
  it('partial warps round up', () => {
    expect(occupancy(A100, { threadsPerBlock: 100 }).warpsPerBlock).toBe(4);
  });
  it('shared memory per SM', () => {
    const o = occupancy(RTX4090, { threadsPerBlock: 128, smemPerBlock: 48 * 1024 });
    expect(o.blocks).toBe(2);
    expect(o.limiter).toBe('shared memory');
    expect(occupancy(H100, { threadsPerBlock: 128, smemPerBlock: 48 * 1024 }).blocks).toBe(4);
  });
  it('block granularity: 40 regs at 256 threads on A100 is 6 blocks (75 %) of the 48 warps registers allow', () => {
    const o = occupancy(A100, { threadsPerBlock: 256, regsPerThread: 40 });
    expect(o.warpsByRegs).toBe(48);
    expect(o.blocks).toBe(6);
    expect(o.limiter).toBe('registers');
  });
  it('blocks larger than 1,024 threads cannot launch', () => {
    expect(occupancy(A100, { threadsPerBlock: 2048 }).blocks).toBe(0);
  });
});

describe('waves (003 §8.8)', () => {
  it('129 blocks on RTX 4090 at 1 block/SM: two waves, the last runs 1 block', () => {
    const w = waves(RTX4090, 129, 1);
    expect(w.wave).toBe(128);
    expect(w.waves).toBe(2);
    expect(w.lastWaveBlocks).toBe(1);
    expect(w.idleFraction).toBeCloseTo(127 / 256, 5);
  });
  it('issue example: 133 blocks of 256 on H100 (8 blocks/SM) is one partial wave; 1,057 leaves 1 block', () => {
    const b = occupancy(H100, { threadsPerBlock: 256 }).blocks;
    expect(b).toBe(8);
    expect(waves(H100, 133, b).waves).toBe(1);
    expect(waves(H100, 1057, b).lastWaveBlocks).toBe(1);
    expect(waves(H100, 133, 1).lastWaveBlocks).toBe(1);
  });
  it('exact multiples fill the last wave', () => {
    const w = waves(A100, 216, 2);
    expect(w.waves).toBe(1);
    expect(w.lastWaveFill).toBe(1);
    expect(w.idleFraction).toBe(0);
  });
});

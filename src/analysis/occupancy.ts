import type { GpuSpec } from '../config/gpus.js';

/**
 * Theoretical occupancy of a kernel on one target GPU (catalog §5.3, from 003 §3.1 and §3.4/§8.6)
 * and the wave figures built on it (003 §3.2, §8.8). Only document data is used: registers are
 * handed out per warp in 256-register units, and a block is resident only as a whole, so the
 * per-SM block count is limited by registers, shared memory, the hardware block cap and warps.
 */

export interface OccupancyInput {
  /** Threads per block (x·y·z). */
  threadsPerBlock: number;
  /** Registers per thread, when known (ptxas -v or a launch-bounds-implied cap). */
  regsPerThread?: number | null;
  /** Static + dynamic shared memory per block in bytes, when known. */
  smemPerBlock?: number | null;
}

export interface Occupancy {
  gpu: string;
  warpsPerBlock: number;
  regsPerWarp: number | null;
  warpsByRegs: number | null;
  blocksByRegs: number;
  blocksBySmem: number;
  blocksByWarps: number;
  /** Resident (active) blocks per SM; 0 when the block cannot launch at all. */
  blocks: number;
  activeWarps: number;
  /** activeWarps / maxWarpsPerSm, in [0, 1]. */
  occupancy: number;
  /** Which limit set `blocks`. */
  limiter: 'registers' | 'shared memory' | 'blocks per SM' | 'warps per SM' | 'block too large';
}

export function regsPerWarp(regsPerThread: number, gpu: Pick<GpuSpec, 'warp' | 'regAllocGranularityPerWarp'>): number {
  const g = gpu.regAllocGranularityPerWarp;
  return Math.ceil((regsPerThread * gpu.warp) / g) * g;
}

/** Warps per SM allowed by the register file alone, ignoring block granularity (the §5.3 table). */
export function warpsByRegisters(regsPerThread: number, gpu: GpuSpec): number {
  return Math.min(Math.floor(gpu.regsPerSm / regsPerWarp(regsPerThread, gpu)), gpu.maxWarpsPerSm);
}

export function occupancy(gpu: GpuSpec, input: OccupancyInput): Occupancy {
  const T = input.threadsPerBlock;
  const warpsPerBlock = Math.ceil(T / gpu.warp);
  const inf = Number.POSITIVE_INFINITY;
  const rpw = input.regsPerThread ? regsPerWarp(input.regsPerThread, gpu) : null;
  const wByRegs = rpw ? Math.floor(gpu.regsPerSm / rpw) : null;
  const blocksByRegs = wByRegs === null ? inf : Math.floor(wByRegs / warpsPerBlock);
  const smem = input.smemPerBlock ?? 0;
  const blocksBySmem = smem > 0 ? Math.floor((gpu.smemPerSmKb * 1024) / smem) : inf;
  const blocksByWarps = Math.floor(gpu.maxWarpsPerSm / warpsPerBlock);
  let blocks = Math.min(blocksByRegs, blocksBySmem, gpu.maxBlocksPerSm, blocksByWarps);
  let limiter: Occupancy['limiter'] =
    blocks === blocksByRegs ? 'registers'
    : blocks === blocksBySmem ? 'shared memory'
    : blocks === blocksByWarps ? 'warps per SM' : 'blocks per SM';
  if (T > gpu.maxThreadsPerBlock || T <= 0) {
    blocks = 0;
    limiter = 'block too large';
  }
  const activeWarps = blocks * warpsPerBlock;
  return {
    gpu: gpu.name,
    warpsPerBlock,
    regsPerWarp: rpw,
    warpsByRegs: wByRegs,
    blocksByRegs: Number.isFinite(blocksByRegs) ? blocksByRegs : gpu.maxBlocksPerSm,
    blocksBySmem: Number.isFinite(blocksBySmem) ? blocksBySmem : gpu.maxBlocksPerSm,
    blocksByWarps,
    blocks,
    activeWarps,
    occupancy: activeWarps / gpu.maxWarpsPerSm,
    limiter,
  };
}

export interface Waves {
  gpu: string;
  /** Blocks per SM used for the wave (occupancy-derived or given). */
  blocksPerSm: number;
  /** One wave: SMs × blocks per SM. */
  wave: number;
  /** Full waves plus a partial one, if any. */
  waves: number;
  fullWaves: number;
  /** Blocks in the last wave (equal to `wave` when the grid is an exact multiple). */
  lastWaveBlocks: number;
  /** lastWaveBlocks / wave, in (0, 1]. */
  lastWaveFill: number;
  /** Share of the SM-slots of all waves left idle, in [0, 1). */
  idleFraction: number;
}

export function waves(gpu: GpuSpec, gridBlocks: number, blocksPerSm: number): Waves {
  const B = Math.max(1, blocksPerSm);
  const W = gpu.sms * B;
  const G = Math.max(0, gridBlocks);
  const n = Math.ceil(G / W);
  const full = Math.floor(G / W);
  const rem = G % W;
  const last = rem === 0 ? (G === 0 ? 0 : W) : rem;
  return {
    gpu: gpu.name,
    blocksPerSm: B,
    wave: W,
    waves: n,
    fullWaves: full,
    lastWaveBlocks: last,
    lastWaveFill: W ? last / W : 0,
    idleFraction: n ? (n * W - G) / (n * W) : 0,
  };
}

/** Smallest configured SM count and the GPU that has it (grid-too-small names the weakest target). */
export function smallestSmTarget(targets: readonly GpuSpec[]): GpuSpec | undefined {
  return [...targets].sort((a, b) => a.sms - b.sms)[0];
}

export function pct(x: number): string {
  const v = Math.round(x * 1000) / 10;
  return `${v}%`;
}

import type { GpuSpec } from '../config/gpus.js';

/**
 * Occupancy of a kernel on one target GPU (catalog §5.3, from 003 §3.1 and §3.4/§8.6) and the wave
 * figures built on it (003 §3.2, §8.8). The model applies the rules the CUDA runtime applies in
 * `cudaOccupancyMaxActiveBlocksPerMultiprocessor` and `cudaOccupancyAvailableDynamicSMemPerBlock`
 * (the CUDA 13.0 toolkit's `cuda_occupancy.h` states them; the CUDA Occupancy Calculator and the
 * Programming Guide's per-cc table give the limits), and reproduces every row the runtime answered
 * on an H200 (test/data/occupancy-h200.tsv, 66,110 rows). Each rule below names its source.
 *
 * A block is resident only as a whole; the per-SM block count is the least of five limits:
 * 1. block size: a block larger than the device's 1,024 threads, or than the kernel's own
 *    maxThreadsPerBlock (launch bounds, or what its register count allows: rule 3b), never launches;
 * 2. warps: ⌊max warps per SM / warps per block⌋, warps per block = ⌈threads / 32⌉ (a partial warp
 *    takes a whole warp slot) — Programming Guide, "Hardware Multithreading";
 * 3. registers — cuda_occupancy.h `cudaOccMaxBlocksPerSMRegsLimit`, Occupancy Calculator
 *    ("register allocation unit size 256, granularity warp"):
 *    a. a warp's registers are rounded up to 256 (registers per thread × 32, i.e. per thread to a
 *       multiple of 8);
 *    b. the SM's 64 K registers are split over 4 sub-partitions and each holds whole warps:
 *       warps by registers = ⌊(regs per SM / 4) / regs per warp⌋ × 4 (not ⌊regs per SM / regs per warp⌋:
 *       40 registers give 48 warps, not 51); a block whose warps, rounded up to a multiple of 4, need
 *       more than the 64 K registers per block cannot launch — this is the maxThreadsPerBlock that
 *       `cudaFuncGetAttributes` reports for high-register kernels (896 at 65–72, 256 at 200–255);
 * 4. shared memory — cuda_occupancy.h `cudaOccMaxBlocksPerSMSmemLimit`, Programming Guide "Shared
 *    Memory" (cc 8.x–12.x):
 *    a. every block also holds the driver's reserved shared memory (1 KB on cc ≥ 8.0, 0 on 7.x);
 *    b. static + dynamic + reserved is rounded up to the allocation unit (128 B on cc ≥ 8.0, 256 B on 7.x);
 *    c. a block over the opt-in maximum (+ the reservation), or whose dynamic part exceeds the
 *       kernel's cudaFuncAttributeMaxDynamicSharedMemorySize, cannot launch;
 *    d. the SM's shared memory is one of the carveouts the driver picks from (cc 9.0/10.x: 0, 8, 16,
 *       32, 64, 100, 132, 164, 196, 228 KB; 8.0/8.7: up to 164; 8.6/8.9/12.x: up to 100; 7.0: up to
 *       96; 7.5: 32 or 64): the default preference is the largest, a carveout percentage asks for that
 *       share of the maximum rounded up to a carveout, and a preference too small for one block is
 *       raised to the smallest carveout that fits it;
 * 5. the hardware cap on resident blocks per SM (32 on 7.0/8.0/9.0/10.x, 16 on 7.5/8.6/8.7, 24 on 8.9/12.x).
 */

export interface OccupancyInput {
  /** Threads per block (x·y·z). */
  threadsPerBlock: number;
  /** Registers per thread, when known (ptxas -v or a launch-bounds-implied cap). */
  regsPerThread?: number | null;
  /** Static + dynamic shared memory per block in bytes, when known (without the driver's reservation). */
  smemPerBlock?: number | null;
  /** Static shared memory per block (cudaFuncAttributes.sharedSizeBytes); with dynamicSmemPerBlock replaces smemPerBlock. */
  staticSmemPerBlock?: number | null;
  /** Dynamic shared memory per block (the launch's third argument). */
  dynamicSmemPerBlock?: number | null;
  /** The kernel's own block-size limit (__launch_bounds__ / cudaFuncAttributes.maxThreadsPerBlock), when known. */
  kernelMaxThreadsPerBlock?: number | null;
  /** cudaFuncAttributeMaxDynamicSharedMemorySize; default: the opt-in maximum less the static part (the kernel opted in). */
  maxDynamicSmemPerBlock?: number | null;
  /** cudaFuncAttributePreferredSharedMemoryCarveout in percent; -1 or absent: the driver's default (the largest carveout). */
  carveoutPercent?: number | null;
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
  /** Shared memory one block holds: static + dynamic + the reservation, rounded to the allocation unit (bytes). */
  smemAllocatedPerBlock: number;
  /** The shared-memory carveout the SM runs with for this launch (bytes). */
  smemPerSmConfig: number;
  /** Largest block the kernel can launch with (device limit, kernel limit, registers: rule 3b). */
  maxThreadsPerBlock: number;
}

type RegGpu = Pick<GpuSpec, 'warp' | 'regAllocGranularityPerWarp'> & Partial<Pick<GpuSpec, 'regSubPartitions'>>;

const roundUp = (x: number, g: number): number => Math.ceil(x / g) * g;

/** Rule 3a: registers one warp holds, rounded up to the 256-register allocation unit. */
export function regsPerWarp(regsPerThread: number, gpu: Pick<GpuSpec, 'warp' | 'regAllocGranularityPerWarp'>): number {
  return roundUp(regsPerThread * gpu.warp, gpu.regAllocGranularityPerWarp);
}

/** Rule 3b: warps per SM allowed by the register file alone (whole warps per sub-partition), ignoring block granularity. */
export function warpsByRegisters(regsPerThread: number, gpu: GpuSpec): number {
  const parts = gpu.regSubPartitions ?? 4;
  return Math.min(Math.floor(gpu.regsPerSm / parts / regsPerWarp(regsPerThread, gpu)) * parts, gpu.maxWarpsPerSm);
}

/**
 * Rule 3b: the largest block a kernel with this many registers per thread can launch: its warps,
 * rounded up to the sub-partition count, must fit the per-block register limit
 * (cudaFuncGetAttributes' maxThreadsPerBlock for a kernel without launch bounds).
 */
export function maxThreadsPerBlockForRegs(regsPerThread: number, gpu: GpuSpec): number {
  const rpw = regsPerWarp(regsPerThread, gpu);
  if (rpw <= 0) return gpu.maxThreadsPerBlock;
  const parts = gpu.regSubPartitions ?? 4;
  const warps = Math.floor(Math.floor((gpu.regsPerBlock ?? gpu.regsPerSm) / rpw) / parts) * parts;
  return Math.min(warps * gpu.warp, gpu.maxThreadsPerBlock);
}

/** Rule 4d: the carveout (bytes) a preference of `bytes` maps to: the smallest carveout ≥ it, or null above the largest. */
function carveoutAtLeast(gpu: GpuSpec, bytes: number): number | null {
  const kb = carveouts(gpu).find((k) => k * 1024 >= bytes);
  return kb === undefined ? null : kb * 1024;
}

function carveouts(gpu: GpuSpec): readonly number[] {
  return gpu.smemCarveoutsKb?.length ? gpu.smemCarveoutsKb : [gpu.smemPerSmKb];
}

/** Rule 4d: the SM's shared memory the preference asks for (bytes), before it is raised to fit one block. */
function preferredSmemPerSm(gpu: GpuSpec, carveoutPercent: number | null | undefined): number {
  const max = gpu.smemPerSmKb * 1024;
  if (carveoutPercent === null || carveoutPercent === undefined || carveoutPercent < 0) return max;
  const want = Math.floor((Math.min(carveoutPercent, 100) * max) / 100);
  return carveoutAtLeast(gpu, want) ?? max;
}

interface SmemParts {
  static: number;
  dynamic: number;
}

function smemParts(input: OccupancyInput): SmemParts {
  if (input.staticSmemPerBlock != null || input.dynamicSmemPerBlock != null) {
    return { static: input.staticSmemPerBlock ?? 0, dynamic: input.dynamicSmemPerBlock ?? 0 };
  }
  return { static: 0, dynamic: input.smemPerBlock ?? 0 };
}

export function occupancy(gpu: GpuSpec, input: OccupancyInput): Occupancy {
  const T = input.threadsPerBlock;
  const warpsPerBlock = Math.ceil(T / gpu.warp);
  const inf = Number.POSITIVE_INFINITY;
  const parts = gpu.regSubPartitions ?? 4;
  const R = input.regsPerThread ?? 0;

  // Rule 1: block size (device, kernel, registers).
  let maxThreads = gpu.maxThreadsPerBlock;
  if (input.kernelMaxThreadsPerBlock) maxThreads = Math.min(maxThreads, input.kernelMaxThreadsPerBlock);
  if (R > 0) maxThreads = Math.min(maxThreads, maxThreadsPerBlockForRegs(R, gpu));
  const tooLarge = T > maxThreads || T <= 0;

  // Rule 2: warps.
  const blocksByWarps = Math.floor(gpu.maxWarpsPerSm / warpsPerBlock);

  // Rule 3: registers.
  const rpw = R > 0 ? regsPerWarp(R, gpu) : null;
  let wByRegs: number | null = null;
  let blocksByRegs = inf;
  if (rpw) {
    wByRegs = Math.floor(gpu.regsPerSm / parts / rpw) * parts;
    const fits = rpw * roundUp(warpsPerBlock, parts) <= (gpu.regsPerBlock ?? gpu.regsPerSm) && R <= gpu.maxRegsPerThread;
    blocksByRegs = fits ? Math.floor(wByRegs / warpsPerBlock) : 0;
  }

  // Rule 4: shared memory.
  const sm = smemParts(input);
  const reserved = gpu.reservedSmemPerBlockBytes ?? 0;
  const unit = gpu.smemAllocGranularityBytes ?? 1;
  const optin = gpu.smemPerBlockOptinKb * 1024;
  const smemAllocated = roundUp(sm.static + sm.dynamic + reserved, unit);
  const maxDynamic = input.maxDynamicSmemPerBlock ?? optin - sm.static;
  let smemPerSmConfig = preferredSmemPerSm(gpu, input.carveoutPercent);
  let blocksBySmem: number;
  if (sm.dynamic > maxDynamic || smemAllocated > optin + reserved) {
    blocksBySmem = 0;
  } else {
    if (smemPerSmConfig < smemAllocated) smemPerSmConfig = carveoutAtLeast(gpu, smemAllocated) ?? gpu.smemPerSmKb * 1024;
    blocksBySmem = smemAllocated > 0 ? Math.floor(smemPerSmConfig / smemAllocated) : inf;
  }

  // Rule 5: the hardware block cap; the least limit wins (ties name the first in this order).
  let blocks = Math.min(blocksByRegs, blocksBySmem, gpu.maxBlocksPerSm, blocksByWarps);
  let limiter: Occupancy['limiter'] =
    blocks === blocksByRegs ? 'registers'
    : blocks === blocksBySmem ? 'shared memory'
    : blocks === blocksByWarps ? 'warps per SM' : 'blocks per SM';
  if (tooLarge) {
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
    smemAllocatedPerBlock: smemAllocated,
    smemPerSmConfig,
    maxThreadsPerBlock: Math.max(0, maxThreads),
  };
}

/**
 * `cudaOccupancyAvailableDynamicSMemPerBlock`: the most dynamic shared memory per block with which
 * `numBlocks` blocks of `threadsPerBlock` can still be resident on one SM, as the runtime answers it
 * (cuda_occupancy.h `cudaOccAvailableDynamicSMemPerBlock`); null where the runtime answers
 * cudaErrorInvalidValue (fewer than `numBlocks` blocks fit even without dynamic shared memory).
 * The runtime's answer does not subtract the per-block reservation (rule 4a): with 2+ blocks a launch
 * at exactly this size can fit one block fewer than asked (the occupancy call is the one to trust).
 */
export function availableDynamicSmemPerBlock(
  gpu: GpuSpec,
  input: Omit<OccupancyInput, 'smemPerBlock' | 'dynamicSmemPerBlock'>,
  numBlocks: number,
): number | null {
  if (numBlocks <= 0) return null;
  const occ = occupancy(gpu, { ...input, dynamicSmemPerBlock: 0, staticSmemPerBlock: input.staticSmemPerBlock ?? 0 });
  if (occ.blocks < numBlocks) return null;
  const stat = input.staticSmemPerBlock ?? 0;
  const unit = gpu.smemAllocGranularityBytes ?? 1;
  const limitPerBlock = gpu.smemPerBlockOptinKb * 1024 + (gpu.reservedSmemPerBlockBytes ?? 0);
  let perSm: number;
  if (numBlocks === 1) perSm = limitPerBlock;
  else {
    perSm = preferredSmemPerSm(gpu, input.carveoutPercent);
    if (perSm === 0) perSm = carveoutAtLeast(gpu, 1) ?? gpu.smemPerSmKb * 1024;
  }
  let avail = Math.floor(Math.floor(perSm / numBlocks) / unit) * unit;
  avail = Math.min(avail, limitPerBlock) - stat;
  const maxDynamic = input.maxDynamicSmemPerBlock ?? gpu.smemPerBlockOptinKb * 1024 - stat;
  return Math.max(0, Math.min(avail, maxDynamic));
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

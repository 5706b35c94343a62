import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { GPU_TABLE } from '../../src/config/gpus.js';
import { availableDynamicSmemPerBlock, maxThreadsPerBlockForRegs, occupancy } from '../../src/analysis/occupancy.js';

/**
 * Ground truth from the CUDA runtime on an NVIDIA H200 (bench/gpu/occupancy_sweep.cu, driver and
 * runtime 13.0): every row the runtime answered must be reproduced exactly by the model's H200 entry.
 */
const H200 = GPU_TABLE.H200!;
const data = (f: string): string => {
  const p = new URL(`../data/${f}`, import.meta.url);
  return f.endsWith('.gz') ? gunzipSync(readFileSync(p)).toString('utf8') : readFileSync(p, 'utf8');
};

function table(f: string): Record<string, string>[] {
  const lines = data(f).split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  const head = lines[0]!.split('\t');
  return lines.slice(1).map((l) => Object.fromEntries(l.split('\t').map((v, i) => [head[i]!, v])));
}

const occRows = table('occupancy-h200.tsv.gz');
const funcMax = new Map(occRows.map((r) => [r.kernel!, Number(r.func_max_threads)]));

describe('H200 entry equals the device attributes the runtime reports', () => {
  const dev = JSON.parse(data('h200-device.json')) as Record<string, number | string>;
  it('limits the occupancy model uses', () => {
    expect(H200.cc).toBe(dev.cc);
    expect(H200.sms).toBe(dev.multiProcessorCount);
    expect(H200.regsPerSm).toBe(dev.regsPerMultiprocessor);
    expect(H200.regsPerBlock).toBe(dev.regsPerBlock);
    expect(H200.maxThreadsPerSm).toBe(dev.maxThreadsPerMultiProcessor);
    expect(H200.maxWarpsPerSm * H200.warp).toBe(dev.maxThreadsPerMultiProcessor);
    expect(H200.maxThreadsPerBlock).toBe(dev.maxThreadsPerBlock);
    expect(H200.maxBlocksPerSm).toBe(dev.maxBlocksPerMultiProcessor);
    expect(H200.warp).toBe(dev.warpSize);
    expect(H200.smemPerSmKb * 1024).toBe(dev.sharedMemPerMultiprocessor);
    expect(H200.smemDefaultKb * 1024).toBe(dev.sharedMemPerBlock);
    expect(H200.smemPerBlockOptinKb * 1024).toBe(dev.sharedMemPerBlockOptin);
    expect(H200.reservedSmemPerBlockBytes).toBe(dev.reservedSharedMemoryPerBlock);
    expect(H200.l2Mb * 1024 * 1024).toBe(dev.l2CacheSize);
    expect(H200.l2SetAsideMaxMb * 1024 * 1024).toBe(dev.persistingL2CacheMaxSize);
  });
});

describe('cudaOccupancyMaxActiveBlocksPerMultiprocessor on H200: every row', () => {
  it(`reproduces all ${occRows.length} rows`, () => {
    expect(occRows.length).toBe(66110);
    const wrong: string[] = [];
    for (const r of occRows) {
      const o = occupancy(H200, {
        threadsPerBlock: Number(r.threads),
        regsPerThread: Number(r.num_regs),
        staticSmemPerBlock: Number(r.static_smem),
        dynamicSmemPerBlock: Number(r.dynamic_smem),
      });
      if (o.blocks !== Number(r.blocks_per_sm)) wrong.push(`${r.kernel} T=${r.threads} dyn=${r.dynamic_smem}: runtime ${r.blocks_per_sm}, model ${o.blocks}`);
    }
    expect(wrong.slice(0, 20)).toEqual([]);
    expect(wrong.length).toBe(0);
  });

  it('each rule is needed: without it the model misses rows of the table', () => {
    const misses = (gpu: typeof H200): number =>
      occRows.filter((r) => occupancy(gpu, { threadsPerBlock: Number(r.threads), regsPerThread: Number(r.num_regs), staticSmemPerBlock: Number(r.static_smem), dynamicSmemPerBlock: Number(r.dynamic_smem) }).blocks !== Number(r.blocks_per_sm)).length;
    // No 1 KB reservation per block, a 256-byte allocation unit (cc 7.x's), one register pool instead of 4 sub-partitions.
    expect(misses({ ...H200, reservedSmemPerBlockBytes: 0 })).toBe(1122);
    expect(misses({ ...H200, smemAllocGranularityBytes: 256 })).toBe(19);
    expect(misses({ ...H200, regSubPartitions: 1 })).toBeGreaterThan(1000);
  });

  it("the kernel's maxThreadsPerBlock follows from its registers (cudaFuncGetAttributes)", () => {
    for (const r of occRows) {
      expect(maxThreadsPerBlockForRegs(Number(r.num_regs), H200), r.kernel).toBe(Number(r.func_max_threads));
    }
  });

  it('the old model (no reservation, no sub-partitions, no block-size limit by registers) would over-estimate', () => {
    // 65 registers, 928 threads: the runtime refuses the launch (896 is the kernel's limit).
    expect(occupancy(H200, { threadsPerBlock: 928, regsPerThread: 65 }).blocks).toBe(0);
    // 40 registers, 64 threads: 48 warps by registers (sub-partitions), not 51: 24 blocks, not 25.
    expect(occupancy(H200, { threadsPerBlock: 64, regsPerThread: 40 }).blocks).toBe(24);
    // 8 KB of dynamic smem at 32 threads: 9 KB per block with the reservation: 25 blocks, not 28.
    const o = occupancy(H200, { threadsPerBlock: 32, regsPerThread: 24, dynamicSmemPerBlock: 8192 });
    expect(o.blocks).toBe(25);
    expect(o.smemAllocatedPerBlock).toBe(9216);
    expect(o.limiter).toBe('shared memory');
  });
});

describe('carveout preference on H200: every row', () => {
  const rows = table('carveout-h200.tsv');
  it(`reproduces all ${rows.length} rows`, () => {
    expect(rows.length).toBe(980);
    const wrong: string[] = [];
    for (const r of rows) {
      const o = occupancy(H200, {
        threadsPerBlock: Number(r.threads),
        regsPerThread: Number(r.num_regs),
        staticSmemPerBlock: Number(r.static_smem),
        dynamicSmemPerBlock: Number(r.dynamic_smem),
        kernelMaxThreadsPerBlock: funcMax.get(r.kernel!) ?? null,
        carveoutPercent: Number(r.carveout),
      });
      if (o.blocks !== Number(r.blocks_per_sm)) wrong.push(`${r.kernel} carveout=${r.carveout} T=${r.threads} dyn=${r.dynamic_smem}: runtime ${r.blocks_per_sm}, model ${o.blocks}`);
    }
    expect(wrong.slice(0, 20)).toEqual([]);
  });
  it('a 0 % preference is raised to the smallest carveout that holds one block', () => {
    const o = occupancy(H200, { threadsPerBlock: 64, regsPerThread: 24, dynamicSmemPerBlock: 0, carveoutPercent: 0 });
    expect(o.smemPerSmConfig).toBe(8 * 1024);
    expect(o.blocks).toBe(8);
  });
});

describe('cudaOccupancyAvailableDynamicSMemPerBlock on H200: every row', () => {
  const rows = table('avail-dynsmem-h200.tsv');
  it(`reproduces all ${rows.length} rows, errors included`, () => {
    expect(rows.length).toBe(3960);
    const wrong: string[] = [];
    for (const r of rows) {
      const got = availableDynamicSmemPerBlock(
        H200,
        { threadsPerBlock: Number(r.threads), regsPerThread: Number(r.num_regs), staticSmemPerBlock: Number(r.static_smem), kernelMaxThreadsPerBlock: funcMax.get(r.kernel!) ?? null },
        Number(r.num_blocks),
      );
      const want = r.err === '-' ? Number(r.avail_dynamic_smem) : null;
      if (got !== want) wrong.push(`${r.kernel} T=${r.threads} blocks=${r.num_blocks}: runtime ${r.err === '-' ? r.avail_dynamic_smem : r.err}, model ${got}`);
    }
    expect(wrong.slice(0, 20)).toEqual([]);
  });
  it("the runtime's answer leaves out the reservation: two blocks at that size do not fit", () => {
    const avail = availableDynamicSmemPerBlock(H200, { threadsPerBlock: 32, regsPerThread: 24 }, 2)!;
    expect(avail).toBe(116736);
    expect(occupancy(H200, { threadsPerBlock: 32, regsPerThread: 24, dynamicSmemPerBlock: avail }).blocks).toBe(1);
    expect(occupancy(H200, { threadsPerBlock: 32, regsPerThread: 24, dynamicSmemPerBlock: avail - 1024 }).blocks).toBe(2);
  });
});

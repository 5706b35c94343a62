import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { GPU_TABLE } from '../../src/config/gpus.js';
import { occupancy, warpsByRegisters } from '../../src/analysis/occupancy.js';
import { reviewText } from '../helpers.js';

/**
 * One fixture per architecture class (Volta, Turing, Ampere consumer, Ada, Hopper, Blackwell, and
 * Jetson's GA10B): the shared-memory limit rule fires at the class's own opt-in maximum, and the
 * occupancy limits (block cap, warps per SM) are the class's.
 */
const RULE = 'memory/smem-exceeds-device-limit';
const checks = CHECKS.filter((c) => c.id === RULE);

const launch = (kb: number): string => `
__global__ void stencil_rows(const float* a, float* out) {
  extern __shared__ float rows[];
  rows[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = rows[(threadIdx.x + 7) % blockDim.x];
}

void step(const float* d_a, float* d_out, int n, cudaStream_t s) {
  cudaFuncSetAttribute(stencil_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, ${kb} * 1024);
  stencil_rows<<<n / 128, 128, ${kb} * 1024, s>>>(d_a, d_out);
}
`;

async function fires(kb: number, target: string): Promise<string | null> {
  const f = (await reviewText('src/stencil.cu', launch(kb), { checks, config: { targets: [target] } })).filter((x) => x.ruleId === RULE);
  return f.length ? f[0]!.message : null;
}

// [class, GPU, its opt-in KB, a GPU of another class on which the same launch is legal]
const CLASSES: [string, string, number, string][] = [
  ['Volta', 'V100', 96, 'A100'],
  ['Turing', 'T4', 64, 'V100'],
  ['Ampere consumer', 'A10', 99, 'A100'],
  ['Ampere consumer', 'A40', 99, 'Jetson AGX Orin'],
  ['Ampere GA10B', 'Jetson AGX Orin', 163, 'H200'],
  ['Ada', 'L4', 99, 'H100'],
  ['Ada', 'L40S', 99, 'B200'],
  ['Ada', 'RTX 6000 Ada', 99, 'A100'],
  ['Hopper', 'H200', 227, 'B200'],
  ['Blackwell datacenter', 'B200', 227, 'H200'],
  ['Blackwell consumer', 'RTX 5090', 99, 'L4'],
];

describe('shared-memory limit per architecture class', () => {
  for (const [cls, gpu, kb, other] of CLASSES) {
    it(`${cls} (${gpu}): ${kb} KB is legal, ${kb + 1} KB fires naming ${gpu} and ${kb} KB`, async () => {
      expect(await fires(kb, gpu)).toBeNull();
      const msg = await fires(kb + 1, gpu);
      expect(msg).not.toBeNull();
      expect(msg).toContain(gpu);
      expect(msg).toContain(`${kb} KB`);
      // The same launch on a GPU whose opt-in maximum is larger stays quiet.
      if (GPU_TABLE[other]!.smemPerBlockOptinKb > kb) expect(await fires(kb + 1, other)).toBeNull();
    });
  }
  it('T4 fires at 80 KB where H100 does not', async () => {
    expect(await fires(80, 'T4')).toContain('T4 (64 KB');
    expect(await fires(80, 'H100')).toBeNull();
  });
});

describe('occupancy limits per architecture class', () => {
  const g = (n: string) => GPU_TABLE[n]!;
  it('Volta V100: 32 blocks, 64 warps, 96 KB per SM, no reservation, 256 B unit', () => {
    expect(occupancy(g('V100'), { threadsPerBlock: 32 }).blocks).toBe(32);
    expect(occupancy(g('V100'), { threadsPerBlock: 1024 }).blocks).toBe(2);
    // 48 KB per block: exactly two in 96 KB (no 1 KB reservation on cc 7.x).
    expect(occupancy(g('V100'), { threadsPerBlock: 128, smemPerBlock: 48 * 1024 }).blocks).toBe(2);
    expect(occupancy(g('V100'), { threadsPerBlock: 128, smemPerBlock: 1 }).smemAllocatedPerBlock).toBe(256);
  });
  it('Turing T4: 16 blocks, 32 warps (1,024 threads per SM), 64 KB', () => {
    expect(occupancy(g('T4'), { threadsPerBlock: 32 }).blocks).toBe(16);
    expect(occupancy(g('T4'), { threadsPerBlock: 1024 }).blocks).toBe(1);
    expect(occupancy(g('T4'), { threadsPerBlock: 256 }).occupancy).toBe(1);
    expect(warpsByRegisters(64, g('T4'))).toBe(32);
    expect(occupancy(g('T4'), { threadsPerBlock: 128, smemPerBlock: 32 * 1024 }).blocks).toBe(2);
  });
  it('Ampere consumer A10/A40: 16 blocks, 48 warps, 100 KB with 1 KB reserved per block', () => {
    for (const n of ['A10', 'A10G', 'A40']) {
      expect(occupancy(g(n), { threadsPerBlock: 32 }).blocks).toBe(16);
      expect(occupancy(g(n), { threadsPerBlock: 512 }).blocks).toBe(3);
      // 2 × (49 KB + 1 KB) = 100 KB fits; 2 × (50 + 1) does not.
      expect(occupancy(g(n), { threadsPerBlock: 128, smemPerBlock: 49 * 1024 }).blocks).toBe(2);
      expect(occupancy(g(n), { threadsPerBlock: 128, smemPerBlock: 50 * 1024 }).blocks).toBe(1);
    }
  });
  it('Ampere GA10B Jetson Orin: 16 blocks, 48 warps, 164 KB', () => {
    expect(occupancy(g('Jetson AGX Orin'), { threadsPerBlock: 32 }).blocks).toBe(16);
    expect(occupancy(g('Jetson AGX Orin'), { threadsPerBlock: 128, smemPerBlock: 80 * 1024 }).blocks).toBe(2);
  });
  it('Ada L4/L40S/RTX 6000 Ada: 24 blocks, 48 warps', () => {
    for (const n of ['L4', 'L40S', 'RTX 6000 Ada']) {
      expect(occupancy(g(n), { threadsPerBlock: 32 }).blocks).toBe(24);
      expect(occupancy(g(n), { threadsPerBlock: 64 }).blocks).toBe(24);
      expect(occupancy(g(n), { threadsPerBlock: 1024 }).blocks).toBe(1);
    }
  });
  it('Hopper H200 and Blackwell B200/GB200: 32 blocks, 64 warps, 228 KB', () => {
    for (const n of ['H200', 'B200', 'GB200']) {
      expect(occupancy(g(n), { threadsPerBlock: 32 }).blocks).toBe(32);
      expect(occupancy(g(n), { threadsPerBlock: 1024 }).blocks).toBe(2);
      expect(occupancy(g(n), { threadsPerBlock: 128, smemPerBlock: 113 * 1024 }).blocks).toBe(2);
      expect(occupancy(g(n), { threadsPerBlock: 128, smemPerBlock: 114 * 1024 }).blocks).toBe(1);
    }
  });
  it('Blackwell consumer RTX 5090: 24 blocks, 48 warps, 100 KB', () => {
    expect(occupancy(g('RTX 5090'), { threadsPerBlock: 32 }).blocks).toBe(24);
    expect(occupancy(g('RTX 5090'), { threadsPerBlock: 768 }).blocks).toBe(2);
    expect(occupancy(g('RTX 5090'), { threadsPerBlock: 128, smemPerBlock: 50 * 1024 }).blocks).toBe(1);
  });
});

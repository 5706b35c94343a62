/**
 * Target-GPU reference data (catalog §5.1, from seed 003 §0, §3.1, §4.2, §4.3). Checks read
 * hardware limits from the configured targets only, and name the GPU whose limit is crossed.
 */
export interface GpuSpec {
  name: string;
  cc: string;
  class: 'datacenter' | 'consumer';
  sms: number;
  regsPerSm: number;
  maxRegsPerThread: number;
  maxThreadsPerSm: number;
  maxWarpsPerSm: number;
  maxBlocksPerSm: number;
  maxThreadsPerBlock: number;
  smemPerSmKb: number;
  smemPerBlockOptinKb: number;
  smemDefaultKb: number;
  l1Kb: number;
  l2Mb: number;
  /** 75 % of L2 (catalog §6 I-13). */
  l2SetAsideMaxMb: number;
  bwGbs: number;
  fp32Tflops: number;
  /** As the seed states it; see catalog §6 I-01 before relying on it. */
  fp64TflopsDoc: number;
  fp64Fp32RatioDoc: string;
  warp: number;
  schedulers: number;
  /** Registers are allocated per warp in units of this many (003 §3.4, §8.6). */
  regAllocGranularityPerWarp: number;
  /** Device memory in GiB (catalog §5.1); A100 ships as 40 and 80 GB: the smaller part bounds a portable pool size. */
  vramGb: number;
}

const common = {
  regsPerSm: 65536,
  maxRegsPerThread: 255,
  maxThreadsPerBlock: 1024,
  smemDefaultKb: 48,
  warp: 32,
  schedulers: 4,
  regAllocGranularityPerWarp: 256,
} as const;

export const GPU_TABLE: Record<string, GpuSpec> = {
  A100: { ...common, vramGb: 40, name: 'A100', cc: '8.0', class: 'datacenter', sms: 108, maxThreadsPerSm: 2048, maxWarpsPerSm: 64, maxBlocksPerSm: 32, smemPerSmKb: 164, smemPerBlockOptinKb: 163, l1Kb: 192, l2Mb: 40, l2SetAsideMaxMb: 30, bwGbs: 1555, fp32Tflops: 19.5, fp64TflopsDoc: 19.5, fp64Fp32RatioDoc: '1:1' },
  H100: { ...common, vramGb: 80, name: 'H100', cc: '9.0', class: 'datacenter', sms: 132, maxThreadsPerSm: 2048, maxWarpsPerSm: 64, maxBlocksPerSm: 32, smemPerSmKb: 228, smemPerBlockOptinKb: 227, l1Kb: 256, l2Mb: 50, l2SetAsideMaxMb: 37.5, bwGbs: 3350, fp32Tflops: 67, fp64TflopsDoc: 33.5, fp64Fp32RatioDoc: '1:2' },
  'RTX 3090': { ...common, vramGb: 24, name: 'RTX 3090', cc: '8.6', class: 'consumer', sms: 82, maxThreadsPerSm: 1536, maxWarpsPerSm: 48, maxBlocksPerSm: 16, smemPerSmKb: 100, smemPerBlockOptinKb: 99, l1Kb: 128, l2Mb: 6, l2SetAsideMaxMb: 4.5, bwGbs: 936, fp32Tflops: 35.6, fp64TflopsDoc: 0.6, fp64Fp32RatioDoc: '1:64' },
  'RTX 4090': { ...common, vramGb: 24, name: 'RTX 4090', cc: '8.9', class: 'consumer', sms: 128, maxThreadsPerSm: 1536, maxWarpsPerSm: 48, maxBlocksPerSm: 24, smemPerSmKb: 100, smemPerBlockOptinKb: 99, l1Kb: 128, l2Mb: 72, l2SetAsideMaxMb: 54, bwGbs: 1008, fp32Tflops: 82.6, fp64TflopsDoc: 1.3, fp64Fp32RatioDoc: '1:64' },
};

export const DEFAULT_TARGETS = ['A100', 'H100', 'RTX 3090', 'RTX 4090'];

/** Accepts "RTX 4090", "rtx4090", "rtx-4090", "h100". */
export function lookupGpu(name: string): GpuSpec | undefined {
  const key = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  return Object.values(GPU_TABLE).find((g) => g.name.toLowerCase().replace(/[^a-z0-9]/g, '') === key);
}

/**
 * Target-GPU reference data (catalog §5.1, from seed 003 §0, §3.1, §4.2, §4.3). Checks read
 * hardware limits from the configured targets only, and name the GPU whose limit is crossed.
 *
 * Two kinds of figure, kept apart:
 * - per compute capability (ARCH_LIMITS): what the occupancy model and the shared-memory rules use.
 *   Sources: the CUDA C++ Programming Guide, "Compute Capabilities" / "Technical Specifications per
 *   Compute Capability" table (blocks, warps, threads, registers, shared memory per SM and per block),
 *   and the CUDA 13.0 toolkit's `cuda_occupancy.h` (allocation granularities, register sub-partitions,
 *   the shared-memory carveout sizes the driver picks from, the per-cc block caps). The cc 9.0 row is
 *   also checked against the runtime on an H200 (test/data/occupancy-h200.tsv, h200-device.json).
 * - per product (GPU_TABLE): SM count, memory, L2, bandwidth and throughput from NVIDIA's product
 *   pages / datasheets; each row names its source and the variant it assumes.
 */
export interface GpuSpec {
  name: string;
  cc: string;
  class: 'datacenter' | 'consumer' | 'embedded';
  sms: number;
  regsPerSm: number;
  /** Registers one block may use (cudaDevAttrMaxRegistersPerBlock): bounds the threads of a high-register kernel. */
  regsPerBlock: number;
  maxRegsPerThread: number;
  maxThreadsPerSm: number;
  maxWarpsPerSm: number;
  maxBlocksPerSm: number;
  maxThreadsPerBlock: number;
  smemPerSmKb: number;
  smemPerBlockOptinKb: number;
  smemDefaultKb: number;
  /** Shared memory the driver reserves for every resident block (cudaDevAttrReservedSharedMemoryPerBlock). */
  reservedSmemPerBlockBytes: number;
  /** A block's shared memory (static + dynamic + reserved) is allocated in units of this many bytes. */
  smemAllocGranularityBytes: number;
  /** Shared-memory carveouts (KB per SM) the driver picks from, ascending; the last equals smemPerSmKb. */
  smemCarveoutsKb: readonly number[];
  l1Kb: number;
  l2Mb: number;
  /** 75 % of L2 (catalog §6 I-13), or the measured persistingL2CacheMaxSize; 0 where cc < 8.0 has no persisting L2. */
  l2SetAsideMaxMb: number;
  bwGbs: number;
  fp32Tflops: number;
  /** As the seed states it; see catalog §6 I-01 before relying on it. */
  fp64TflopsDoc: number;
  fp64Fp32RatioDoc: string;
  warp: number;
  schedulers: number;
  /** Registers are allocated per warp in units of this many (003 §3.4, §8.6; cuda_occupancy.h). */
  regAllocGranularityPerWarp: number;
  /** The register file is split over this many SM sub-partitions; each holds whole warps (cuda_occupancy.h). */
  regSubPartitions: number;
  /** Device memory in GiB (catalog §5.1); A100 ships as 40 and 80 GB: the smaller part bounds a portable pool size. */
  vramGb: number;
  /** Other spellings `targets` accepts for this GPU ("A10G", "H200 SXM"). */
  aliases?: readonly string[];
  /** True for a GPU defined in the config's `gpus:` section. */
  custom?: boolean;
}

/** The fields that follow from the compute capability alone. */
export type ArchLimits = Pick<
  GpuSpec,
  | 'regsPerSm' | 'regsPerBlock' | 'maxRegsPerThread' | 'maxThreadsPerSm' | 'maxWarpsPerSm' | 'maxBlocksPerSm'
  | 'maxThreadsPerBlock' | 'smemPerSmKb' | 'smemPerBlockOptinKb' | 'smemDefaultKb' | 'reservedSmemPerBlockBytes'
  | 'smemAllocGranularityBytes' | 'smemCarveoutsKb' | 'l1Kb' | 'warp' | 'schedulers' | 'regAllocGranularityPerWarp'
  | 'regSubPartitions'
>;

/** Every cc since Volta: 64 K registers per SM and per block, 255 per thread, 1,024 threads per block, 48 KB default smem per block. */
const common = {
  regsPerSm: 65536,
  regsPerBlock: 65536,
  maxRegsPerThread: 255,
  maxThreadsPerBlock: 1024,
  smemDefaultKb: 48,
  warp: 32,
  schedulers: 4,
  regAllocGranularityPerWarp: 256,
  regSubPartitions: 4,
} as const;

/** Volta/Turing: no per-block reservation, 256-byte allocation unit (cuda_occupancy.h, cudaOccSMemAllocationGranularity). */
const volta = { ...common, reservedSmemPerBlockBytes: 0, smemAllocGranularityBytes: 256 } as const;
/** Ampere and later: 1 KB reserved per block (CUDA C++ Programming Guide, "Shared Memory" per cc 8.x/9.x/10.x/12.x), 128-byte unit. */
const ampere = { ...common, reservedSmemPerBlockBytes: 1024, smemAllocGranularityBytes: 128 } as const;

const CARVE_96 = [0, 8, 16, 32, 64, 96];
const CARVE_100 = [0, 8, 16, 32, 64, 100];
const CARVE_164 = [0, 8, 16, 32, 64, 100, 132, 164];
const CARVE_228 = [0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

/**
 * Per-compute-capability limits. Programming Guide table columns: resident blocks / warps / threads
 * per SM, shared memory per SM and per block (opt-in), unified L1 + shared memory per SM;
 * `cuda_occupancy.h` (CUDA 13.0): block caps (cudaOccMaxBlocksPerMultiprocessor), carveouts
 * (cudaOccAlignUpShmemSizeVoltaPlus), granularities. Opt-in per block = per SM − 1 KB on cc ≥ 8.0.
 */
export const ARCH_LIMITS: Record<string, ArchLimits> = {
  // Volta (V100): 96 KB of a 128 KB L1; opt-in 96 KB per block; no reservation.
  '7.0': { ...volta, maxBlocksPerSm: 32, maxWarpsPerSm: 64, maxThreadsPerSm: 2048, smemPerSmKb: 96, smemPerBlockOptinKb: 96, smemCarveoutsKb: CARVE_96, l1Kb: 128 },
  // Turing (T4, RTX 20xx): 16 blocks, 32 warps, 64 KB of a 96 KB L1; carveouts 32 or 64 KB only.
  '7.5': { ...volta, maxBlocksPerSm: 16, maxWarpsPerSm: 32, maxThreadsPerSm: 1024, smemPerSmKb: 64, smemPerBlockOptinKb: 64, smemCarveoutsKb: [32, 64], l1Kb: 96 },
  // GA100 (A100).
  '8.0': { ...ampere, maxBlocksPerSm: 32, maxWarpsPerSm: 64, maxThreadsPerSm: 2048, smemPerSmKb: 164, smemPerBlockOptinKb: 163, smemCarveoutsKb: CARVE_164, l1Kb: 192 },
  // GA10x (A10, A40, RTX 30xx, RTX A6000).
  '8.6': { ...ampere, maxBlocksPerSm: 16, maxWarpsPerSm: 48, maxThreadsPerSm: 1536, smemPerSmKb: 100, smemPerBlockOptinKb: 99, smemCarveoutsKb: CARVE_100, l1Kb: 128 },
  // GA10B (Jetson Orin): GA10x warp/block limits with GA100's shared memory and carveouts.
  '8.7': { ...ampere, maxBlocksPerSm: 16, maxWarpsPerSm: 48, maxThreadsPerSm: 1536, smemPerSmKb: 164, smemPerBlockOptinKb: 163, smemCarveoutsKb: CARVE_164, l1Kb: 192 },
  // Ada (L4, L40S, RTX 40xx, RTX 6000 Ada): 24 blocks.
  '8.9': { ...ampere, maxBlocksPerSm: 24, maxWarpsPerSm: 48, maxThreadsPerSm: 1536, smemPerSmKb: 100, smemPerBlockOptinKb: 99, smemCarveoutsKb: CARVE_100, l1Kb: 128 },
  // Hopper (H100, H200); checked against the runtime on an H200.
  '9.0': { ...ampere, maxBlocksPerSm: 32, maxWarpsPerSm: 64, maxThreadsPerSm: 2048, smemPerSmKb: 228, smemPerBlockOptinKb: 227, smemCarveoutsKb: CARVE_228, l1Kb: 256 },
  // Blackwell datacenter (B200, GB200).
  '10.0': { ...ampere, maxBlocksPerSm: 32, maxWarpsPerSm: 64, maxThreadsPerSm: 2048, smemPerSmKb: 228, smemPerBlockOptinKb: 227, smemCarveoutsKb: CARVE_228, l1Kb: 256 },
  // Blackwell Ultra (B300, GB300): cuda_occupancy.h treats 10.3 as 10.0.
  '10.3': { ...ampere, maxBlocksPerSm: 32, maxWarpsPerSm: 64, maxThreadsPerSm: 2048, smemPerSmKb: 228, smemPerBlockOptinKb: 227, smemCarveoutsKb: CARVE_228, l1Kb: 256 },
  // Blackwell consumer / workstation (RTX 50xx, RTX PRO 6000 Blackwell): 24 blocks, 48 warps, 100 KB.
  '12.0': { ...ampere, maxBlocksPerSm: 24, maxWarpsPerSm: 48, maxThreadsPerSm: 1536, smemPerSmKb: 100, smemPerBlockOptinKb: 99, smemCarveoutsKb: CARVE_100, l1Kb: 128 },
  // GB10 (DGX Spark): cuda_occupancy.h gives 12.1 the 12.0 carveouts and block cap; warps/threads assumed equal to 12.0 (unsure).
  '12.1': { ...ampere, maxBlocksPerSm: 24, maxWarpsPerSm: 48, maxThreadsPerSm: 1536, smemPerSmKb: 100, smemPerBlockOptinKb: 99, smemCarveoutsKb: CARVE_100, l1Kb: 128 },
};

export const KNOWN_CCS = Object.keys(ARCH_LIMITS);

function gpu(cc: string, p: Omit<GpuSpec, keyof ArchLimits | 'cc'> & Partial<ArchLimits>): GpuSpec {
  const arch = ARCH_LIMITS[cc];
  if (!arch) throw new Error(`no architecture limits for cc ${cc}`);
  return { ...arch, cc, ...p };
}

/** 75 % of L2 may be set aside for persisting accesses (catalog §6 I-13), cc ≥ 8.0 only. */
const setAside = (l2Mb: number): number => l2Mb * 0.75;

export const GPU_TABLE: Record<string, GpuSpec> = {
  // --- the seed's four (003 §0); figures unchanged ---
  // A100 SXM4 40 GB (80 GB part: 2,039 GB/s, 80 GB); NVIDIA A100 datasheet.
  A100: gpu('8.0', { vramGb: 40, name: 'A100', class: 'datacenter', sms: 108, l2Mb: 40, l2SetAsideMaxMb: 30, bwGbs: 1555, fp32Tflops: 19.5, fp64TflopsDoc: 19.5, fp64Fp32RatioDoc: '1:1' }),
  // H100 SXM5 80 GB (the PCIe card has 114 SMs, 2,000 GB/s); NVIDIA H100 datasheet.
  H100: gpu('9.0', { vramGb: 80, name: 'H100', class: 'datacenter', sms: 132, l2Mb: 50, l2SetAsideMaxMb: 37.5, bwGbs: 3350, fp32Tflops: 67, fp64TflopsDoc: 33.5, fp64Fp32RatioDoc: '1:2', aliases: ['H100 SXM', 'H100 SXM5'] }),
  // GeForce RTX 3090 (GA102); NVIDIA Ampere GA102 whitepaper.
  'RTX 3090': gpu('8.6', { vramGb: 24, name: 'RTX 3090', class: 'consumer', sms: 82, l2Mb: 6, l2SetAsideMaxMb: 4.5, bwGbs: 936, fp32Tflops: 35.6, fp64TflopsDoc: 0.6, fp64Fp32RatioDoc: '1:64' }),
  // GeForce RTX 4090 (AD102); NVIDIA Ada Lovelace whitepaper.
  'RTX 4090': gpu('8.9', { vramGb: 24, name: 'RTX 4090', class: 'consumer', sms: 128, l2Mb: 72, l2SetAsideMaxMb: 54, bwGbs: 1008, fp32Tflops: 82.6, fp64TflopsDoc: 1.3, fp64Fp32RatioDoc: '1:64' }),

  // --- Volta / Turing: no persisting-L2 window (cudaLimitPersistingL2CacheSize needs cc 8.0) ---
  // Tesla V100 SXM2 16 GB (32 GB part: same SMs and bandwidth; PCIe: 14 / 7 TFLOPS); NVIDIA V100 datasheet.
  V100: gpu('7.0', { vramGb: 16, name: 'V100', class: 'datacenter', sms: 80, l2Mb: 6, l2SetAsideMaxMb: 0, bwGbs: 900, fp32Tflops: 15.7, fp64TflopsDoc: 7.8, fp64Fp32RatioDoc: '1:2' }),
  // Tesla T4 16 GB; NVIDIA T4 datasheet (fp64 1:32 from the Turing whitepaper).
  T4: gpu('7.5', { vramGb: 16, name: 'T4', class: 'datacenter', sms: 40, l2Mb: 4, l2SetAsideMaxMb: 0, bwGbs: 320, fp32Tflops: 8.1, fp64TflopsDoc: 0.25, fp64Fp32RatioDoc: '1:32' }),

  // --- Ampere GA10x (cc 8.6) ---
  // NVIDIA A10 24 GB; A10 datasheet. AWS's A10G is a different GA102 configuration (own row below).
  A10: gpu('8.6', { vramGb: 24, name: 'A10', class: 'datacenter', sms: 72, l2Mb: 6, l2SetAsideMaxMb: setAside(6), bwGbs: 600, fp32Tflops: 31.2, fp64TflopsDoc: 0.49, fp64Fp32RatioDoc: '1:64' }),
  // AWS A10G (g5 instances): 80 SMs as deviceQuery reports them, 24 GB, 600 GB/s; fp32 from 80 SMs × 128 lanes at
  // ~1.7 GHz boost. Not on an NVIDIA datasheet: SM count and fp32 are unsure.
  A10G: gpu('8.6', { vramGb: 24, name: 'A10G', class: 'datacenter', sms: 80, l2Mb: 6, l2SetAsideMaxMb: setAside(6), bwGbs: 600, fp32Tflops: 35, fp64TflopsDoc: 0.55, fp64Fp32RatioDoc: '1:64' }),
  // NVIDIA A40 48 GB; A40 datasheet.
  A40: gpu('8.6', { vramGb: 48, name: 'A40', class: 'datacenter', sms: 84, l2Mb: 6, l2SetAsideMaxMb: setAside(6), bwGbs: 696, fp32Tflops: 37.4, fp64TflopsDoc: 0.58, fp64Fp32RatioDoc: '1:64' }),

  // --- Ampere GA10B (cc 8.7) ---
  // Jetson AGX Orin 64 GB (2,048 CUDA cores = 16 SMs; the 32 GB module has 14 SMs); LPDDR5 shared with the CPU;
  // Jetson AGX Orin datasheet. fp64 rate is not on the datasheet: 1:64 as on GA10x is an assumption (unsure).
  'Jetson AGX Orin': gpu('8.7', { vramGb: 64, name: 'Jetson AGX Orin', class: 'embedded', sms: 16, l2Mb: 4, l2SetAsideMaxMb: setAside(4), bwGbs: 204.8, fp32Tflops: 5.3, fp64TflopsDoc: 0.08, fp64Fp32RatioDoc: '1:64', aliases: ['AGX Orin', 'Jetson Orin', 'Orin'] }),

  // --- Ada (cc 8.9) ---
  // NVIDIA L4 24 GB; L4 datasheet (AD104, 58 SMs).
  L4: gpu('8.9', { vramGb: 24, name: 'L4', class: 'datacenter', sms: 58, l2Mb: 48, l2SetAsideMaxMb: setAside(48), bwGbs: 300, fp32Tflops: 30.3, fp64TflopsDoc: 0.47, fp64Fp32RatioDoc: '1:64' }),
  // NVIDIA L40S 48 GB; L40S datasheet (AD102, 142 SMs).
  L40S: gpu('8.9', { vramGb: 48, name: 'L40S', class: 'datacenter', sms: 142, l2Mb: 96, l2SetAsideMaxMb: setAside(96), bwGbs: 864, fp32Tflops: 91.6, fp64TflopsDoc: 1.4, fp64Fp32RatioDoc: '1:64' }),
  // NVIDIA RTX 6000 Ada Generation 48 GB; product page (AD102, 142 SMs, 18,176 CUDA cores).
  'RTX 6000 Ada': gpu('8.9', { vramGb: 48, name: 'RTX 6000 Ada', class: 'consumer', sms: 142, l2Mb: 96, l2SetAsideMaxMb: setAside(96), bwGbs: 960, fp32Tflops: 91.1, fp64TflopsDoc: 1.4, fp64Fp32RatioDoc: '1:64', aliases: ['RTX 6000 Ada Generation'] }),

  // --- Hopper (cc 9.0) ---
  // H200 SXM 141 GB; H200 datasheet for bandwidth and throughput (NVL: 30 / 60 TFLOPS fp64 / fp32, same memory);
  // SMs, L2 (60 MiB) and the persisting-L2 maximum (37.5 MiB, not 75 %) as the runtime reports them on the
  // device machine's H200 (test/data/h200-device.json; 139.8 GiB of the 141 GB usable).
  H200: gpu('9.0', { vramGb: 141, name: 'H200', class: 'datacenter', sms: 132, l2Mb: 60, l2SetAsideMaxMb: 37.5, bwGbs: 4800, fp32Tflops: 67, fp64TflopsDoc: 34, fp64Fp32RatioDoc: '1:2', aliases: ['H200 SXM'] }),

  // --- Blackwell datacenter (cc 10.0) ---
  // HGX B200 180 GB per GPU; HGX/DGX B200 datasheet (8 TB/s, fp64 40 TFLOPS as DGX B200 states it per GPU).
  // 148 SMs and a 126 MB L2 as the runtime reports them elsewhere; fp32 (80 TFLOPS) is unsure.
  B200: gpu('10.0', { vramGb: 180, name: 'B200', class: 'datacenter', sms: 148, l2Mb: 126, l2SetAsideMaxMb: setAside(126), bwGbs: 8000, fp32Tflops: 80, fp64TflopsDoc: 40, fp64Fp32RatioDoc: '1:2', aliases: ['HGX B200', 'DGX B200'] }),
  // GB200 (the Blackwell GPU of a GB200 NVL72 / Superchip): where it differs from B200: 186 GB HBM3e and
  // fp64 45 TFLOPS per GPU (GB200 NVL72 datasheet, totals ÷ 72); fp32 90 TFLOPS and the SM count (148) are unsure.
  GB200: gpu('10.0', { vramGb: 186, name: 'GB200', class: 'datacenter', sms: 148, l2Mb: 126, l2SetAsideMaxMb: setAside(126), bwGbs: 8000, fp32Tflops: 90, fp64TflopsDoc: 45, fp64Fp32RatioDoc: '1:2' }),

  // --- Blackwell consumer (cc 12.0) ---
  // GeForce RTX 5090 32 GB GDDR7; product page / GB202 specifications (170 SMs, 96 MB L2, 1,792 GB/s, 104.8 TFLOPS).
  'RTX 5090': gpu('12.0', { vramGb: 32, name: 'RTX 5090', class: 'consumer', sms: 170, l2Mb: 96, l2SetAsideMaxMb: setAside(96), bwGbs: 1792, fp32Tflops: 104.8, fp64TflopsDoc: 1.6, fp64Fp32RatioDoc: '1:64' }),
};

export const DEFAULT_TARGETS = ['A100', 'H100', 'RTX 3090', 'RTX 4090'];

const norm = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/** Accepts "RTX 4090", "rtx4090", "rtx-4090", "h100", and each GPU's aliases ("A10G", "H200 SXM"). */
export function lookupGpu(name: string, table: Record<string, GpuSpec> = GPU_TABLE): GpuSpec | undefined {
  const key = norm(name);
  return Object.values(table).find((g) => norm(g.name) === key || (g.aliases ?? []).some((a) => norm(a) === key));
}

/** The names `targets` accepts, for error messages: each GPU's name, with its aliases in parentheses. */
export function knownGpuNames(table: Record<string, GpuSpec> = GPU_TABLE): string {
  return Object.values(table)
    .map((g) => (g.aliases?.length ? `${g.name} (${g.aliases.join(', ')})` : g.name))
    .join(', ');
}

/** Fields a custom GPU must or may give; everything else defaults from its cc's ARCH_LIMITS. */
export interface CustomGpuInput extends Partial<Omit<GpuSpec, 'name' | 'cc' | 'custom' | 'aliases'>> {
  cc: string;
  sms: number;
}

/**
 * A GPU from the config's `gpus:` section: per-architecture limits from its cc, product figures
 * (L2, bandwidth, throughput, memory) from the given fields or 0 where unknown.
 */
export function customGpu(name: string, input: CustomGpuInput): GpuSpec {
  const arch = ARCH_LIMITS[input.cc];
  if (!arch) throw new Error(`unknown compute capability "${input.cc}" (known: ${KNOWN_CCS.join(', ')})`);
  const l2Mb = input.l2Mb ?? 0;
  const cc8 = Number(input.cc) >= 8;
  const base: GpuSpec = {
    ...arch,
    name,
    cc: input.cc,
    class: 'datacenter',
    sms: input.sms,
    l2Mb,
    l2SetAsideMaxMb: cc8 ? setAside(l2Mb) : 0,
    bwGbs: 0,
    fp32Tflops: 0,
    fp64TflopsDoc: 0,
    fp64Fp32RatioDoc: '',
    vramGb: 0,
    custom: true,
  };
  const out: GpuSpec = { ...base, ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) };
  // A custom smem per SM that no carveout list covers gets its own size as the only carveout above the cc's smaller ones.
  if (input.smemPerSmKb !== undefined && input.smemCarveoutsKb === undefined) {
    out.smemCarveoutsKb = [...arch.smemCarveoutsKb.filter((k) => k < input.smemPerSmKb!), input.smemPerSmKb];
  }
  if (input.maxWarpsPerSm !== undefined && input.maxThreadsPerSm === undefined) out.maxThreadsPerSm = input.maxWarpsPerSm * out.warp;
  if (input.maxThreadsPerSm !== undefined && input.maxWarpsPerSm === undefined) out.maxWarpsPerSm = Math.floor(input.maxThreadsPerSm / out.warp);
  return out;
}

/**
 * Costs measured on an NVIDIA H200 (SXM, cc 9.0, driver 580.159.04 / CUDA 13.0, 2026-12-01) by the
 * programs of bench/gpu/ (`bash bench/gpu/run_all.sh`); the figures, their method and the seed's
 * figures beside them are in bench/gpu/RESULTS.md. Messages quote these and name the GPU: on other
 * GPUs, drivers and PCIe generations the figures differ. Medians of 5–9 repeats.
 */
export const MEASURED_ON = 'H200';

export const COSTS = {
  /** Kernel launch, back to back, per launch (empty kernel); seed: 2.5–5 µs (003 §3.5, §10). */
  launchUs: 4.2,
  /** Launch + cudaStreamSynchronize round trip (empty kernel). */
  launchSyncRoundTripUs: 9.6,
  /** Time a redundant cudaDeviceSynchronize adds between two same-stream launches. */
  redundantDeviceSyncUs: 7.7,
  /** The same with cudaStreamSynchronize. */
  redundantStreamSyncUs: 7.9,
  /** CuPy: dev.synchronize() between two elementwise ops, added per sync. */
  cupySyncUs: 9.8,
  /** cudaMemcpy of 4 B device→host, pageable, idle device. */
  d2hScalarUs: 7.7,
  /** A 4 B read after each launch in a loop, minus the launches alone: the pipeline stall per read. */
  readStallUs: 14.8,
  /** CuPy: 1,000 × float(x[i]) against x[:1000].get() once (ms). */
  cupyPerElementReads1000Ms: 16.9,
  cupyBatchedRead1000Ms: 0.17,
  /** 1,000 × cudaMemcpy of 4 B against one of 4,000 B. */
  perElementMemcpy1000Ms: 7.31,
  batchedMemcpy4000BUs: 7.5,
  /** cudaMalloc + cudaFree, 1 KiB … 256 MiB (µs); seed: ~100–1,000 µs (003 §1.2). */
  mallocFreeUs: { min: 80, max: 166 },
  /** cudaMallocAsync + cudaFreeAsync from a pool that keeps its memory (µs); seed: < 1 µs. */
  poolAllocFreeUs: { min: 0.7, max: 1.3 },
  /** Raw : pool ratio over the sizes measured; seed: ~1,000×. */
  mallocPoolRatio: { min: 70, max: 240 },
  /** nvrtcCompileProgram of a one-line kernel to cubin, cold (ms); seed: 20–400 ms per unit (003 §6, §10). */
  nvrtcColdMs: 14.4,
  /** CuPy: a new source per launch (a real NVRTC compile each time), per launch (ms). */
  rawKernelNewSourceMs: 29.8,
  /** fp64 FMA time / fp32 FMA time, FMA-bound (the seed's 1:2 would be 2×). */
  fp64Fp32TimeRatio: 1.76,
  /** Transpose through tile[32][32] (32-way conflicts on the column read) vs tile[32][33]: times slower; seed: "32×". */
  bankConflictSlowdown: 2.2,
  /** Copy with loads strided by 32 floats vs coalesced: times slower. */
  uncoalescedSlowdown: 4.4,
} as const;

const fmt = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 2 });

/** "4.2 µs per launch on H200". */
export const LAUNCH = `${fmt(COSTS.launchUs)} µs per launch on ${MEASURED_ON}`;
/** "80–166 µs per cudaMalloc + cudaFree on H200, against 0.7–1.3 µs from a pool (70–240×)". */
export const MALLOC_VS_POOL = `${COSTS.mallocFreeUs.min}–${COSTS.mallocFreeUs.max} µs per cudaMalloc + cudaFree on ${MEASURED_ON}, against ${COSTS.poolAllocFreeUs.min}–${COSTS.poolAllocFreeUs.max} µs from a pool (${COSTS.mallocPoolRatio.min}–${COSTS.mallocPoolRatio.max}×)`;
/** "14.4 ms for a one-line kernel on H200, more for real units". */
export const NVRTC_COLD = `${fmt(COSTS.nvrtcColdMs)} ms for a one-line kernel on ${MEASURED_ON}, more for real units`;
/** "a 4 B read after a launch stalls the pipeline 14.8 µs on H200". */
export const READ_STALL = `${fmt(COSTS.readStallUs)} µs of pipeline stall per read after a launch on ${MEASURED_ON}`;
/** `n` launches at the measured launch cost, e.g. "≈ 4,200 µs". */
export function launchesCost(n: number): string {
  const us = n * COSTS.launchUs;
  return us >= 10_000 ? `≈ ${fmt(Math.round(us / 100) / 10)} ms` : `≈ ${fmt(Math.round(us))} µs`;
}
/** "80–166 µs on H200 (0.7–1.3 µs from a pool)". */
export const MALLOC_SHORT = `${COSTS.mallocFreeUs.min}–${COSTS.mallocFreeUs.max} µs on ${MEASURED_ON} (${COSTS.poolAllocFreeUs.min}–${COSTS.poolAllocFreeUs.max} µs from a pool)`;
/** "80–166 µs on H200". */
export const MALLOC_RAW = `${COSTS.mallocFreeUs.min}–${COSTS.mallocFreeUs.max} µs on ${MEASURED_ON}`;
/** "0.7–1.3 µs on H200". */
export const POOL = `${COSTS.poolAllocFreeUs.min}–${COSTS.poolAllocFreeUs.max} µs on ${MEASURED_ON}`;
/** "7.7 µs added per redundant sync between same-stream launches on H200". */
export const REDUNDANT_SYNC = `${fmt(COSTS.redundantDeviceSyncUs)} µs added per redundant sync between same-stream launches on ${MEASURED_ON}`;
/** "1,000 float(x[i]) reads took 16.9 ms on H200, one x[:1000].get() 0.17 ms". */
export const CUPY_READS = `1,000 float(x[i]) reads took ${fmt(COSTS.cupyPerElementReads1000Ms)} ms on ${MEASURED_ON}, one x[:1000].get() ${fmt(COSTS.cupyBatchedRead1000Ms)} ms`;
/** "a 32-way-conflicted tile[32][32] transpose ran 2.2× slower than the padded tile[32][33] on H200". */
export const BANK = `a 32-way-conflicted tile[32][32] transpose ran ${fmt(COSTS.bankConflictSlowdown)}× slower than the padded tile[32][33] on ${MEASURED_ON}`;
/** "loads strided by 32 floats copied 4.4× slower than coalesced ones on H200". */
export const UNCOALESCED = `loads strided by 32 floats copied ${fmt(COSTS.uncoalescedSlowdown)}× slower than coalesced ones on ${MEASURED_ON}`;
/** "29.8 ms per call on H200". */
export const RAWKERNEL_NEW = `${fmt(COSTS.rawKernelNewSourceMs)} ms per call on ${MEASURED_ON}`;

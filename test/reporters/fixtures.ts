import { parseUnifiedDiff } from '../../src/diff/model.js';
import type { FileReport, Finding, ReviewResult } from '../../src/core/types.js';
import type { ReportInput } from '../../src/reporters/types.js';

/** A pull request that moves a __syncthreads() into a branch and a copy into a loop, and adds a CuPy helper. */
export const DIFF = `diff --git a/src/kernels/reduce.cu b/src/kernels/reduce.cu
index da4063e..e7a25c8 100644
--- a/src/kernels/reduce.cu
+++ b/src/kernels/reduce.cu
@@ -11,6 +11,6 @@ __global__ void reduce(const float* in, float* out, int n) {
     if (tid < s) {
       buf[tid] += buf[tid + s];
+      __syncthreads();
     }
-    __syncthreads();
   }
   if (tid == 0) out[blockIdx.x] = buf[0];
@@ -21,7 +21,8 @@ void run(const float* h_in, float* h_out, int n) {
   cudaMalloc(&d_in, n * sizeof(float));
   cudaMalloc(&d_out, sizeof(float));
-  cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
   for (int k = 0; k < 100; ++k) {
+    cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
     reduce<<<1, 256, 256 * sizeof(float)>>>(d_in, d_out, n);
+    cudaDeviceSynchronize();
   }
   cudaMemcpy(h_out, d_out, sizeof(float), cudaMemcpyDeviceToHost);
diff --git a/python/ops.py b/python/ops.py
new file mode 100644
index 0000000..c2d60c0
--- /dev/null
+++ b/python/ops.py
@@ -0,0 +1,8 @@
+import cupy as cp
+
+
+def total(xs):
+    acc = 0.0
+    for x in xs:
+        acc += float(x.get())
+    return acc
`;

export const REDUCE_CU = `#include <cuda_runtime.h>
#include <cstdio>

__global__ void reduce(const float* in, float* out, int n) {
  extern __shared__ float buf[];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[tid] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      buf[tid] += buf[tid + s];
      __syncthreads();
    }
  }
  if (tid == 0) out[blockIdx.x] = buf[0];
}

void run(const float* h_in, float* h_out, int n) {
  float *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(float));
  cudaMalloc(&d_out, sizeof(float));
  for (int k = 0; k < 100; ++k) {
    cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
    reduce<<<1, 256, 256 * sizeof(float)>>>(d_in, d_out, n);
    cudaDeviceSynchronize();
  }
  cudaMemcpy(h_out, d_out, sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d_in);
  cudaFree(d_out);
}
`;

export const OPS_PY = `import cupy as cp


def total(xs):
    acc = 0.0
    for x in xs:
        acc += float(x.get())
    return acc
`;

const DOCS = 'https://github.com/gpu-review/gpu-review/blob/main/checks';

export function finding(over: Partial<Finding> & Pick<Finding, 'ruleId' | 'line'>): Finding {
  const line = over.line;
  return {
    pass: 1,
    severity: 'medium',
    confidence: 'high',
    kind: 'performance',
    messageId: 'default',
    message: `problem at line ${line}`,
    citation: '003 §8.2',
    why: 'Each transfer waits for the device and crosses PCIe.',
    docUrl: `${DOCS}/${over.ruleId}/README.md`,
    path: 'src/kernels/reduce.cu',
    language: 'cuda',
    endLine: line,
    column: 1,
    endColumn: 2,
    fingerprint: `fp-${over.ruleId.replace(/\W/g, '')}-${line}`,
    ...over,
  };
}

/** Critical: a barrier that only some threads reach. */
export const DIVERGENT_SYNC = finding({
  ruleId: 'sync/syncthreads-in-branch',
  pass: 2,
  severity: 'critical',
  kind: 'correctness',
  message: '`__syncthreads()` inside `if (tid < s)` is reached by only some threads of the block',
  citation: 'CUDA C++ Programming Guide §7.6',
  why: 'Threads that skip the branch never arrive at the barrier, so the block hangs or reads stale shared memory.',
  line: 13,
  column: 7,
  endColumn: 23,
  fix: { kind: 'judgment', description: 'Move the barrier after the `if`, where every thread reaches it.' },
  onAddedLine: true,
  inHunk: true,
  fingerprint: 'a1b2c3d4e5f6a7b8c9d0',
});

/** High with a safe one-line fix. */
export const COPY_IN_LOOP = finding({
  ruleId: 'host-device/memcpy-in-loop',
  pass: 1,
  severity: 'high',
  message: '`cudaMemcpy(d_in, h_in, …)` copies the same input on every iteration of the loop',
  line: 24,
  column: 5,
  endColumn: 72,
  fix: {
    kind: 'safe',
    description: 'Copy asynchronously on the stream so the copy overlaps the previous kernel.',
    replace: {
      startLine: 24,
      endLine: 24,
      text: '    cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, 0);\n',
    },
  },
  onAddedLine: true,
  inHunk: true,
  suggestionFits: true,
  fingerprint: 'b1b2c3d4e5f6a7b8c9d0',
  also: ['host-device/sync-copy-in-loop'],
});

/** Multi-line anchor inside one hunk (the whole loop). */
export const SYNC_IN_LOOP = finding({
  ruleId: 'sync/device-sync-in-loop',
  pass: 2,
  severity: 'medium-high',
  message: '`cudaDeviceSynchronize()` in the launch loop serialises 100 launches',
  line: 23,
  endLine: 27,
  column: 3,
  endColumn: 4,
  onAddedLine: false,
  inHunk: true,
  fingerprint: 'c1b2c3d4e5f6a7b8c9d0',
});

/** On an unchanged line outside every hunk: must go to the body. */
export const OUTSIDE = finding({
  ruleId: 'kernel/uncoalesced-load',
  pass: 3,
  severity: 'medium',
  message: '`in[i]` is loaded once per thread without bounds-friendly padding',
  line: 8,
  column: 22,
  endColumn: 27,
  onAddedLine: false,
  inHunk: false,
  fingerprint: 'd1b2c3d4e5f6a7b8c9d0',
});

/** Python finding whose safe fix spans two lines other than its own anchor line alone. */
export const GET_IN_LOOP = finding({
  ruleId: 'host-device/get-in-loop',
  pass: 1,
  severity: 'high',
  confidence: 'medium',
  path: 'python/ops.py',
  language: 'python',
  message: '`x.get()` copies each element to the host inside the loop',
  citation: '003 §4.1',
  line: 7,
  column: 22,
  endColumn: 29,
  fix: {
    kind: 'safe',
    description: 'Sum on the device and copy the result once.',
    replace: { startLine: 6, endLine: 7, text: '    for x in xs:\n        acc += float(cp.sum(x))\n' },
  },
  onAddedLine: true,
  inHunk: true,
  suggestionFits: true,
  fingerprint: 'e1b2c3d4e5f6a7b8c9d0',
});

export const FILES: FileReport[] = [
  {
    path: 'src/kernels/reduce.cu',
    language: 'cuda',
    parseCoverage: 0.9731,
    sources: [{ language: 'cuda', label: 'src/kernels/reduce.cu', parseCoverage: 0.9731, bytes: 987 }],
    findings: 4,
  },
  {
    path: 'python/ops.py',
    language: 'python',
    parseCoverage: 1,
    sources: [{ language: 'python', label: 'python/ops.py', parseCoverage: 1, bytes: 140 }],
    findings: 1,
  },
  { path: 'assets/logo.png', language: null, parseCoverage: 1, sources: [], skipped: 'binary file', findings: 0 },
];

export const ALL = [DIVERGENT_SYNC, COPY_IN_LOOP, SYNC_IN_LOOP, OUTSIDE, GET_IN_LOOP];

const FULL: Record<string, string[]> = {
  'src/kernels/reduce.cu': REDUCE_CU.split('\n').slice(0, -1),
  'python/ops.py': OPS_PY.split('\n').slice(0, -1),
};

export function makeInput(over: {
  findings?: Finding[];
  files?: FileReport[];
  errors?: ReviewResult['errors'];
  cap?: number;
  diffOnly?: boolean;
  failOn?: ReportInput['failOn'];
} = {}): ReportInput {
  const diff = parseUnifiedDiff(DIFF);
  return {
    result: { findings: over.findings ?? ALL, files: over.files ?? FILES, errors: over.errors ?? [] },
    diff,
    fileLines(path) {
      const full = FULL[path];
      if (!full) return undefined;
      if (!over.diffOnly) return full;
      // Diff-only mode: only the new-side lines that the hunks show are known.
      const file = diff.files.find((f) => f.path === path);
      return full.map((text, i) => (file?.commentable.has(i + 1) ? text : undefined));
    },
    inlineCommentCap: over.cap ?? 20,
    failOn: over.failOn ?? 'high',
    toolVersion: '0.1.0',
  };
}

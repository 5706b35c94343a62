import { warpsByRegisters } from '../analysis/occupancy.js';
import type { GpuSpec } from '../config/gpus.js';
import type { Finding } from '../core/types.js';
import { archOf } from './nvcc.js';
import type { CompileReport, KernelEvidence } from './evidence.js';
import { spillBytes } from './spills.js';

/**
 * Rules that reason about registers, spills and unrolling from the source text, and what the
 * compiler's figures say about their claim: `contradicts` → the finding is withdrawn (listed in the
 * report's `silenced`, never dropped unseen); otherwise the figures are added to its message.
 */
const JUDGES: Record<string, (ev: KernelEvidence, targets: readonly GpuSpec[]) => string | null> = {
  // The claim: registers cut occupancy. Refuted when every target keeps ≥ 50 % by registers, without spills.
  'kernel/register-pressure': (ev, targets) => {
    if (spillBytes(ev, 'head') > 0) return null;
    for (const g of targets) {
      const a = ev.arches.find((x) => x.arch === archOf(g.cc))?.head;
      if (!a || warpsByRegisters(a.registers, g) * 2 < g.maxWarpsPerSm) return null;
    }
    return `nvcc allocates ${regsText(ev)} registers/thread with no spills: at least 50 % occupancy by registers on every target`;
  },
  // The claim: an unbounded heavy kernel may take more registers than a large block can hold. At ≤ 64
  // registers even 1,024 threads fit the 64 K register file, so no bound would change the allocation.
  'kernel/missing-launch-bounds': (ev) => {
    const regs = ev.arches.map((a) => a.head?.registers ?? Infinity);
    if (!regs.length || Math.max(...regs) > 64 || spillBytes(ev, 'head') > 0) return null;
    return `nvcc allocates ${regsText(ev)} registers/thread: every block size up to 1,024 threads fits, a bound would change nothing`;
  },
  // The claim: the unroll costs registers and spills. Refuted when the compiler spills nothing and keeps no stack.
  'kernel/excessive-unroll': (ev) => {
    if (spillBytes(ev, 'head') > 0 || ev.arches.some((a) => (a.head?.stackFrame ?? 1) > 0)) return null;
    return `nvcc compiles it with ${regsText(ev)} registers/thread, no spills and no stack frame`;
  },
  'kernel/maxrregcount-no-occupancy-gain': () => null,
  'kernel/launch-bounds-overconstrained': () => null,
};

function regsText(ev: KernelEvidence): string {
  const r = [...new Set(ev.arches.map((a) => a.head?.registers).filter((x): x is number => x !== undefined))];
  return r.length <= 1 ? String(r[0] ?? '?') : `${Math.min(...r)}–${Math.max(...r)}`;
}

function kernelAt(report: CompileReport, f: Finding): KernelEvidence | null {
  return report.kernels.find((k) => k.path === f.path && k.line !== null && k.endLine !== null && f.line >= k.line && f.line <= k.endLine && k.arches.some((a) => a.head)) ?? null;
}

export function applyCompileEvidence(findings: Finding[], report: CompileReport, targets: readonly GpuSpec[]): Finding[] {
  const kept: Finding[] = [];
  for (const f of findings) {
    const judge = Object.hasOwn(JUDGES, f.ruleId) ? JUDGES[f.ruleId] : undefined;
    const ev = judge ? kernelAt(report, f) : null;
    if (!judge || !ev) {
      kept.push(f);
      continue;
    }
    const refuted = judge(ev, targets);
    if (refuted) {
      report.silenced.push({ ruleId: f.ruleId, path: f.path, line: f.line, reason: refuted });
      continue;
    }
    kept.push({ ...f, message: `${f.message} Compiler (nvcc ${report.nvcc}): ${ev.text}.` });
  }
  return kept;
}

import { cudaModel } from '../../../src/analysis/cuda.js';
import { defaultLimitBytes, describeCrossings, fmtBytes, fmtKb, optInCrossings, smemFacts, quoteCode } from '../../../src/analysis/smem.js';
import { smemLaunches } from '../../../src/analysis/smem-launch.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';

const short = (t: string) => quoteCode(t, 70);

const SHRINK = 'Shrink the tile (fewer rows per block, or fp32/half staging), or pick the tile size per device from `cudaDevAttrMaxSharedMemoryPerBlockOptin` at run time.';

/**
 * Static `__shared__` arrays: ptxas rejects a kernel whose static shared memory exceeds 48 KB on
 * every architecture (the opt-in attribute only raises the dynamic part), so each kernel's total is
 * checked per template instantiation and reported on the declaration that crosses the limit.
 */
function checkStatic(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const f = ctx.get(smemFacts);
  const limit = defaultLimitBytes(ctx.config.targets);
  const reported = new Set<number>();
  for (const k of m.kernels.values()) {
    const worst = f.staticUsage(k).reduce<ReturnType<typeof f.staticUsage>[number] | null>((a, u) => (!a || u.bytes > a.bytes ? u : a), null);
    if (!worst || worst.bytes <= limit) continue;
    const parts = [...worst.parts].sort((a, b) => a.decl.node.startIndex - b.decl.node.startIndex);
    let sum = 0;
    const crossing = parts.find((p) => (sum += p.bytes) > limit) ?? parts[parts.length - 1];
    if (reported.has(crossing.decl.node.id)) continue;
    reported.add(crossing.decl.node.id);
    const partText = parts.map((p) => `\`${short(p.decl.node.text)}\` is ${fmtBytes(p.bytes)} B`).join(' + ');
    const crossed = optInCrossings(worst.bytes, ctx.config.targets);
    let beyond = '';
    if (crossed.length) {
      const c = describeCrossings(crossed);
      beyond = `; it is also over ${c.gpu}'s ${c.limitKb} KB opt-in maximum${c.others ? ` (and ${c.others})` : ''}`;
    }
    ctx.report({
      node: crossing.decl.node,
      messageId: 'static',
      data: {
        parts: partText,
        total: parts.length > 1 ? `, ${fmtBytes(worst.bytes)} B in all` : '',
        n: fmtKb(worst.bytes),
        gpu: ctx.config.targets.map((t) => t.name).join(', '),
        limit: limit / 1024,
        kernel: (worst.inst.label || k.name) + (worst.inst.values ? `\` (${worst.inst.values})` : '`'),
        beyond,
      },
      fix: { description: `Move the tile to dynamic shared memory (\`extern __shared__\`, sized at launch and raised with cudaFuncSetAttribute), or ${SHRINK.charAt(0).toLowerCase()}${SHRINK.slice(1)}` },
    });
  }
}

export default defineCheck({
  id: 'memory/smem-exceeds-device-limit',
  pass: 5,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation: '003 §0 Target Hardware Reference Card (Max shared mem/block); 003 §4.2 Shared Memory Usage (sizing per GPU)',
  summary: 'Shared memory per block (static __shared__ plus constant dynamic bytes) over a configured target GPU’s limit.',
  why: 'A block can use at most 163 KB of shared memory on A100, 227 KB on H100 and 99 KB on RTX 3090/4090 even with the opt-in, and static __shared__ arrays at most 48 KB (003 §0, §4.2); over that limit the kernel does not compile or the launch fails on that GPU.',
  messages: {
    static:
      '{{parts}}{{total}}: shared memory per block ({{n}} KB) exceeds the limit of target {{gpu}} ({{limit}} KB for static `__shared__`, which cannot opt in), so ptxas rejects kernel `{{kernel}}{{beyond}}.',
    launch: 'Shared memory per block ({{n}} KB{{detail}}) exceeds the limit of target {{gpu}} ({{limit}} KB opt-in maximum){{others}}; the launch fails there: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language !== 'python') checkStatic(ctx);
        const staticLimit = defaultLimitBytes(ctx.config.targets);
        for (const l of ctx.get(smemLaunches)) {
          // A kernel over the static limit is reported at its declaration; a size picked from the device's opt-in query is fine.
          if (!l.dynamic || l.guarded || l.static > staticLimit) continue;
          const total = l.dynamic + l.static;
          const crossed = optInCrossings(total, ctx.config.targets);
          if (!crossed.length) continue;
          const c = describeCrossings(crossed);
          ctx.report({
            node: l.node,
            messageId: 'launch',
            data: {
              n: fmtKb(total),
              detail: l.static ? ` = ${fmtBytes(l.dynamic)} B dynamic + ${fmtBytes(l.static)} B static` : ` = ${fmtBytes(total)} B dynamic`,
              gpu: c.gpu,
              limit: c.limitKb,
              others: c.others ? `, and that of ${c.others}` : '',
              code: short(l.node.text),
            },
            fix: { description: SHRINK },
          });
        }
      },
    };
  },
});

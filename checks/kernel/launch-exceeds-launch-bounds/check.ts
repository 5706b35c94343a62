import type { CudaFunction, CudaModel } from '../../../src/analysis/cuda.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { launchConfigs, prod } from '../../../src/analysis/launch-config.js';
import { calleePath, lastName, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Occupancy calls whose 5th argument caps the block size they may return. */
const LIMIT_CALLS = /^(cudaOccupancyMaxPotentialBlockSize|cudaOccupancyMaxPotentialBlockSizeVariableSMem|cudaOccupancyMaxPotentialBlockSizeWithFlags|cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags|cuOccupancyMaxPotentialBlockSize|cuOccupancyMaxPotentialBlockSizeWithFlags)$/;

/** Template parameter names of a kernel template, in order. */
function templateParams(fn: CudaFunction): string[] {
  const t = fn.node.parent;
  if (t?.type !== 'template_declaration') return [];
  const list = t.childForFieldName('parameters');
  return (list?.namedChildren ?? []).map((p) => {
    const d = p.childForFieldName('declarator') ?? p.childForFieldName('name');
    return d?.text ?? '';
  });
}

/** The `__launch_bounds__` maximum for this use of the kernel: a constant, or a template parameter bound by `kern<B>`. */
function boundFor(m: CudaModel, fn: CudaFunction, callee: SyntaxNode | null): number | null {
  const e = fn.launchBounds?.maxThreads;
  if (!e) return null;
  const v = m.constValue(e);
  if (v !== null) return v;
  const i = templateParams(fn).indexOf(e.text.trim());
  if (i < 0 || !callee) return null;
  const targs = callee.type === 'template_function' ? callee.childForFieldName('arguments') : callee.descendantsOfType('template_argument_list')[0];
  const a = targs?.namedChildren[i];
  return a ? m.constValue(a) ?? (Number.isFinite(Number(a.text)) ? Number(a.text) : null) : null;
}

export default defineCheck({
  id: 'kernel/launch-exceeds-launch-bounds',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation: '004 §H2.3 Compiler Hints to Optimize Occupancy ("we promise never to launch myKernel with more than 256 threads per block")',
  summary: 'A constant launch block larger than the kernel’s constant __launch_bounds__ maximum.',
  why: '`__launch_bounds__(256)` is a promise never to launch with more than 256 threads per block (004 §H2.3); the compiler fits registers to it, so a larger block fails to launch with cudaErrorLaunchOutOfResources / invalid configuration.',
  messages: {
    launch:
      'Launch uses more threads per block than the kernel\'s __launch_bounds__ promises; the launch will fail: `{{kernel}}` is declared `__launch_bounds__({{t}})` but launched with {{b}} threads per block{{dims}}: `{{code}}`.',
    limit:
      'Occupancy query for `{{kernel}}` allows blocks of up to {{b}} threads (blockSizeLimit) but the kernel\'s `__launch_bounds__({{t}})` promises at most {{t}}; a block size above the bound cannot launch: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        for (const l of ctx.get(launchConfigs)) {
          if (!l.kernel || !l.block) continue;
          const callee = l.node.childForFieldName('function');
          const t = boundFor(l.kernel.model, l.kernel.fn, ctx.source.language === 'python' ? null : callee);
          const b = prod(l.block);
          if (t === null || b <= t) continue;
          const dims = l.block[1] > 1 || l.block[2] > 1 ? ` (${l.block.filter((x, i) => i === 0 || x > 1).join('×')})` : '';
          ctx.report({
            node: l.node,
            messageId: 'launch',
            data: { kernel: l.label, t, b, dims, code: quote(l.node) },
            fix: { description: `Launch with at most ${t} threads per block, or raise the kernel's __launch_bounds__ to ${b} (the compiler then budgets registers for the larger block).` },
          });
        }
        if (ctx.source.language === 'python') return;
        const m = ctx.get(cudaModel);
        for (const c of m.calls) {
          if (!LIMIT_CALLS.test(c.name)) continue;
          const limitArg = c.args[4];
          const limit = m.constValue(limitArg);
          const kname = c.args[2] ? lastName(calleePath(c.args[2])) ?? c.args[2].text.replace(/[&()]/g, '') : null;
          const fn = kname ? m.kernels.get(kname) : undefined;
          if (!fn || limit === null || limit <= 0) continue;
          const t = boundFor(m, fn, c.args[2] ?? null);
          if (t === null || limit <= t) continue;
          ctx.report({
            node: c.node,
            messageId: 'limit',
            data: { kernel: fn.name, t, b: limit, code: quote(c.node) },
            fix: { description: `Pass a blockSizeLimit of at most ${t}, or 0 (the occupancy API then respects the kernel's maxThreadsPerBlock).` },
          });
        }
      },
    };
  },
});

import { baseName, ccclModel, declaredTypeOf, INTEGER_DTYPE, INTEGER_NAME, INTEGER_TYPE, reductionInput } from '../../../src/analysis/cccl.js';
import { pyArgs } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const inside = (outer: SyntaxNode, n: SyntaxNode) => n.startIndex >= outer.startIndex && n.endIndex <= outer.endIndex;

function functionOf(n: SyntaxNode): SyntaxNode {
  let p = n.parent;
  while (p && p.type !== 'function_definition') p = p.parent;
  return p ?? n.tree.rootNode;
}

/** Python: the names a reduction's result lands in (`parts.append(r)`, `parts[d] = r`, `total += r`, `t = r`, the `reduce_into` output). */
function pythonSinks(call: SyntaxNode, loop: SyntaxNode): Set<string> {
  const out = new Set<string>();
  const pos = pyArgs(call).positional;
  const input = reductionInput(call);
  const i = input ? pos.findIndex((a) => a.id === input.id) : -1;
  const output = i >= 0 ? baseName(pos[i + 1] ?? null) : null;
  if (output && /_into$|segmented_reduce$/.test(call.childForFieldName('function')?.text ?? '')) out.add(output);
  let p = call.parent;
  while (p && inside(loop, p)) {
    if (p.type === 'call' && /\.(append|extend|add|insert)$/.test(p.childForFieldName('function')?.text ?? '')) {
      const b = baseName(p.childForFieldName('function')?.childForFieldName('object') ?? null);
      if (b) out.add(b);
    }
    if (p.type === 'assignment' || p.type === 'augmented_assignment') {
      const b = baseName(p.childForFieldName('left'));
      if (b) out.add(b);
      break;
    }
    if (['expression_statement', 'block'].includes(p.type)) break;
    p = p.parent;
  }
  return out;
}

/** C++: the reduction's output, and host buffers that copies in the loop move it into. */
function cudaSinks(call: SyntaxNode, loop: SyntaxNode): Set<string> {
  const out = new Set<string>();
  const args = call.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment') ?? [];
  const input = reductionInput(call);
  const i = input ? args.findIndex((a) => a.id === input.id) : -1;
  const output = i >= 0 ? baseName(args[i + 1] ?? null) : null;
  if (!output) return out;
  out.add(output);
  for (const c of loop.descendantsOfType('call_expression')) {
    const cargs = c.childForFieldName('arguments')?.namedChildren ?? [];
    if (c.id === call.id || !cargs.some((a) => baseName(a) === output)) continue;
    for (const a of cargs) {
      const b = baseName(a);
      if (b) out.add(b);
    }
  }
  // `acc += h` after `cudaMemcpy(&h, d_out[d], ...)`: the host accumulator carries the result out of the loop.
  for (const a of loop.descendantsOfType('assignment_expression')) {
    const right = a.childForFieldName('right');
    const b = baseName(a.childForFieldName('left'));
    if (b && right && right.descendantsOfType('identifier').some((i) => out.has(i.text)) || (b && right?.type === 'identifier' && out.has(right.text))) out.add(b!);
  }
  return out;
}

export default defineCheck({
  id: 'precision/cccl-multi-gpu-needs-gpu-to-gpu',
  pass: 4,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['python', 'cuda'],
  citation: '003 §11 CCCL Reduction Determinism (CCCL 3.1+) ("If a pipeline aggregates results across multiple GPUs … flag the need for gpu_to_gpu determinism")',
  summary: 'Per-GPU CCCL reductions are combined across devices without the gpu_to_gpu determinism level.',
  why: 'The default run_to_run reduction is bitwise reproducible only on the same GPU and configuration; results merged from several GPUs need gpu_to_gpu, which costs 20–30 % (003 §11, §10).',
  messages: {
    multiGpu:
      'Reduction `{{code}}` runs once per GPU in the loop over `{{device}}` and its results are combined; run_to_run determinism only guarantees same-GPU reproducibility — use the gpu_to_gpu level.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    const py = ctx.source.language === 'python';
    return {
      'source:exit'() {
        const m = ctx.get(ccclModel);
        const seen = new Set<number>();
        for (const sel of m.deviceSelections) {
          const loop = sel.loop;
          if (!loop || seen.has(loop.id)) continue;
          seen.add(loop.id);
          const fn = functionOf(loop);
          // gpu_to_gpu anywhere in the loop (an `env` built once and passed in) covers its reductions.
          if (m.determinism.some((d) => d.level === 'gpu_to_gpu' && inside(fn, d.node) && (inside(loop, d.node) || d.node.startIndex < loop.startIndex))) continue;
          const device = py ? loop.childForFieldName('left')?.text ?? '' : loop.childForFieldName('initializer')?.descendantsOfType('identifier')[0]?.text ?? '';
          for (const r of m.reductions) {
            if (!inside(loop, r)) continue;
            // Integer sums are exact whatever GPU adds them.
            const input = baseName(reductionInput(r));
            if (py ? INTEGER_DTYPE.test(r.text) : false) continue;
            if (input) {
              const ty = py ? null : declaredTypeOf(fn, input);
              if (ty ? INTEGER_TYPE.test(ty) : INTEGER_NAME.test(input)) continue;
            }
            const sinks = py ? pythonSinks(r, loop) : cudaSinks(r, loop);
            const later = fn.descendantsOfType('identifier').some((id) => id.startIndex >= loop.endIndex && sinks.has(id.text));
            if (!later) continue;
            const code = r.text.replace(/\s+/g, ' ');
            ctx.report({
              node: r,
              messageId: 'multiGpu',
              data: { code: code.length > 70 ? code.slice(0, 67) + '...' : code, device },
              fix: { description: 'Pass the gpu_to_gpu determinism requirement to the reduction (20–30 % slower, bitwise identical across GPUs).' },
            });
          }
        }
      },
    };
  },
});

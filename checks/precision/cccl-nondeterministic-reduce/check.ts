import { baseName, ccclModel, declaredTypeOf, INTEGER_DTYPE, INTEGER_NAME, INTEGER_TYPE, REDUCTION_PATH, reductionInput } from '../../../src/analysis/cccl.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { pythonModel, TEST_OR_BENCH_PATH } from '../../../src/analysis/python.js';
import { calleePath } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc, alternation } from '../../../src/core/regex.js';

const short = (s: string) => (s.length > 70 ? s.slice(0, 67) + '...' : s).replace(/\s+/g, ' ');

export default defineCheck({
  id: 'precision/cccl-nondeterministic-reduce',
  pass: 4,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation:
    '003 §11 CCCL Reduction Determinism ("Relevant for spatial operations where reproducible results matter (overlay area, dissolve)"; not_guaranteed = atomic-based, no guarantee)',
  summary: 'A CCCL reduction asks for determinism not_guaranteed in an overlay/dissolve/area path whose results must be reproducible.',
  why: 'not_guaranteed is the atomic-based single-kernel reduction with no reproducibility guarantee, while the default run_to_run tree reduction is bitwise identical on the same GPU and the gpu_to_gpu level costs only 20–30 % more (003 §11, §10).',
  messages: {
    notGuaranteed:
      'Reduction uses determinism level not_guaranteed (`{{code}}`) in `{{where}}`, a path whose results must be reproducible (overlay/dissolve areas); use the default run_to_run.',
  },
  fix: 'safe',
  needsProjectVocabulary: true,
  create(ctx) {
    const vocab = ctx.config.vocab;
    const reproducible = new RegExp(alternation(vocab.reproducible_reduction_names), 'i');
    const py = ctx.source.language === 'python';

    const pythonTarget = (d: { node: SyntaxNode; keyword: SyntaxNode | null; call: SyntaxNode | null }): void => {
      const m = ctx.get(pythonModel);
      if (m.testOrBench || !d.call) return;
      const path = calleePath(d.call.childForFieldName('function')) ?? '';
      if (!d.keyword && !REDUCTION_PATH.test(path)) return;
      const scope = m.scopeOf(d.call);
      const fname = scope.type === 'function_definition' ? scope.childForFieldName('name')?.text ?? '' : '';
      const where = reproducible.test(fname) ? fname : reproducible.test(ctx.source.path) ? ctx.source.path : null;
      if (!where) return;
      // Integer sums are exact in any order: nothing to reproduce (003 §6.3 counting, indexing).
      if (INTEGER_DTYPE.test(d.call.text)) return;
      const input = reductionInput(d.call);
      const name = baseName(input);
      if (name && INTEGER_NAME.test(name)) return;
      if (name) {
        const assigned = m.assignmentsIn(scope).get(name);
        const last = assigned?.filter((a) => a.node.startIndex < d.call!.startIndex).pop();
        if (last && INTEGER_DTYPE.test(last.value.text)) return;
      }
      let replace: { from: SyntaxNode; text: string } | undefined;
      if (d.keyword && d.call.startPosition.row === d.call.endPosition.row) {
        const line = ctx.linesOf(d.call);
        const kw = d.keyword.text;
        const next = line.replace(new RegExp(`,\\s*${esc(kw)}`), '');
        const text = next !== line ? next : line.replace(new RegExp(`${esc(kw)}\\s*,\\s*`), '').replace(new RegExp(esc(kw)), '');
        if (text !== line) replace = { from: d.call, text };
      }
      ctx.report({
        node: d.keyword ?? d.node,
        messageId: 'notGuaranteed',
        data: { code: short(d.keyword?.text ?? d.node.text), where },
        fix: { description: 'Drop the determinism argument: the default run_to_run level is a fixed tree reduction, bitwise identical run to run.', replace },
      });
    };

    const cudaTarget = (d: { node: SyntaxNode; call: SyntaxNode | null }): void => {
      const m = ctx.get(cudaModel);
      if (m.testOrBench || TEST_OR_BENCH_PATH.test(ctx.source.path)) return;
      const fn = m.functionOf(d.node);
      const scope = fn?.node ?? ctx.source.root;
      const reductions = ctx.get(ccclModel).reductions.filter((r) => r.startIndex >= scope.startIndex && r.endIndex <= scope.endIndex);
      if (!reductions.length) return;
      const where = fn && reproducible.test(fn.name) ? fn.name : reproducible.test(ctx.source.path) ? ctx.source.path : null;
      if (!where) return;
      const integer = reductions.every((r) => {
        const name = baseName(reductionInput(r));
        if (!name) return false;
        const ty = declaredTypeOf(scope, name) ?? declaredTypeOf(ctx.source.root, name);
        return ty ? INTEGER_TYPE.test(ty) : INTEGER_NAME.test(name);
      });
      if (integer) return;
      const line = ctx.linesOf(d.node);
      ctx.report({
        node: d.node,
        messageId: 'notGuaranteed',
        data: { code: short(d.node.text), where },
        fix: {
          description: 'Ask for run_to_run (the default level): a fixed tree reduction, bitwise identical run to run on the same GPU.',
          replace: d.node.startPosition.row === d.node.endPosition.row ? { from: d.node, text: line.replace(/\bnot_guaranteed\b/, 'run_to_run') } : undefined,
        },
      });
    };

    return {
      'source:exit'() {
        for (const d of ctx.get(ccclModel).determinism) {
          if (d.level !== 'not_guaranteed') continue;
          if (py) pythonTarget(d);
          else cudaTarget(d);
        }
      },
    };
  },
});

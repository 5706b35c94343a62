import { ccclModel, REDUCTION_PATH } from '../../../src/analysis/cccl.js';
import { calleePath, commentsAround } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

// gpu_to_gpu is justified by cross-machine comparison or by its tighter error bounds (003 §11 bullet 3).
const JUSTIFIED = /golden|cross[- ]?(machine|gpu|device|host)|across (machines|gpus|devices|hosts)|other (machines|gpus)|different (machines|gpus)|bit-?wise.*(machine|gpu)|accura|error bound|tighter|numerical(ly)? (error|stab)|exponent bin/i;

function statementOf(n: SyntaxNode): SyntaxNode {
  let p: SyntaxNode = n;
  while (p.parent && !['block', 'module', 'compound_statement', 'translation_unit'].includes(p.parent.type)) p = p.parent;
  return p;
}

export default defineCheck({
  id: 'precision/cccl-gpu-to-gpu-single-gpu',
  pass: 4,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation: '003 §10 (row "CCCL gpu_to_gpu determinism: 20-30% slower than run_to_run — Only when cross-GPU reproducibility needed"); 003 §11',
  summary: 'gpu_to_gpu determinism requested in a module that only ever runs on one GPU.',
  why: 'gpu_to_gpu (the reproducible floating-point accumulator) is 20–30 % slower than the default run_to_run, which is already bitwise identical on the same GPU (003 §10, §11).',
  messages: {
    singleGpu:
      'gpu_to_gpu determinism (`{{code}}`) costs 20–30%; this reduction runs on a single GPU, where the default run_to_run is already bitwise reproducible.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(ccclModel);
        if (m.multiDevice) return;
        for (const d of m.determinism) {
          if (d.level !== 'gpu_to_gpu') continue;
          if (ctx.source.language === 'python' && !d.keyword && !(d.call && REDUCTION_PATH.test(calleePath(d.call.childForFieldName('function')) ?? ''))) continue;
          if (ctx.source.language === 'cuda' && !m.reductions.length) continue;
          if (commentsAround(statementOf(d.node)).some((c) => JUSTIFIED.test(c))) continue;
          const code = (d.keyword ?? d.node).text.replace(/\s+/g, ' ');
          ctx.report({
            node: d.keyword ?? d.node,
            messageId: 'singleGpu',
            data: { code: code.length > 70 ? code.slice(0, 67) + '...' : code },
            fix: { description: 'Drop the determinism argument (default run_to_run), unless results are compared across machines or the tighter gpu_to_gpu error bound is needed; then say so in a comment.' },
          });
        }
      },
    };
  },
});

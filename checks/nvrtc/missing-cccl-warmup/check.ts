import { pythonModel, runsAtImport } from '../../../src/analysis/python.js';
import { lastName } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';

const CCCL_MODULE = /(^|\.)(cccl|compute)(\.|$)|^cuda\.cccl|^cuda\.compute/;

export default defineCheck({
  id: 'nvrtc/missing-cccl-warmup',
  pass: 6,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation:
    '003 §7.3 Precompilation/Warmup (ADR-0034) (level 1 CCCL module warmup, 8-thread background pool); 003 §7.5 ("CCCL specs declare request_warmup() at module scope"); 003 §10 (row "CCCL cold-call JIT 950-1,460 ms → Mandate request_warmup()")',
  summary: 'Module calls CCCL primitives but declares no module-scope request_warmup().',
  why: 'Each new CCCL spec costs 950–1,460 ms of cold JIT on first call; declared at module scope, 18 specs warm in ~2–3 s on the 8-thread pool instead of ~20 s serially on the request path (003 §7.3, §10).',
  messages: {
    missingWarmup: 'Module calls CCCL primitives (`{{code}}`) but declares no module-scope request_warmup(); each new spec costs ~1–1.5 s of cold JIT.',
    moveToModule: '`{{code}}` runs only when `{{fn}}` is called: declare request_warmup() at module scope so CCCL specs compile in the background at import; each new spec otherwise costs ~1–1.5 s of cold JIT.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const root = m.source.root;
        const defined = new Set(root.descendantsOfType('function_definition').map((f) => f.childForFieldName('name')?.text ?? ''));
        // The CCCL wrapper module implements the primitives and the warmup pool itself.
        if (vocab.cccl_warmup_calls.some((w) => defined.has(lastName(w) ?? w))) return;
        const calls = root.descendantsOfType('call');
        if (calls.some((c) => m.callMatches(c, vocab.warmup_requirement_calls))) return;
        const ccclOps = new Set(m.gpuOps.filter((o) => o.kind === 'cccl').map((o) => o.node.id));
        const cccl = calls.filter((c) => {
          const p = m.callPath(c);
          const name = lastName(p);
          if (!name || !vocab.cccl_calls.includes(name) || defined.has(name) || m.isNumpyPath(p)) return false;
          if (ccclOps.has(c.id)) return true;
          const head = p!.split('.')[0];
          const mod = m.moduleOf(head);
          return !!mod && CCCL_MODULE.test(mod);
        });
        if (!cccl.length) return;
        const warmups = calls.filter((c) => m.callMatches(c, vocab.cccl_warmup_calls));
        if (warmups.some(runsAtImport)) return;
        const short = (t: string) => {
          const first = t.split('\n')[0];
          return first.length > 60 ? first.slice(0, 57) + '...' : first + (t.includes('\n') ? ' ...' : '');
        };
        if (warmups.length) {
          for (const w of warmups) {
            const scope = m.scopeOf(w);
            ctx.report({
              node: w,
              messageId: 'moveToModule',
              data: { code: short(w.text), fn: scope.type === 'function_definition' ? scope.childForFieldName('name')?.text ?? '?' : '__main__' },
              fix: { description: 'Call `request_warmup([...specs...])` at module scope, next to the imports of the primitives.' },
            });
          }
          return;
        }
        ctx.report({
          node: cccl[0],
          messageId: 'missingWarmup',
          data: { code: short(cccl[0].text) },
          fix: { description: 'Add `request_warmup([("<primitive>", <dtype>), ...])` at module scope, one spec per primitive and dtype this module calls.' },
        });
      },
    };
  },
});

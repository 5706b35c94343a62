import { cudaModel } from '../../../src/analysis/cuda.js';
import { precisionFacts } from '../../../src/analysis/precision-dispatch.js';
import { pythonLaunches } from '../../../src/analysis/pylaunch.js';
import { pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import type { Source } from '../../../src/sources/types.js';
import { escapeRe as esc, alternation } from '../../../src/core/regex.js';

/** `0.0`, `0`, `-0.0`, `np.float64(0.0)`: a constant origin, i.e. no centering. */
function constantOrigin(n: SyntaxNode | null | undefined): boolean {
  const u = unparen(n);
  if (!u) return false;
  if (u.type === 'float' || u.type === 'integer') return true;
  if (u.type === 'unary_operator') return constantOrigin(u.childForFieldName('argument'));
  if (u.type === 'call') {
    const a = pyArgs(u).positional;
    return /(^|\.)(float64|float32|double|float)$/.test(u.childForFieldName('function')?.text ?? '') && a.length === 1 && constantOrigin(a[0]);
  }
  return false;
}

export default defineCheck({
  id: 'precision/centering-not-applied',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['python'],
  citation: '003 §6.6 ("Coordinate centering applied when plan.center_coordinates is True"); 003 §6.2 (COARSE: fp32 with coordinate centering)',
  summary: 'A kernel taking center_x/center_y is launched with constant centers and the dispatch ignores plan.center_coordinates.',
  why: 'fp32 keeps ~7 significant digits, so uncentered 1e6-magnitude coordinates lose everything below ~0.1 and differences with |x1 − x2|/|x1| < 1e-6 cancel; ADR-0002 runs COARSE kernels in fp32 only with coordinate centering (003 §6.2, §6.4).',
  messages: {
    constantCenter:
      'Kernel `{{kernel}}` takes {{params}} but the dispatch passes constants (`{{args}}`) and ignores plan.center_coordinates; fp32 paths lose precision on large coordinates.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const pl = ctx.get(pythonLaunches);
        const pf = ctx.get(precisionFacts);
        const centerNames = ctx.config.vocab.center_param_names;
        for (const l of pl.launches) {
          if (!l.cudaName || (l.via !== 'runtime.launch' && l.via !== 'kernel-call')) continue;
          const { positional, keywords } = pyArgs(l.node);
          const argsNode = unparen(l.via === 'runtime.launch' ? (keywords.get('args') ?? positional[3]) : (positional[2] ?? keywords.get('args')));
          if (argsNode?.type !== 'tuple' && argsNode?.type !== 'list') continue;
          const args = argsNode.namedChildren.filter((c) => c.type !== 'comment');
          const scope = pf.py.scopeOf(l.node);
          // The dispatch consults the plan's centering switch (including `if not plan.center_coordinates:` zeros).
          if (pf.planFieldReads(scope, ctx.config.vocab.precision_center_fields).length) continue;
          for (const src of pl.kernelSources(l.cudaName)) {
            if (fp64Only(src)) continue;
            const fn = cudaModel.compute(src, ctx.config).kernels.get(l.cudaName);
            if (!fn) continue;
            const names = fn.params.map((p) => p.descendantsOfType('identifier').pop()?.text ?? '');
            const idx = names.map((n, i) => (centerNames.includes(n) ? i : -1)).filter((i) => i >= 0);
            if (!idx.length || names.length !== args.length || !idx.every((i) => constantOrigin(args[i]))) continue;
            ctx.report({
              node: l.node,
              messageId: 'constantCenter',
              data: { kernel: l.cudaName, params: idx.map((i) => names[i]).join('/'), args: idx.map((i) => args[i].text).join(', ') },
              fix: { description: 'When plan.center_coordinates is set, compute the centers (e.g. the bounding-box midpoint) and pass them; keep 0.0 only in the `if not plan.center_coordinates:` branch.' },
            });
            break;
          }
        }
      },
    };

    /** A kernel string that never computes in fp32: no compute typedef that can be float, no float arithmetic. */
    function fp64Only(src: Source): boolean {
      const TD = alternation(ctx.config.vocab.precision_typedefs.map((s) => s.replace(/\W/g, '')));
      const m = new RegExp(`typedef\\s+(\\S+)\\s+(${TD})\\s*;`).exec(src.text);
      if (!m) return !/\bfloat\b/.test(src.text);
      if (m[1] === 'double') return true;
      const arg = src.placeholders?.get(m[1]);
      return !!arg && /^(['"])double\1$/.test(arg.trim());
    }
  },
});

import { cudaModel } from '../../../src/analysis/cuda.js';
import { nameRegex, precisionFacts, type PrecisionFormat } from '../../../src/analysis/precision-dispatch.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';

const quote = (t: string) => {
  const one = t.replace(/\s+/g, ' ').trim();
  return one.length > 70 ? one.slice(0, 67) + '...' : one;
};

/**
 * CONSTRUCTIVE (003 §6.2) by name, minus the kernels that may run in fp32 inside a constructive
 * pipeline: COARSE bounding-box prefilters (003 §6.3), PREDICATE kernels (`intersects`: fp32 coarse with
 * fp64 refinement) and integer bookkeeping (counting, indexing, flags).
 */
function classifier(ctx: CheckContext): (name: string) => boolean {
  const v = ctx.config.vocab;
  const constructive = nameRegex(v.constructive_kernel_names);
  const exempt = nameRegex([...v.coarse_kernel_names, ...(v.predicate_kernel_names ?? []), ...(v.integer_like_kernel_names ?? [])]);
  return (name) => constructive.test(name) && !exempt.test(name);
}

export default defineCheck({
  id: 'precision/constructive-kernel-in-fp32',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['python', 'nvrtc-in-python'],
  citation: '003 §6.2 Mixed Precision Strategy (CONSTRUCTIVE: "Native fp64 (correctness required)"); 003 §6.4 When fp64 Is Required ("fp32 error compounds and produces topologically invalid results"); 003 §6.6',
  summary: 'A CONSTRUCTIVE kernel (clip/overlay/intersection) can be compiled or computed in fp32.',
  why: 'fp32 keeps ~7 decimal digits, so intersection and clip coordinates lose precision when |x1 − x2|/|x1| < 1e-6 and the error compounds into topologically invalid output; ADR-0002 keeps CONSTRUCTIVE kernels in native fp64 on every GPU (003 §6.2, §6.4).',
  messages: {
    formattedFloat:
      'CONSTRUCTIVE kernel ({{kernel}}) can be compiled with compute_t = float (`{{code}}`); constructive geometry must stay fp64.',
    floatLocal:
      'CONSTRUCTIVE kernel ({{kernel}}) declares an fp32 intermediate `{{code}}`; constructive geometry must stay fp64.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    const isConstructive = classifier(ctx);
    return {
      'source:exit'() {
        if (ctx.source.language === 'nvrtc-in-python') {
          const m = ctx.get(cudaModel);
          for (const fn of m.functions) {
            if (!(fn.isKernel || fn.isDevice) || !fn.body || !isConstructive(fn.name)) continue;
            for (const d of fn.body.descendantsOfType('declaration')) {
              const ty = d.childForFieldName('type');
              if (ty?.type !== 'primitive_type' || ty.text !== 'float') continue;
              ctx.report({
                node: d,
                messageId: 'floatLocal',
                data: { kernel: fn.name, code: quote(d.text) },
                fix: { description: 'Declare the intermediate as `double` (or `compute_t` with the template forced to fp64 for this kernel class).' },
              });
            }
          }
          return;
        }
        const pf = ctx.get(precisionFacts);
        for (const f of pf.formats) {
          if (!f.typeArg) continue;
          const kernel = constructiveName(f, isConstructive);
          if (!kernel) continue;
          // A template that never computes in compute_t (integer or topology bookkeeping) has no fp32 path.
          if (f.templateText !== null && !pf.usesComputeT(f.templateText)) continue;
          const v = pf.typeValues(f.typeArg);
          if (!v.float && !v.fromPlan) continue;
          const node = f.call.type === 'call' ? f.call : f.typeArg;
          ctx.report({
            node,
            messageId: 'formattedFloat',
            data: { kernel, code: quote(node.text) },
            fix: { description: 'Force `compute_type = "double"` for this kernel class (still record the plan), per ADR-0002.' },
          });
        }
      },
    };
  },
});

/** The constructive kernel a formatted template builds: its `__global__` names when known, else the dispatch or template name. */
function constructiveName(f: PrecisionFormat, isConstructive: (n: string) => boolean): string | null {
  if (f.kernelNames.length) return f.kernelNames.find(isConstructive) ?? null;
  const fnName = f.scope.type === 'function_definition' ? (f.scope.childForFieldName('name')?.text ?? '') : '';
  return [f.templateName ?? '', fnName].find((n) => n && isConstructive(n)) ?? null;
}

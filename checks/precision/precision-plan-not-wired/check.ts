import { precisionFacts, globalKernelNames, nameRegex, type PrecisionFormat } from '../../../src/analysis/precision-dispatch.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const quote = (t: string) => {
  const one = t.replace(/\s+/g, ' ').trim();
  return one.length > 70 ? one.slice(0, 67) + '...' : one;
};

export default defineCheck({
  id: 'precision/precision-plan-not-wired',
  pass: 4,
  severity: 'medium-high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation: '003 §6.2 Mixed Precision Strategy (ADR-0002); 003 §6.6 ("CONSTRUCTIVE kernels wired through PrecisionPlan but stay fp64"); 003 §7.1',
  summary: 'A dispatch that has a PrecisionPlan compiles its compute_t template with a fixed compute type.',
  why: 'A template pinned to "double" runs at 1/64 of fp32 throughput on RTX 3090/4090 (~1.6 % of the GPU), which is what ADR-0002 precision dispatch exists to avoid (003 §0, §6.1).',
  messages: {
    fixedType:
      'Kernel is compiled with a fixed compute type (`{{code}}`) instead of plan.compute_precision; the PrecisionPlan `{{plan}}` is not wired through this dispatch.',
  },
  fix: 'safe',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const pf = ctx.get(precisionFacts);
        const vocab = ctx.config.vocab;
        const constructive = nameRegex(vocab.constructive_kernel_names);
        const hasPrecisionMode = /\bPrecisionMode\b/.test(ctx.source.text);
        const reported = new Set<number>();
        for (const f of pf.formats) {
          if (!f.typeArg || f.scope.type !== 'function_definition') continue;
          // Only a template that declares compute_t has a precision to wire (003 §7.1).
          if (f.templateText !== null && !pf.declaresComputeT(f.templateText)) continue;
          const plans = pf.planNames(f.scope);
          if (!plans.length) continue;
          if (pf.planFieldReads(f.scope, vocab.precision_compute_fields).length) continue;
          const planUsed = plans.some((p) => pf.py.usesOf(p, f.scope).length > 0);
          // CONSTRUCTIVE kernels consult the plan (to record it) but stay fp64 (003 §6.6): wired correctly.
          if (planUsed && isConstructive(f, constructive)) continue;
          const arg = unparen(f.typeArg)!;
          const literal = pf.stringValue(arg);
          if (literal === 'double' || literal === 'float') {
            if (reported.has(f.call.id)) continue;
            reported.add(f.call.id);
            ctx.report({
              node: f.call,
              messageId: 'fixedType',
              data: { code: quote(f.call.text), plan: plans[0] },
              fix: { description: `Derive the type from the plan: \`compute_type = "float" if ${plans[0]}.compute_precision is PrecisionMode.FP32 else "double"\` and pass \`compute_type=compute_type\`.` },
            });
            continue;
          }
          if (arg.type !== 'identifier') continue;
          const assign = unconditionalLiteral(arg, f.scope, pf);
          if (!assign || reported.has(assign.id)) continue;
          reported.add(assign.id);
          const left = assign.childForFieldName('left')!.text;
          const indent = /^\s*/.exec(ctx.linesOf(assign))![0];
          ctx.report({
            node: assign,
            messageId: 'fixedType',
            data: { code: quote(assign.text), plan: plans[0] },
            fix: {
              description: `Derive the type from the plan: \`${left} = "float" if ${plans[0]}.compute_precision is PrecisionMode.FP32 else "double"\`.`,
              // The rewrite names PrecisionMode: only safe when the module already has it in scope.
              replace: hasPrecisionMode && assign.startPosition.row === assign.endPosition.row
                ? { from: assign, text: `${indent}${left} = "float" if ${plans[0]}.compute_precision is PrecisionMode.FP32 else "double"` }
                : undefined,
            },
          });
        }
      },
    };
  },
});

function isConstructive(f: PrecisionFormat, re: RegExp): boolean {
  const fnName = f.scope.childForFieldName('name')?.text ?? '';
  const names = [fnName, f.templateName ?? '', ...(f.templateText ? globalKernelNames(f.templateText) : [])];
  return names.some((n) => re.test(n));
}

/**
 * `compute_type = "double"` as the only binding of the name in the function, directly in its body
 * (not under an `if`, `try` or loop): the compute type can never follow the plan.
 */
function unconditionalLiteral(id: SyntaxNode, scope: SyntaxNode, pf: { py: { assignmentsIn(s: SyntaxNode): Map<string, Array<{ node: SyntaxNode; value: SyntaxNode }>> }; stringValue(n: SyntaxNode | null | undefined): string | null }): SyntaxNode | null {
  const list = pf.py.assignmentsIn(scope).get(id.text) ?? [];
  if (list.length !== 1) return null;
  const a = list[0].node;
  if (a.type !== 'assignment' || a.startIndex > id.startIndex) return null;
  const v = pf.stringValue(a.childForFieldName('right'));
  if (v !== 'double' && v !== 'float') return null;
  const stmt = a.parent;
  if (stmt?.type !== 'expression_statement' || stmt.parent?.type !== 'block' || stmt.parent.parent?.id !== scope.id) return null;
  return a;
}

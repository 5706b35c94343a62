import { cudaModel, type CudaFunction } from '../../../src/analysis/cuda.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** fp32 resolves ~7 decimal digits (FLT_EPSILON ≈ 1.19e-7): a tolerance below 1e-7 only exists in fp64 (003 §6.6). */
const FP32_RESOLUTION = 1e-7;
const COMPARISON = new Set(['<', '<=', '>', '>=', '==', '!=']);
const ARITH = new Set(['+', '-', '*', '/']);

/** Value of a floating literal (`1e-12`, `1.0e-10f`, `5e-9L`); null for integers and hex. */
function floatValue(text: string): number | null {
  const t = text.replace(/[fFlL]+$/, '');
  if (/^0[xX]/.test(t) || !/[.eE]/.test(t)) return null;
  const v = Number(t);
  return Number.isFinite(v) ? v : null;
}
const tiny = (text: string) => {
  const v = floatValue(text);
  return v !== null && v !== 0 && Math.abs(v) < FP32_RESOLUTION;
};

/** The comparison a value takes part in, through parentheses, casts, unary minus and arithmetic scaling. */
function comparisonOf(n: SyntaxNode): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'parenthesized_expression' || p.type === 'cast_expression' || p.type === 'unary_expression') continue;
    if (p.type === 'binary_expression') {
      const op = p.childForFieldName('operator')?.text ?? '';
      if (COMPARISON.has(op)) return p;
      if (ARITH.has(op)) continue;
    }
    return null;
  }
  return null;
}

export default defineCheck({
  id: 'precision/fp64-tolerance-in-fp32-path',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['nvrtc-in-python', 'cuda'],
  citation: '003 §6.6 ("Boundary tolerances widened for fp32 (e.g., 1e-7 instead of 1e-12)")',
  summary: 'A tolerance below fp32 resolution (1e-12, 1e-9) compared against compute_t values in a template that can build as float.',
  why: 'fp32 resolves only ~1e-7 relative (fp64 ~1e-12), so in the float build a 1e-12 tolerance acts as an exact comparison; 003 §6.6 asks for 1e-7 in the fp32 path.',
  messages: {
    tolerance:
      'Tolerance {{tol}} is below fp32 resolution; in the fp32 variant of this kernel it behaves like an exact comparison. Use a precision-dependent tolerance (e.g. 1e-7 for fp32).',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const src = ctx.source;
        if (!/__global__|__device__/.test(src.text)) return;
        const typedefs = ctx.config.vocab.precision_typedefs;
        const root = src.root;
        // Which types the compute typedef can stand for: the template is only an fp32 path if one of them is float.
        const decls: SyntaxNode[] = [];
        for (const d of root.descendantsOfType('type_definition')) {
          if (d.childrenForFieldName('declarator').some((x) => typedefs.includes(x.text))) decls.push(d.childForFieldName('type')!);
        }
        for (const d of root.descendantsOfType('alias_declaration')) {
          if (typedefs.includes(d.childForFieldName('name')?.text ?? '')) decls.push(d.childForFieldName('type')!);
        }
        const templated = root.descendantsOfType('type_parameter_declaration').some((p) => typedefs.some((t) => new RegExp(`\\b${esc(t)}\\b`).test(p.text)));
        if (!templated && !decls.some((t) => t && canBeFloat(t))) return;

        const m = ctx.get(cudaModel);
        const typeMemo = new Map<number, Set<string>>();
        /** Locals and parameters of a function declared in compute_t (or float): the fp32-capable values. */
        const fp32Names = (fn: CudaFunction): Set<string> => {
          let s = typeMemo.get(fn.node.id);
          if (s) return s;
          s = new Set();
          for (const d of [...fn.params, ...(fn.body?.descendantsOfType('declaration') ?? [])]) {
            const ty = d.childForFieldName('type')?.text ?? '';
            if (!typedefs.includes(ty) && ty !== 'float') continue;
            for (const id of d.descendantsOfType('identifier')) {
              const par = id.parent;
              if (par && (par.type === 'init_declarator' ? par.childForFieldName('declarator')?.id === id.id : par.id === d.id || par.type.endsWith('declarator'))) s.add(id.text);
            }
          }
          typeMemo.set(fn.node.id, s);
          return s;
        };
        const inFp32Path = (cmp: SyntaxNode, fn: CudaFunction): boolean => {
          const names = fp32Names(fn);
          return cmp.descendantsOfType('identifier').some((i) => names.has(i.text)) ||
            cmp.descendantsOfType(['type_descriptor']).some((t) => typedefs.includes(t.text.trim()) || t.text.trim() === 'float');
        };

        // Named tolerances: `#define EPS 1e-12`, `const double kEps = 1e-12;`, `__constant__ double eps = 1e-12;`.
        const named = new Map<string, string>();
        for (const [k, v] of m.macros) if (tiny(v.replace(/^\(|\)$/g, ''))) named.set(k, v);
        for (const d of root.descendantsOfType('init_declarator')) {
          const v = d.childForFieldName('value');
          const decl = d.parent;
          if (v?.type === 'number_literal' && tiny(v.text) && decl?.type === 'declaration' && /\b(const|constexpr|__constant__)\b/.test(decl.text.split('=')[0])) {
            named.set(d.childForFieldName('declarator')?.text ?? '', v.text);
          }
        }

        const seen = new Set<number>();
        const consider = (n: SyntaxNode, tol: string) => {
          const fn = m.functionOf(n);
          if (!fn || !(fn.isKernel || fn.isDevice)) return;
          const cmp = comparisonOf(n);
          if (!cmp || seen.has(cmp.id) || !inFp32Path(cmp, fn)) return;
          seen.add(cmp.id);
          ctx.report({
            node: n,
            messageId: 'tolerance',
            data: { tol },
            fix: { description: 'Make the tolerance a template parameter (`{eps}` = 1e-7 for float, 1e-12 for double) or derive it from compute_t.' },
          });
        };
        for (const lit of root.descendantsOfType('number_literal')) if (tiny(lit.text)) consider(lit, lit.text);
        if (named.size) for (const id of root.descendantsOfType('identifier')) {
          const tol = named.get(id.text);
          if (tol && id.parent?.type !== 'init_declarator') consider(id, `${id.text} = ${tol}`);
        }
      },
    };

    /** A typedef target that can be float: `float`, a format placeholder or macro that is not pinned to double. */
    function canBeFloat(node: SyntaxNode): boolean {
      const t = node.text.trim();
      if (t === 'double' || t === 'long double') return false;
      if (/^__FSTR_\d+__$/.test(t)) return pythonValueCanBeFloat(fstringExpression(node));
      if (!/^__FMT_\w+?__$/.test(t)) return true;
      return pythonValueCanBeFloat(ctx.source.placeholders?.get(t) ?? null);
    }

    /** Text of the f-string interpolation a `__FSTR_n__` placeholder replaced, found by its Python line. */
    function fstringExpression(node: SyntaxNode): string | null {
      const parent = ctx.source.parent;
      const at = ctx.source.toFile(node.startPosition.row, node.startPosition.column);
      if (!parent || !at) return null;
      for (const i of parent.root.descendantsOfType('interpolation')) {
        if (parent.toFile(i.startPosition.row, i.startPosition.column)?.line !== at.line) continue;
        const e = i.namedChildren.find((c) => c.type !== 'format_specifier' && c.type !== 'type_conversion');
        if (e) return e.text;
      }
      return null;
    }

    /** The Python value given for the compute type: the literal "double", or a name every binding of which is "double", is fp64 only. */
    function pythonValueCanBeFloat(arg: string | null): boolean {
      if (arg === null) return true;
      const lit = /^\s*(['"])(\w+)\1\s*$/.exec(arg);
      if (lit) return lit[2] !== 'double';
      const parent = ctx.source.parent;
      if (!parent || !/^\w+$/.test(arg.trim())) return true;
      const values = parent.root.descendantsOfType('assignment').filter((a) => a.childForFieldName('left')?.text === arg.trim()).map((a) => a.childForFieldName('right')?.text.trim() ?? '');
      return !values.length || values.some((v) => !/^(['"])double\1$/.test(v));
    }
  },
});

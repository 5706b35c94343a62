import { luisaModel } from '../../../src/analysis/luisa.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** DSL value types (the `Var<T>` aliases of include/luisa/dsl/var.h); lower-case C++ types are host values. */
const DSL_TYPE = /^(luisa::compute::)?(Float|Int|UInt|Short|UShort|Half|SLong|ULong|Long|Double)([234](x[234])?)?$|^(luisa::compute::)?Var\s*<.+>$/;
const ZERO = /^(0+|0*\.0*|0x0+)([uUlLfFhH]|ul|UL|ull|ULL|ll|LL)*$/;
const MAKE_VECTOR = /^(luisa::)?make_(float|int|uint|short|ushort|half|slong|ulong|double)[234](x[234])?$/;
const LITERAL_TYPE: Array<[RegExp, string]> = [
  [/^0+[uU]$/, 'UInt'],
  [/^0+$/, 'Int'],
  [/^(0*\.0*|0+\.?)[fF]$/, 'Float'],
];

export default defineCheck({
  id: 'luisa/redundant-zero-init',
  pass: 3,
  severity: 'low',
  kind: 'maintainability',
  confidence: 'high',
  // Opt-in: seed 000's own examples zero-initialize explicitly, and on the benchmark corpus this
  // fired on nearly every accumulator (784 findings in 57 files), so it is a project style choice.
  status: 'retired',
  languages: ['luisa-dsl'],
  citation: '000 §0 Zero-initialization note ("All temporary local variables in DSL kernels … are created with a zero value automatically … excluding shared arrays")',
  summary: 'A DSL local explicitly initialized to zero, which the DSL already does.',
  why: 'Every DSL local (scalars, vectors, matrices, structs and arrays, but not Shared<T>) is created with a zero value automatically, so an explicit zero adds a store and noise (000 §0 zero-initialization note).',
  messages: {
    zero: '`{{code}}`: DSL locals are zero-initialized automatically; the explicit = 0 is redundant. Write `{{rewrite}}`.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.bodies.length) return;
        const text = ctx.source.text;
        const isZero = (v: SyntaxNode | null): boolean => {
          const n = unparen(v);
          if (!n) return false;
          if (n.type === 'number_literal') return ZERO.test(n.text.replace(/'/g, ''));
          if (n.type === 'initializer_list' || n.type === 'argument_list') return n.namedChildren.length === 1 && isZero(n.namedChildren[0]);
          if (n.type === 'call_expression') {
            const f = n.childForFieldName('function');
            const args = n.childForFieldName('arguments')?.namedChildren ?? [];
            const name = f?.type === 'template_function' ? f.childForFieldName('name')?.text : f?.text;
            if (!name || !args.length) return false;
            if (name === 'def' || MAKE_VECTOR.test(name)) return args.every((a) => isZero(a));
          }
          return false;
        };
        // The declared DSL type of `auto x = def(0u)` / `def<float>(0)`, for the rewrite.
        const defType = (v: SyntaxNode): string | null => {
          const n = unparen(v);
          if (n?.type !== 'call_expression') return null;
          const f = n.childForFieldName('function');
          if (f?.type === 'template_function') {
            const targs = f.childForFieldName('arguments');
            return f.childForFieldName('name')?.text === 'def' && targs ? `Var${targs.text}` : null;
          }
          if (f?.text !== 'def') return null;
          const lit = unparen(n.childForFieldName('arguments')?.namedChildren[0] ?? null);
          if (lit?.type !== 'number_literal') return null;
          return LITERAL_TYPE.find(([re]) => re.test(lit.text))?.[1] ?? null;
        };
        for (const b of m.bodies) {
          for (const d of b.body.descendantsOfType('declaration')) {
            if (m.bodyOf(d) !== b) continue;
            const typeNode = d.childForFieldName('type');
            if (!typeNode) continue;
            const typeText = typeNode.text.replace(/\s+/g, ' ');
            const isAuto = typeNode.type === 'placeholder_type_specifier';
            if (!isAuto && !DSL_TYPE.test(typeText)) continue;
            if (/\b(static|constexpr)\b/.test(text.slice(d.startIndex, typeNode.startIndex))) continue;
            const decls = d.namedChildren.filter((c) => c.id !== typeNode.id && c.type === 'init_declarator');
            if (decls.length !== 1 || d.namedChildren.some((c) => c.id !== typeNode.id && c.type !== 'init_declarator' && c.type !== 'comment')) continue;
            const dd = decls[0];
            const name = dd.childForFieldName('declarator');
            const value = dd.childForFieldName('value');
            if (name?.type !== 'identifier' || !value || !isZero(value)) continue;
            // `auto x = 0.f` is a host float; only `auto x = def(...)` is a DSL local.
            let rewriteType = typeText;
            if (isAuto) {
              const t = defType(value);
              const call = unparen(value);
              if (call?.type !== 'call_expression' || !/^def\b/.test(call.childForFieldName('function')?.text ?? '')) continue;
              if (!t) {
                report(d, null);
                continue;
              }
              rewriteType = t;
            }
            // Inside a device loop the initializer re-zeroes the variable every iteration; whether
            // a bare declaration there does too depends on where the backend places locals.
            if (m.deviceLoopsAround(d).length) continue;
            report(d, `${rewriteType} ${name.text};`);
          }
        }
        function report(d: SyntaxNode, rewrite: string | null): void {
          let fixText: string | null = null;
          if (rewrite && d.startPosition.row === d.endPosition.row) {
            const line = m.lineText(d);
            const col = d.startPosition.column;
            if (line !== null && line.slice(col, col + d.text.length) === d.text) fixText = line.slice(0, col) + rewrite + line.slice(col + d.text.length);
          }
          const description = rewrite ? `Drop the initializer: \`${rewrite}\` is zero by the DSL contract.` : 'Drop the zero initializer and declare the DSL variable with its type.';
          ctx.report({
            node: d,
            messageId: 'zero',
            data: { code: d.text.replace(/\s+/g, ' '), rewrite: rewrite ?? 'the declaration without its initializer' },
            fix: fixText !== null ? { description, replace: { from: d, text: fixText } } : { description },
          });
        }
      },
    };
  },
});

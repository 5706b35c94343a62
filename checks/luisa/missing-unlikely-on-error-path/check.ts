import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Hot host paths of 000 §9 (serialize/deserialize, validators, decode, hot dispatch). */
const HOT_FUNCTION = /serialize|deserialize|decode|encode|validate|parse|dispatch/i;
const COLD_FUNCTION = /describe|dump|format|to_string|print|debug/i;
/** `return <error enum>`: a value that names a failure. */
const ERROR_VALUE = /^(false|nullptr|NULL|std::nullopt|luisa::nullopt|-\s*1)$|(^|::|_)(k?err(or)?|fail(ed|ure)?|invalid|bad|corrupt(ed)?|mismatch|not_?found|unexpected|overflow|truncated)(\w*)$/i;
const ERROR_CALL = /^(LUISA_ERROR|LUISA_ERROR_WITH_LOCATION|std::unexpected|luisa::unexpected|unexpected)$/;
const NATIVE_LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);

/** The single statement of a consequence, or null when it holds more than one. */
function onlyStatement(cons: SyntaxNode): SyntaxNode | null {
  if (cons.type !== 'compound_statement') return cons;
  const stmts = cons.namedChildren.filter((c) => c.type !== 'comment');
  return stmts.length === 1 ? stmts[0] : null;
}

function isErrorExit(s: SyntaxNode): string | null {
  if (s.type === 'throw_statement') return 'throw';
  if (s.type === 'return_statement') {
    const v = s.namedChildren[0];
    if (!v) return null;
    const t = v.text.replace(/\s/g, '');
    if (ERROR_VALUE.test(t)) return `return ${v.text}`;
    if (v.type === 'call_expression' && ERROR_CALL.test(v.childForFieldName('function')?.text.replace(/\s/g, '') ?? '')) return `return ${quoteCode(v.text, 30)}`;
    return null;
  }
  if (s.type === 'expression_statement') {
    const c = s.namedChildren[0];
    if (c?.type === 'call_expression' && ERROR_CALL.test(c.childForFieldName('function')?.text ?? '')) return `${c.childForFieldName('function')!.text}(…)`;
  }
  return null;
}

export default defineCheck({
  id: 'luisa/missing-unlikely-on-error-path',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §9.2 Generic decision rule ([[unlikely]]: error/validation failures, early-return guards, sentinel cases); 000 §9.4 Workflow',
  summary: 'Early-return error guard in a hot serialize/validate/decode/dispatch function without `[[unlikely]]`.',
  why: 'Error and validation exits of hot host paths (serialize/deserialize, validators, decode, dispatch) almost never run, which is exactly where 000 §9.2 puts `[[unlikely]]` (after the condition) so the compiler lays out the common path first; the hint is free in the C++20 build (000 §9.4).',
  messages: {
    missing: 'Hot-path error/validation guard could be marked [[unlikely]] (after the condition): `if ({{cond}})` in `{{fn}}()` only does `{{exit}}`; write `if ({{cond}}) [[unlikely]] {`.',
  },
  fix: 'safe',
  create(ctx) {
    const ifs: SyntaxNode[] = [];
    return {
      if_statement(node) {
        ifs.push(node);
      },
      'source:exit'() {
        if (!ifs.length) return;
        const m = ctx.get(luisaModel);
        const text = ctx.source.text;
        const dslKeys = [...(ctx.source.dsl?.keys() ?? [])];
        for (const s of ifs) {
          if (m.isDeviceBranch(s) || m.dslKind(s) || m.inDsl(s)) continue;
          const cons = s.childForFieldName('consequence');
          const cond = s.childForFieldName('condition');
          if (!cons || !cond || cons.type === 'attributed_statement' || s.childForFieldName('alternative')) continue;
          // `else if (…)` continues a chain whose frequencies the author weighed together.
          if (s.parent?.type === 'else_clause') continue;
          const only = onlyStatement(cons);
          const exit = only ? isErrorExit(only) : null;
          if (!exit) continue;
          let fn: SyntaxNode | null = s.parent;
          while (fn && fn.type !== 'function_definition' && fn.type !== 'lambda_expression') fn = fn.parent;
          if (!fn || fn.type !== 'function_definition') continue;
          let d = fn.childForFieldName('declarator');
          while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
          const fnName = d?.childForFieldName('declarator')?.text.replace(/\s/g, '').split('::').pop() ?? '';
          if (!HOT_FUNCTION.test(fnName) || COLD_FUNCTION.test(fnName)) continue;
          // Generator code records DSL; its guards run once per kernel build, not per element.
          if (m.generatorOf(s)) continue;
          const condValue = m.conditionOf(s) ?? cond;
          // A guard that is the common exit of its loop (the end-of-range sentinel) is the author's call (000 §9.2).
          let sentinel = false;
          for (let cur = s.parent; cur && cur.id !== fn.id; cur = cur.parent) {
            if (!NATIVE_LOOPS.has(cur.type)) continue;
            const lc = cur.childForFieldName('condition');
            const loopVar = cur.type === 'for_statement' ? (cur.childForFieldName('initializer')?.descendantsOfType('identifier')[0]?.text ?? null) : cur.type === 'for_range_loop' ? cur.childForFieldName('declarator')?.text.replace(/^[&*\s]+/, '') ?? null : null;
            const unbounded = cur.type === 'for_statement' ? !lc : !!lc && /^\(?\s*(true|1)\s*\)?$/.test(lc.text);
            const usesVar = !!loopVar && new RegExp(`\\b${loopVar.replace(/\W/g, '')}\\b`).test(condValue.text);
            if (unbounded || usesVar || /\b(end|eof|empty|last|done|remaining)\b/.test(condValue.text)) sentinel = true;
            break;
          }
          if (sentinel) continue;
          // Insert the attribute after the closing parenthesis of the condition, on the line as written.
          const lineStart = text.lastIndexOf('\n', s.startIndex - 1) + 1;
          let lineEnd = text.indexOf('\n', cond.endIndex);
          if (lineEnd < 0) lineEnd = text.length;
          const touched = dslKeys.some((k) => k >= lineStart && k < lineEnd);
          const at = cond.endIndex - lineStart;
          const lines = text.slice(lineStart, lineEnd);
          const fix = {
            description: `Mark the error path: \`if (${quoteCode(condValue.text, 40)}) [[unlikely]] {\`.`,
            ...(touched ? {} : { replace: { from: s, to: cond, text: lines.slice(0, at) + ' [[unlikely]]' + lines.slice(at) } }),
          };
          ctx.report({ node: s, messageId: 'missing', data: { cond: quoteCode(condValue.text, 50), fn: fnName, exit: quoteCode(exit, 40) }, fix });
        }
      },
    };
  },
});

import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const OPTION_CALLS = ['*.compile_kernels', 'compile_kernels', 'cp.RawModule', 'cupy.RawModule', 'cp.RawKernel', 'cupy.RawKernel'];
const STD = /^(b|rb|br)?(['"])(-{1,2}std=)([^'"\s]+)\2$/i;

/** The option strings of an `options=` value: literals, names assigned once, and `+` concatenations. Null if any part is opaque. */
function optionStrings(m: PyModel, value: SyntaxNode, at: SyntaxNode, depth = 0): SyntaxNode[] | null {
  const v = unparen(value);
  if (!v || depth > 8) return null;
  if (v.type === 'tuple' || v.type === 'list') {
    const out: SyntaxNode[] = [];
    for (const e of v.namedChildren) {
      if (e.type === 'comment') continue;
      if (e.type === 'string') out.push(e);
      else {
        const inner = optionStrings(m, e, at, depth + 1);
        if (!inner) return null;
        out.push(...inner);
      }
    }
    return out;
  }
  if (v.type === 'binary_operator' && v.childForFieldName('operator')?.text === '+') {
    const l = optionStrings(m, v.childForFieldName('left')!, at, depth + 1);
    const r = optionStrings(m, v.childForFieldName('right')!, at, depth + 1);
    return l && r ? [...l, ...r] : null;
  }
  if (v.type === 'list_splat' || v.type === 'parenthesized_list_splat') return v.namedChildren[0] ? optionStrings(m, v.namedChildren[0], at, depth + 1) : null;
  if (v.type === 'identifier') {
    for (const scope of [m.scopeOf(at), m.source.root]) {
      const list = m.assignmentsIn(scope).get(v.text);
      if (!list) continue;
      if (list.length !== 1 || list[0].value.type === 'assignment') return null;
      return optionStrings(m, list[0].value, list[0].node, depth + 1);
    }
  }
  return null;
}

export default defineCheck({
  id: 'nvrtc/std-flag-convention',
  pass: 6,
  severity: 'low',
  kind: 'maintainability',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §7.4 Useful NVRTC Compiler Flags (`--std=c++17`: "Default for NVRTC (vibeSpatial convention)")',
  summary: "NVRTC options that do not use the project's --std=c++17 convention.",
  why: 'The project compiles every NVRTC unit as C++17 (003 §7.4); a unit on another standard can reject or silently change shared device headers and splits the module cache by option set.',
  messages: {
    otherStd: "NVRTC options `{{code}}` do not use the project's --std={{std}} convention.",
    missingStd: "NVRTC options `{{code}}` do not use the project's --std={{std}} convention (no --std= flag).",
  },
  fix: 'safe',
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        const allowed = ctx.config.vocab.nvrtc_std_versions;
        const want = allowed[0] ?? 'c++17';
        const requiredStd = ctx.config.vocab.nvrtc_required_options.some((o) => /^-{1,2}std=/.test(o));
        const seen = new Set<number>();
        for (const call of m.source.root.descendantsOfType('call')) {
          if (!m.callMatches(call, OPTION_CALLS)) continue;
          const opt = pyArgs(call).keywords.get('options');
          if (!opt) continue;
          const strings = optionStrings(m, opt, call);
          if (!strings) continue;
          const stds = strings.filter((s) => STD.test(s.text));
          if (!stds.length && requiredStd && !seen.has(opt.id)) {
            seen.add(opt.id);
            ctx.report({ node: opt, messageId: 'missingStd', data: { code: opt.text.split('\n')[0].slice(0, 60), std: want }, fix: { description: `Add "--std=${want}" to the options.` } });
          }
          for (const s of stds) {
            if (seen.has(s.id)) continue;
            seen.add(s.id);
            const value = STD.exec(s.text)![4];
            if (allowed.includes(value)) continue;
            const replacement = s.text.replace(/std=[^'"\s]+/, `std=${want}`);
            const lines = ctx.linesOf(s);
            // Safe only when the flag is spelled once on its line: the rewrite then touches nothing else.
            const safe = lines.split(s.text).length === 2;
            ctx.report({
              node: s,
              messageId: 'otherStd',
              data: { code: s.text, std: want },
              fix: safe ? { description: `Use --std=${want}.`, replace: { from: s, text: lines.replace(s.text, replacement) } } : { description: `Use --std=${want}.` },
            });
          }
        }
      },
    };
  },
});

import { pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { collectSingleAssignments, flatten } from '../../../src/sources/nvrtc.js';
import { NVRTC_COLD } from '../../../src/config/costs.js';

/** One piece of a template a `.format(...)` call renders, with what that call can fill in. */
interface Template {
  strings: SyntaxNode[];
  /** Keyword names every `.format` call passes, or null when some call passes `**kw` (any name may be filled). */
  keywords: Set<string> | null;
  /** Some call passes positional arguments, so `{}` / `{0}` are fields. */
  positional: boolean;
  name: string;
}

interface BadBrace {
  index: number;
  kind: 'brace' | 'field';
  text: string;
}

/**
 * The scan `str.format` itself does (Python's `MarkupIterator`): `{{`/`}}` are literal braces; any
 * other `{` opens a replacement field that must be `{name[.attr|[key]]*[!conv][:spec]}`; a lone `}`
 * is `ValueError: Single '}' encountered`. A C++ block `{ a[0] = 0; }` therefore becomes the field
 * name ` a[0] = 0; ` and raises KeyError. The scan goes on after an error, reading the bad brace as
 * the literal the author meant, so that doubling every reported brace yields a valid template.
 */
function scan(raw: string, t: Template): BadBrace[] {
  const out: BadBrace[] = [];
  let i = 0;
  while (i < raw.length) {
    const ch = raw[i];
    if ((ch === '{' || ch === '}') && raw[i + 1] === ch) {
      i += 2;
      continue;
    }
    if (ch === '}') {
      out.push({ index: i, kind: 'brace', text: '}' });
      i++;
      continue;
    }
    if (ch !== '{') {
      i++;
      continue;
    }
    const m = /^\{([A-Za-z_]\w*|\d*)((?:\.[A-Za-z_]\w*|\[[^\]{}]*\])*)(![rsa])?(:[^{}]*(?:\{[^{}]*\}[^{}]*)*)?\}/.exec(raw.slice(i, i + 200));
    if (!m) {
      out.push({ index: i, kind: 'brace', text: '{' });
      i++;
      continue;
    }
    const field = m[1];
    // `{}` / `{0}` with keyword-only `.format(...)` is IndexError; `{n}` not passed is KeyError.
    const numeric = field === '' || /^\d+$/.test(field);
    const missing = numeric ? !t.positional : t.keywords !== null && !t.keywords.has(field);
    if (missing) {
      if (numeric || (m[2] ?? '') !== '') out.push({ index: i, kind: 'brace', text: '{' }, { index: i + m[0].length - 1, kind: 'brace', text: '}' });
      else out.push({ index: i, kind: 'field', text: m[0] });
    }
    i += m[0].length;
  }
  return out;
}

function analyse(ctx: CheckContext): void {
  const text = ctx.source.text;
  if (!text.includes('.format') || !/__global__|__device__/.test(text)) return;
  const root = ctx.source.root;
  const assigns = collectSingleAssignments(root);
  const templates = new Map<string, Template>();
  for (const call of root.descendantsOfType('call')) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'format') continue;
    let recv = unparen(fn.childForFieldName('object'));
    if (!recv) continue;
    let name = recv.type === 'identifier' ? recv.text : '';
    // `self._TEMPLATE.format(...)`: the class-body assignment of `_TEMPLATE`.
    if (recv.type === 'attribute') {
      const attr = recv.childForFieldName('attribute')?.text ?? '';
      const v = assigns.get(attr);
      if (!v) continue;
      name = attr;
      recv = v;
    }
    const strings = flatten(recv, assigns)
      .filter((p) => p.kind === 'string')
      .map((p) => p.node)
      // f-strings have their own brace rules and are evaluated before `.format` ever runs.
      .filter((s) => !/f/i.test(s.children.find((c) => c.type === 'string_start')?.text ?? ''));
    if (!strings.length || !strings.some((s) => /__global__|__device__/.test(s.text))) continue;
    const args = pyArgs(call);
    const splat = call.childForFieldName('arguments')?.namedChildren.some((a) => a.type === 'dictionary_splat' || a.type === 'list_splat') ?? false;
    const key = strings.map((s) => s.startIndex).join(',');
    const prev = templates.get(key);
    const kws = splat ? null : new Set(args.keywords.keys());
    if (!prev) {
      templates.set(key, { strings, keywords: kws, positional: args.positional.length > 0 || splat, name: name || 'template' });
    } else {
      // A field is valid when some call fills it; report only what every call leaves unfilled.
      if (prev.keywords && kws) for (const k of kws) prev.keywords.add(k);
      else prev.keywords = null;
      prev.positional ||= args.positional.length > 0 || splat;
    }
  }
  const lines = text.split('\n');
  const lineStarts: number[] = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const rowOf = (idx: number) => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= idx) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  for (const t of templates.values()) {
    const byRow = new Map<number, Array<BadBrace & { at: number }>>();
    for (const s of t.strings) {
      const start = s.children.find((c) => c.type === 'string_start');
      const end = s.children.find((c) => c.type === 'string_end');
      if (!start || !end) continue;
      for (const b of scan(text.slice(start.endIndex, end.startIndex), t)) {
        const at = start.endIndex + b.index;
        const row = rowOf(at);
        byRow.set(row, [...(byRow.get(row) ?? []), { ...b, at }]);
      }
    }
    for (const [row, bads] of byRow) {
      const node = nodeOnRow(t.strings, row, lineStarts[row], lines[row]);
      if (!node) continue;
      const line = lines[row];
      const code = line.trim().length > 70 ? line.trim().slice(0, 67) + '...' : line.trim();
      const braces = bads.filter((b) => b.kind === 'brace');
      if (braces.length) {
        let fixed = line;
        for (const b of [...braces].sort((x, y) => y.at - x.at)) {
          const col = b.at - lineStarts[row];
          fixed = fixed.slice(0, col) + b.text + fixed.slice(col);
        }
        ctx.report({
          node,
          messageId: 'unescaped',
          data: { name: t.name, brace: braces[0].text, code },
          fix: { description: `Double the C++ braces: \`${fixed.trim()}\``, replace: { from: node, text: fixed } },
        });
      } else {
        ctx.report({ node, messageId: 'unknownField', data: { name: t.name, field: bads[0].text, code } });
      }
    }
  }
}

/**
 * A node covering `row` of a template string. tree-sitter has no node per line of a multi-line
 * string, so a line-sized stand-in is built from the string's content node with just what a finding
 * and a whole-line fix read (positions, indices, text, parent).
 */
function nodeOnRow(strings: SyntaxNode[], row: number, lineStart: number, line: string): SyntaxNode | null {
  const s = strings.find((x) => row >= x.startPosition.row && row <= x.endPosition.row);
  if (!s) return null;
  const startCol = row === s.startPosition.row ? s.startPosition.column : 0;
  const endCol = row === s.endPosition.row ? s.endPosition.column : line.length;
  const view = {
    type: 'string_content',
    startPosition: { row, column: startCol },
    endPosition: { row, column: endCol },
    startIndex: lineStart + startCol,
    endIndex: lineStart + endCol,
    text: line.slice(startCol, endCol),
    parent: s,
  };
  return view as unknown as SyntaxNode;
}


export default defineCheck({
  id: 'nvrtc/format-template-unescaped-braces',
  pass: 6,
  severity: 'low-medium',
  kind: 'correctness',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §7.1 Template Specialization for Precision Dispatch (the template escapes C++ braces as `{{`/`}}` because it is rendered with `str.format`)',
  summary: 'Kernel template rendered with str.format whose C++ braces are not doubled.',
  why: 'str.format reads every single `{` as a replacement field, so the template raises KeyError/ValueError the first time it is rendered, before NVRTC ever sees it, turning a JIT unit (' + NVRTC_COLD + ') into a crash at run time (003 §7.1, §7.3).',
  messages: {
    unescaped:
      "Kernel template {{name}} rendered with .format() contains an unescaped '{{brace}}' (C++ brace) in `{{code}}`; str.format will raise KeyError/ValueError at run time. Use `{{` and `}}`.",
    unknownField:
      'Kernel template {{name}} rendered with .format() contains `{{field}}` in `{{code}}`, which no .format() call fills; str.format will raise KeyError at run time. Pass it, or double the braces if it is C++.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        analyse(ctx);
      },
    };
  },
});

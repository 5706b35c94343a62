/**
 * LuisaCompute DSL normalization (catalog §1.3). The control-flow macros (`$if`, `$for`, ...) are
 * not C++ to tree-sitter-cpp: `$if (c) { … };` parses as a call followed by a block, and
 * `} $else {` as an ERROR. They are rewritten in place into C++ statements of the same length
 * (every character keeps its index, line breaks included) and each rewrite is recorded by the
 * index of the keyword it produced.
 */
import type { SyntaxNode } from '../core/types.js';
import { codeView } from './cuda-mask.js';
import type { DslKind } from './types.js';

const MACRO = /(?<![\w$])\$(if|elif|else|while|for|loop|switch|case|default|shared|outline|autodiff)(?![\w$])/g;

/**
 * Same-length rewrites (the key is the index of the produced keyword):
 *   `$if` → ` if`, `$else` → ` else`, `$while` → ` while`, `$switch` → ` switch`,
 *   `$for` → ` if ` (the `(i, 0u, n)` list parses as a comma_expression), `$case` → ` if  `,
 *   `$default` → ` if(1)  `, `$shared` → ` Shared` (no entry),
 *   `$outline` / `$autodiff` → spaces (the block becomes a compound_statement; no entry),
 *   `$elif` → `else if` and `$loop` → `for(;;)`, each taking the two missing characters from the
 *   blanks around the macro (`} $elif (c)` → `}else if(c)`, `  $loop {` → `for(;;) {`).
 * Without two such blanks (`}$elif(c)`, `$loop{` at column 0), `$elif` → ` if  ` (a sibling
 * if_statement instead of one nested in the else_clause; still recorded as dsl-elif) and
 * `$loop` → `if(1)` (an if_statement recorded as dsl-loop). `$break`, `$continue`, `$return`
 * and the `$float`-style type macros already parse as identifiers and are left alone.
 */
export function normalizeLuisa(text: string): { text: string; dsl: Map<number, DslKind> } {
  const view = codeView(text);
  const out = text.split('');
  const dsl = new Map<number, DslKind>();
  let written = 0;
  const put = (at: number, s: string, kind?: DslKind, keyword = 0): void => {
    for (let k = 0; k < s.length; k++) out[at + k] = s[k];
    if (kind) dsl.set(at + keyword, kind);
    written = at + s.length;
  };
  // `else if` and `for(;;)` are two characters longer than `$elif` and `$loop`: blanks around the
  // macro (those before it first, never ones already rewritten) pay for them.
  const widen = (at: number, len: number, s: string): number => {
    let before = 0;
    while (at - before - 1 >= written && /[ \t]/.test(view[at - before - 1])) before++;
    if (before > 0 && /[\w$]/.test(view[at - before - 1] ?? '')) before--;
    let after = 0;
    while (/[ \t]/.test(view[at + len + after] ?? '')) after++;
    const need = s.length - len;
    if (before + after < need) return -1;
    const from = at - Math.min(before, need);
    put(from, s);
    return from;
  };

  for (const m of view.matchAll(MACRO)) {
    const at = m.index;
    switch (m[1]) {
      case 'if': put(at, ' if', 'dsl-if', 1); break;
      case 'else': put(at, ' else', 'dsl-else', 1); break;
      case 'while': put(at, ' while', 'dsl-while', 1); break;
      case 'switch': put(at, ' switch', 'dsl-switch', 1); break;
      case 'for': put(at, ' if ', 'dsl-for', 1); break;
      case 'case': put(at, ' if  ', 'dsl-case', 1); break;
      case 'default': put(at, ' if(1)  ', 'dsl-default', 1); break;
      case 'shared': put(at, ' Shared'); break;
      case 'outline':
      case 'autodiff': put(at, ' '.repeat(m[0].length)); break;
      case 'elif': {
        const from = widen(at, 5, 'else if');
        if (from < 0) put(at, ' if  ', 'dsl-elif', 1);
        else dsl.set(from + 5, 'dsl-elif');
        break;
      }
      case 'loop': {
        const from = widen(at, 5, 'for(;;)');
        if (from < 0) put(at, 'if(1)', 'dsl-loop');
        else dsl.set(from, 'dsl-loop');
        break;
      }
    }
  }
  // `class LC_RUNTIME_API Device : public Resource`: an export macro between the class key and the
  // name is an ERROR to tree-sitter-cpp that swallows the class head; blank it (same length).
  for (const m of view.matchAll(/\b(?:class|struct)\s+([A-Z][A-Z0-9_]*_(?:API|EXPORT|DLL)\w*)(?=\s+[A-Za-z_]\w*\s*(?:final\b\s*)?[:{;])/g)) {
    put(m.index + m[0].length - m[1].length, ' '.repeat(m[1].length));
  }
  return { text: out.join(''), dsl };
}

/**
 * The DSL kind of an if/while/for statement (or else_clause) produced by `normalizeLuisa`, found
 * by the index of its keyword, its first child; undefined for native C++ control flow.
 */
export function dslKindAt(dsl: Map<number, DslKind>, node: SyntaxNode): DslKind | undefined {
  return dsl.get((node.firstChild ?? node).startIndex);
}

import { RE2JS } from 're2js';

/**
 * Regular expressions from text that is not ours. Code text (identifiers, declarators, macro
 * names) goes into a pattern only through escapeRe()/alternation(), so it always matches itself
 * literally: an unescaped declarator with C comments between its parameters turns into nested quantifiers
 * that backtrack for minutes. Patterns a user writes (config `hot_path_functions`, `setup_functions`)
 * run on RE2 (re2js: linear time in the subject, no backreferences or lookaround), never on the
 * backtracking engine. A test (test/engine/regex-safety.test.ts) checks every run-time RegExp
 * constructor call in src/ and checks/.
 */
export function escapeRe(s: string | number): string {
  return String(s).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `a|b|c` of literal names; never empty (an empty list matches nothing). */
export function alternation(names: readonly string[]): string {
  return names.length ? names.map(escapeRe).join('|') : '(?!)';
}

/** The part of RegExp a config pattern is used through. Plain data, so it survives postMessage. */
export interface NamePattern {
  readonly source: string;
  test(s: string): boolean;
}

const compiled = new Map<string, RE2JS>();

/** Throws SyntaxError-like Error with RE2's message when the pattern is not valid RE2 syntax. */
export function namePattern(source: string): NamePattern {
  let re = compiled.get(source);
  if (!re) {
    re = RE2JS.compile(source);
    if (compiled.size > 256) compiled.clear();
    compiled.set(source, re);
  }
  const r = re;
  return { source, test: (s: string) => r.test(s) };
}

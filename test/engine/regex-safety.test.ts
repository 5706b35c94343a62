import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alternation, escapeRe, namePattern } from '../../src/core/regex.js';

const ROOT = join(import.meta.dirname, '..', '..');

function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The text of the call's first argument: from after `new RegExp(` to the first top-level `,` or `)`. */
function firstArg(text: string, start: number): string {
  let depth = 0;
  let i = start;
  let quote: string | null = null;
  const tpl: number[] = [];
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') { i++; continue; }
      if (quote === '`' && c === '$' && text[i + 1] === '{') { tpl.push(depth); depth++; quote = null; i++; continue; }
      if (c === quote) quote = null;
      continue;
    }
    if (c === '/' && /[(,=:|&!?]\s*$/.test(text.slice(start, i)) ) {
      // a regex literal inside the argument (e.g. `.replace(/\W/g, '')`): skip to its end
      let j = i + 1;
      let cls = false;
      for (; j < text.length; j++) {
        const d = text[j]!;
        if (d === '\\') { j++; continue; }
        if (d === '[') cls = true;
        else if (d === ']') cls = false;
        else if (d === '/' && !cls) break;
      }
      i = j;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') { quote = c; continue; }
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) break;
      depth--;
      if (c === '}' && tpl.length && tpl[tpl.length - 1] === depth) { tpl.pop(); quote = '`'; }
    } else if (c === ',' && depth === 0) break;
  }
  return text.slice(start, i).trim();
}

/** Interpolated expressions of a template literal (top level of the literal). */
function interpolations(arg: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < arg.length; i++) {
    if (arg[i] === '\\') { i++; continue; }
    if (arg[i] === '$' && arg[i + 1] === '{') {
      let depth = 1;
      let j = i + 2;
      for (; j < arg.length && depth; j++) {
        if (arg[j] === '{') depth++;
        else if (arg[j] === '}') depth--;
      }
      out.push(arg.slice(i + 2, j - 1).trim());
      i = j - 1;
    }
  }
  return out;
}

const ESCAPER = /^(escapeRe|esc|alternation)\(/;
/** What may be spliced into a pattern: escaped text, a module constant (UPPER_CASE), another pattern's `.source`, text reduced to word characters. */
function safeExpr(e: string): boolean {
  return (
    ESCAPER.test(e) ||
    /^[A-Z][A-Z0-9_]*$/.test(e) ||
    /^[\w.]+\.source$/.test(e) ||
    /\.replace\(\/(\\W|\[\^\\w\])\/g, ''\)$/.test(e) ||
    /^[\w.]+\.map\((esc|escapeRe)\)\.join\('\|'\)$/.test(e) ||
    e.endsWith(".replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')")
  );
}

function violations(): string[] {
  const bad: string[] = [];
  for (const f of [...files(join(ROOT, 'src')), ...files(join(ROOT, 'checks'))]) {
    const text = readFileSync(f, 'utf8');
    if (/\besc\(/.test(text) && !/import \{[^}]*escapeRe as esc[^}]*\} from/.test(text) && !/const esc = \(s: string\)(: string)? => s\.replace\(\/\[\.\*\+\?\^\$\{\}\(\)\|\[\\\]\\\\\]\/g, '\\\\\$&'\)/.test(text)) {
      if (/new RegExp\([^;]*\besc\(/.test(text)) bad.push(`${relative(ROOT, f)}: esc() is not the standard escape`);
    }
    for (const m of text.matchAll(/new RegExp\(/g)) {
      const line = text.slice(0, m.index).split('\n').length;
      const lineText = text.split('\n')[line - 1]!;
      if (/regex-safe: \S/.test(lineText)) continue;
      const arg = firstArg(text, m.index + m[0].length);
      const where = `${relative(ROOT, f)}:${line}`;
      if (/^(['"])(?:(?!\1).)*\1$/.test(arg)) continue;
      if (arg.startsWith('`') && arg.endsWith('`') && !arg.slice(1, -1).includes('`')) {
        for (const e of interpolations(arg)) if (!safeExpr(e)) bad.push(`${where}: \${${e}}`);
        continue;
      }
      if (!safeExpr(arg)) bad.push(`${where}: ${arg}`);
    }
  }
  return bad;
}

describe('regular expressions built at run time', () => {
  it('splice only escaped text, constants or other patterns into new RegExp (src/ and checks/)', () => {
    const bad = violations();
    if (bad.length) console.log(bad.join("\n"));
    expect(bad).toEqual([]);
  });
  it('the scanner sees an unescaped splice', () => {
    expect(interpolations('`\\\\b${name}\\\\b|${esc(x)}`')).toEqual(['name', 'esc(x)']);
    expect(safeExpr('name')).toBe(false);
    expect(safeExpr("esc(name)")).toBe(true);
    expect(safeExpr("v.replace(/\\W/g, '')")).toBe(true);
    expect(firstArg("`^${v}\\\\s*(>>=)`, 'g')", 0)).toBe('`^${v}\\\\s*(>>=)`');
  });
  it('escapes every metacharacter', () => {
    const s = 's(int /*x*//*x*/a)[0]+{1}|^$.?\\';
    expect(new RegExp(`^${escapeRe(s)}$`).test(s)).toBe(true);
    expect(new RegExp(`^(?:${alternation(['a.b', 'c'])})$`).test('axb')).toBe(false);
    expect(new RegExp(alternation([])).test('anything')).toBe(false);
  });
  it('config patterns run on RE2: nested quantifiers answer at once', () => {
    const p = namePattern('^(a+)+$');
    expect(p.test('a'.repeat(5000) + '!')).toBe(false);
    expect(p.test('aaa')).toBe(true);
  });
});

import type { Language } from '../core/types.js';
import { maskCuda } from './cuda-mask.js';
import { normalizeLuisa } from './luisa.js';
import { extractKernels, mapKernelPosition } from './nvrtc.js';
import { cudaGrammarAvailable, errorRegions, parseText, type Grammar } from './parsers.js';
import type { Source } from './types.js';

/** A piece of a file to analyse: the whole post-change file, or the new side of one hunk. */
export interface Unit {
  text: string;
  /** 1-based file line of the first line of `text`. */
  firstLine: number;
  label: string;
  wholeFile: boolean;
}

const PY_CLAUSE = /^(elif\b|else\s*:|except\b|finally\s*:)/;

/**
 * A hunk that starts inside an indented block does not parse on its own. Synthetic `if 1:` lines,
 * one per indentation level the hunk uses, re-open the blocks; they map to no file line.
 */
function pythonHunkPrefix(text: string): string {
  const lines = text.split('\n');
  const first = lines.find((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
  if (!first) return '';
  const indentOf = (l: string) => l.length - l.trimStart().length;
  const firstIndent = indentOf(first);
  const levels = new Set<number>([0]);
  for (const l of lines) {
    if (l.trim() === '' || l.trimStart().startsWith('#')) continue;
    const d = indentOf(l);
    if (d < firstIndent) levels.add(d);
  }
  levels.add(firstIndent);
  const sorted = [...levels].sort((a, b) => a - b);
  let prefix = '';
  for (let i = 0; i + 1 < sorted.length; i++) prefix += ' '.repeat(sorted[i]) + 'if 1:\n';
  const firstTrim = first.trimStart();
  if (PY_CLAUSE.test(firstTrim)) {
    const pad = ' '.repeat(firstIndent);
    const head = /^(except|finally)/.test(firstTrim) ? 'try:' : 'if 1:';
    prefix += `${pad}${head}\n${pad}    pass\n`;
  }
  return prefix;
}

/** Braces a C++ hunk closes without opening: re-open them inside a synthetic function. */
function cppHunkWrap(text: string): { prefix: string; suffix: string } {
  let depth = 0;
  let min = 0;
  const stripped = text.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g, (m) => m.replace(/[^\n]/g, ' '));
  for (const ch of stripped) {
    if (ch === '{') depth++;
    else if (ch === '}') {
      depth--;
      if (depth < min) min = depth;
    }
  }
  if (min === 0) return { prefix: '', suffix: '' };
  const k = -min;
  const prefix = 'void __gpu_review_hunk__() {' + ' {'.repeat(k - 1) + '\n';
  const remaining = depth + k;
  return { prefix, suffix: '\n' + '}'.repeat(Math.max(0, remaining)) + '\n' };
}

function countLines(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 10) n++;
  return n;
}

function makeSource(
  path: string,
  language: Language,
  label: string,
  text: string,
  grammar: Grammar,
  timeoutMs: number,
  toFile: Source['toFile'],
  wholeFile: boolean,
): Source {
  const tree = parseText(grammar, text, timeoutMs);
  const { ranges, coverage } = errorRegions(tree.rootNode, text.length);
  return { path, language, label, text, tree, root: tree.rootNode, toFile, parseCoverage: coverage, errorRanges: ranges, wholeFile };
}

/**
 * Turn one unit of a file into its sources: the unit itself and, for Python, one CUDA source per
 * kernel string. Throws ParseTimeout when a parse exceeds its budget.
 */
export function buildSources(path: string, language: Language, unit: Unit, timeoutMs: number): Source[] {
  const out: Source[] = [];
  if (language === 'python') {
    const prefix = unit.wholeFile ? '' : pythonHunkPrefix(unit.text);
    const pLines = countLines(prefix);
    const text = prefix + unit.text;
    const toFile = (row: number, column: number) => (row < pLines ? null : { line: unit.firstLine + row - pLines, column: column + 1 });
    const py = makeSource(path, 'python', unit.label, text, 'python', timeoutMs, toFile, unit.wholeFile);
    out.push(py);
    for (const k of extractKernels(py.root, text)) {
      const masked = maskCuda(k.text, cudaGrammarAvailable() ? 'cuda' : 'cpp').text;
      const kToFile = (row: number, column: number) => {
        const p = mapKernelPosition(k, row, column);
        return p ? toFile(p.row, p.column) : null;
      };
      const anchor = toFile(k.anchor.startPosition.row, k.anchor.startPosition.column);
      const label = `kernel string${k.variable ? ` ${k.variable}` : ''} at line ${anchor?.line ?? '?'}`;
      const ks = makeSource(path, 'nvrtc-in-python', label, masked, cudaGrammarAvailable() ? 'cuda' : 'cpp', timeoutMs, kToFile, unit.wholeFile);
      ks.placeholders = k.placeholders;
      ks.parent = py;
      (py.kernels ??= []).push(ks);
      out.push(ks);
    }
    return out;
  }
  const { prefix, suffix } = unit.wholeFile ? { prefix: '', suffix: '' } : cppHunkWrap(unit.text);
  const pLines = countLines(prefix);
  const toFile = (row: number, column: number) => {
    const line = unit.firstLine + row - pLines;
    return row < pLines || line >= unit.firstLine + countLinesCached(unit) ? null : { line, column: column + 1 };
  };
  if (language === 'luisa-dsl') {
    const norm = normalizeLuisa(prefix + unit.text + suffix);
    const s = makeSource(path, language, unit.label, norm.text, 'cpp', timeoutMs, toFile, unit.wholeFile);
    s.dsl = norm.dsl;
    out.push(s);
    return out;
  }
  const grammar: Grammar = cudaGrammarAvailable() ? 'cuda' : 'cpp';
  const masked = maskCuda(prefix + unit.text + suffix, grammar).text;
  out.push(makeSource(path, language, unit.label, masked, grammar, timeoutMs, toFile, unit.wholeFile));
  return out;
}

const lineCounts = new WeakMap<Unit, number>();
function countLinesCached(u: Unit): number {
  let n = lineCounts.get(u);
  if (n === undefined) {
    n = countLines(u.text) + (u.text.endsWith('\n') ? 0 : 1);
    lineCounts.set(u, n);
  }
  return n;
}

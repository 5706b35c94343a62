import Parser from 'tree-sitter';
import { createRequire } from 'node:module';
import type { SyntaxNode, Tree } from '../core/types.js';

export type Grammar = 'cuda' | 'cpp' | 'python';

import { installTreeSitterPatches, mirrorInstalled } from './tree-sitter/patches.js';
import { errorNodeRanges } from './tree-sitter/mirror.js';

// The tree mirror and the binding patches, installed once before the first parse.
installTreeSitterPatches();

const require = createRequire(import.meta.url);

let cudaLanguage: unknown | null | undefined;
/**
 * tree-sitter-cuda declares a peer dependency on an older tree-sitter; with the package.json
 * override it loads against 0.25. If it ever does not, CUDA falls back to tree-sitter-cpp plus
 * masking of the launch syntax.
 */
export function cudaGrammarAvailable(): boolean {
  if (cudaLanguage === undefined) {
    if (process.env.GPU_REVIEW_NO_CUDA_GRAMMAR === '1') {
      cudaLanguage = null;
    } else {
      try {
        cudaLanguage = require('tree-sitter-cuda');
        new Parser().setLanguage(cudaLanguage as Parser.Language);
      } catch {
        cudaLanguage = null;
      }
    }
  }
  return cudaLanguage !== null;
}

const parsers = new Map<Grammar, Parser>();

function parserFor(g: Grammar): Parser {
  let p = parsers.get(g);
  if (!p) {
    p = new Parser();
    // Grammars load on first use: a diff of Python alone never loads the C++ ones, and the reverse.
    const lang = g === 'python' ? require('tree-sitter-python') : g === 'cuda' && cudaGrammarAvailable() ? cudaLanguage : require('tree-sitter-cpp');
    p.setLanguage(lang as Parser.Language);
    parsers.set(g, p);
  }
  return p;
}

export class ParseTimeout extends Error {}

/**
 * Parse with a wall-clock budget, so one pathological file cannot stall a review. The default
 * buffer is too small for large inputs: the bindings need one at least as long as the text.
 */
export function parseText(g: Grammar, text: string, timeoutMs: number): Tree {
  const p = parserFor(g);
  // The native timeout, not a progress callback: calling back into JS every few hundred parse
  // steps costs about 30 % of the parse.
  const micros = Math.round(timeoutMs * 1000);
  if (p.getTimeoutMicros() !== micros) p.setTimeoutMicros(micros);
  let tree: Tree | null | undefined;
  try {
    tree = p.parse(text, null, { bufferSize: Math.max(32 * 1024, text.length * 2 + 16) });
  } catch {
    tree = null;
  }
  if (!tree) {
    p.reset();
    throw new ParseTimeout(`parse exceeded ${timeoutMs} ms`);
  }
  return tree;
}

/** ERROR and MISSING regions, and the share of text outside them. */
export function errorRegions(root: SyntaxNode, length: number): { ranges: Array<[number, number]>; coverage: number } {
  const ranges: Array<[number, number]> = mirrorInstalled ? errorNodeRanges(root) : [];
  if (!mirrorInstalled && root.hasError) {
    const cursor = root.walk();
    let done = false;
    while (!done) {
      const n = cursor.currentNode;
      if (n.type === 'ERROR' || n.isMissing) {
        ranges.push([n.startIndex, Math.max(n.endIndex, n.startIndex + 1)]);
      } else if (n.hasError && cursor.gotoFirstChild()) {
        continue;
      }
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) {
          done = true;
          break;
        }
      }
    }
  }
  let bad = 0;
  let lastEnd = 0;
  for (const [s, e] of ranges) {
    const from = Math.max(s, lastEnd);
    if (e > from) bad += e - from;
    lastEnd = Math.max(lastEnd, e);
  }
  const coverage = length === 0 ? 1 : Math.max(0, 1 - bad / length);
  return { ranges, coverage };
}

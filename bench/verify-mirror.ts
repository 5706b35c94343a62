/**
 * Checks the tree mirror (src/sources/tree-sitter/mirror.ts) against the native tree-sitter binding on
 * every tree a review of the benchmark corpus builds (CUDA, Python, kernel strings, LuisaCompute):
 * for every node, id, type, range, positions, MISSING/error flags, parent, children, named children,
 * next sibling and every field of the language.
 *
 *   npm run build && node dist/bench/verify-mirror.js [--shallow]
 */
import { mirrorInstalled } from '../src/sources/tree-sitter/patches.js';
import { verifyTree } from '../src/sources/tree-sitter/mirror.js';
import { buildSources } from '../src/sources/build.js';
import { detectLanguage } from '../src/sources/detect.js';
import { resolveConfig } from '../src/config/schema.js';
import { CHECKS } from '../checks/registry.generated.js';
import { ensureCorpus, readCorpusFile } from './corpus.js';

async function main(): Promise<void> {
  if (!mirrorInstalled) throw new Error('the tree mirror is not installed (self-check failed or GPU_REVIEW_TREE_MIRROR=0)');
  const deep = !process.argv.includes('--shallow');
  const corpus = ensureCorpus();
  const config = resolveConfig({}, CHECKS.map((c) => c.id));
  let trees = 0;
  let bad = 0;
  for (const f of corpus.files) {
    const text = readCorpusFile(corpus, f);
    const lang = detectLanguage(f.path, text, config.vocab.kernel_macros).language;
    if (!lang) continue;
    for (const s of buildSources(f.path, lang, { text, firstLine: 1, label: 'file', wholeFile: true }, 60_000)) {
      trees++;
      const r = verifyTree(s.tree, deep);
      if (r) {
        bad++;
        if (bad <= 10) console.log(`${f.path} [${s.label}]: ${r}`);
      }
    }
    await new Promise((r) => setImmediate(r));
  }
  console.log(`${trees} trees, ${bad} with a mismatch`);
  if (bad) process.exit(1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

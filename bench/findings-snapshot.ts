/**
 * Findings of the benchmark corpus, for checking that a performance change leaves them identical:
 * runs `review()` once on the same all-added diff as `npm run bench` (default config, scope
 * 'added') and writes every finding (all fields, sorted), every file report and every error as
 * one JSON line each.
 *
 *   npm run build && node dist/bench/findings-snapshot.js [--out=FILE] [--compare=FILE] [--ignore-rules=PREFIX,...]
 *
 * Default output: bench/corpus/findings.jsonl. With --compare=FILE the new snapshot is diffed
 * against FILE and the process exits 1 on any difference. --ignore-rules leaves the findings of
 * rules with those id prefixes (and the per-file finding counts) out of the comparison, for rules
 * that were added or changed in between.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { review } from '../src/pipeline.js';
import { resolveConfig } from '../src/config/schema.js';
import { CHECKS } from '../src/engine/registry.generated.js';
import { addedFilesDiff, ensureCorpus, readCorpusFile } from './corpus.js';

function opt(name: string): string | undefined {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a?.slice(a.indexOf('=') + 1);
}

async function main(): Promise<void> {
  const corpus = ensureCorpus();
  const files = corpus.files.map((f) => ({ path: f.path, text: readCorpusFile(corpus, f) }));
  const config = resolveConfig({}, CHECKS.map((c) => c.id));
  const t0 = performance.now();
  const { result } = await review({ diff: addedFilesDiff(files), config, scope: 'added' });
  const secs = (performance.now() - t0) / 1000;
  const key = (f: (typeof result.findings)[number]) => `${f.path}\0${String(f.line).padStart(7)}\0${String(f.column).padStart(5)}\0${f.ruleId}\0${f.message}\0${f.fingerprint}`;
  const findings = [...result.findings].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const lines = [
    ...findings.map((f) => JSON.stringify({ finding: f })),
    ...result.files.map((f) => JSON.stringify({ file: f })),
    ...result.errors.map((e) => JSON.stringify({ error: e })),
  ];
  const out = opt('out') ?? path.join(corpus.root, 'findings.jsonl');
  writeFileSync(out, lines.join('\n') + '\n');
  console.log(`${findings.length} findings, ${result.files.length} files, ${result.errors.length} errors → ${out} (review ${secs.toFixed(1)} s)`);
  const cmp = opt('compare');
  if (cmp) {
    const ignore = (opt('ignore-rules') ?? '').split(',').filter(Boolean);
    const keep = (l: string) => {
      if (!ignore.length || !l) return l;
      const o = JSON.parse(l) as { finding?: { ruleId: string }; file?: { findings?: number } };
      if (o.finding && ignore.some((p) => o.finding!.ruleId.startsWith(p))) return null;
      if (o.file) delete o.file.findings;
      return JSON.stringify(o);
    };
    const old = readFileSync(cmp, 'utf8').split('\n').map(keep).filter((l) => l !== null);
    const now = (lines.join('\n') + '\n').split('\n').map(keep).filter((l) => l !== null);
    let diffs = 0;
    for (let i = 0; i < Math.max(old.length, now.length); i++) {
      if (old[i] !== now[i]) {
        if (diffs++ < 5) console.log(`line ${i + 1}:\n  - ${old[i]?.slice(0, 400)}\n  + ${now[i]?.slice(0, 400)}`);
      }
    }
    console.log(diffs ? `DIFFERENT from ${cmp}: ${diffs} line(s)` : `IDENTICAL to ${cmp} (${now.length - 1} lines)`);
    if (diffs) process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

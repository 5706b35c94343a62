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
 *
 * With --fixtures the input is every rule fixture instead (checks/<rule>/fixtures/** and
 * test/fixtures/shared/**, not .fixed/.md/.snap), each reviewed alone as an added file the way the
 * fixture harness does it (every rule, preview ones included, scope 'file', the whole file readable);
 * default output then bench/corpus/fixture-findings.jsonl. For proving a refactoring changed nothing.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { review } from '../src/review/pipeline.js';
import { resolveConfig } from '../src/config/schema.js';
import { CHECKS } from '../checks/registry.generated.js';
import { addedFilesDiff, ensureCorpus, readCorpusFile } from './corpus.js';
import type { ReviewResult } from '../src/core/types.js';

function opt(name: string): string | undefined {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a?.slice(a.indexOf('=') + 1);
}

async function main(): Promise<void> {
  const corpus = ensureCorpus();
  const t0 = performance.now();
  const result = process.argv.includes('--fixtures') ? await fixtureFindings(path.dirname(corpus.root)) : await corpusFindings(corpus);
  const secs = (performance.now() - t0) / 1000;
  const key = (f: (typeof result.findings)[number]) => `${f.path}\0${String(f.line).padStart(7)}\0${String(f.column).padStart(5)}\0${f.ruleId}\0${f.message}\0${f.fingerprint}`;
  const findings = [...result.findings].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const lines = [
    ...findings.map((f) => JSON.stringify({ finding: f })),
    ...result.files.map((f) => JSON.stringify({ file: f })),
    ...result.errors.map((e) => JSON.stringify({ error: e })),
  ];
  const out = opt('out') ?? path.join(corpus.root, process.argv.includes('--fixtures') ? 'fixture-findings.jsonl' : 'findings.jsonl');
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

async function corpusFindings(corpus: ReturnType<typeof ensureCorpus>): Promise<ReviewResult> {
  const files = corpus.files.map((f) => ({ path: f.path, text: readCorpusFile(corpus, f) }));
  const config = resolveConfig({}, CHECKS.map((c) => c.id));
  return (await review({ diff: addedFilesDiff(files), config, scope: 'added' })).result;
}

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((n) => (statSync(path.join(dir, n)).isDirectory() ? listFiles(path.join(dir, n)) : [path.join(dir, n)]));
}

/** Every rule fixture reviewed alone, as the fixture harness does; results merged in file order. */
async function fixtureFindings(benchDir: string): Promise<ReviewResult> {
  const root = path.dirname(benchDir);
  const files = [...listFiles(path.join(root, 'checks')).filter((f) => f.includes(`${path.sep}fixtures${path.sep}`)), ...listFiles(path.join(root, 'test', 'fixtures', 'shared'))].filter(
    (f) => !/\.(fixed|md|snap)$/.test(f),
  );
  const ids = CHECKS.map((c) => c.id);
  const retired = CHECKS.filter((c) => c.status === 'retired').map((c) => [c.id, 'on']);
  const config = resolveConfig({ enable_preview: true, rules: Object.fromEntries(retired) }, ids);
  const merged: ReviewResult = { findings: [], files: [], errors: [] };
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const m = /gpu-review-fixture:\s*path=(\S+)/.exec(text.split('\n')[0] ?? '');
    const p = m ? m[1] : `src/${path.relative(root, file)}`;
    const { result } = await review({
      diff: addedFilesDiff([{ path: p, text }]),
      config,
      scope: 'file',
      checks: CHECKS.filter((c) => c.requires !== 'compiler'),
      readFile: async (q) => (q === p ? text : null),
    });
    for (const f of result.findings) merged.findings.push({ ...f, path: `${path.relative(root, file)}|${f.path}` });
    merged.files.push(...result.files);
    merged.errors.push(...result.errors);
  }
  return merged;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

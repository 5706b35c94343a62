/**
 * Pass-7 figures on the development corpus: for every finding of every introducing diff (the fix
 * reversed, as corpus/runner.ts reviews it), whether a rewrite was built, whether it verified, and,
 * for the rows whose labelled lines it covers, the rewrite beside the real fix for a person to judge
 * (their judgements live in corpus/rewrites.tsv).
 *
 *   node dist/corpus/rewrites.js --mirrors DIR [--json FILE] [--show] [--no-compile]
 */
import { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { resolveConfig } from '../src/config/schema.js';
import { CHECKS } from '../checks/registry.generated.js';
import { review, type ReviewOutput } from '../src/review/pipeline.js';
import { isRewrite } from '../src/rewrite/apply.js';
import { runPass7, type Pass7Summary } from '../src/rewrite/index.js';
import { Git, loadCorpus, mirrorOf } from './runner.js';

interface Out {
  id: string;
  rule: string;
  line: number;
  onLabel: boolean;
  template?: string;
  status: string;
  declined?: string;
}

async function main(argv: string[]): Promise<number> {
  const opts = new Command().requiredOption('--mirrors <dir>').option('--json <file>').option('--show').option('--no-compile').parse(argv, { from: 'user' }).opts<{ mirrors: string; json?: string; show?: boolean; compile: boolean }>();
  const corpus = loadCorpus();
  const config = resolveConfig({}, CHECKS.map((c) => c.id));
  const total: Pass7Summary = { findings: 0, withRewrite: 0, verified: 0, unverified: 0, failed: 0, declined: 0, byTemplate: {} };
  const outs: Out[] = [];
  const seen = new Map<string, ReviewOutput>();
  for (const row of corpus.real) {
    const m = mirrorOf(opts.mirrors, row.repo);
    if (!m) continue;
    const git = new Git(m);
    const key = `${row.repo}\0${row.fix}\0${row.path}`;
    let out = seen.get(key);
    const fresh = !out;
    if (!out) {
      let diff: string;
      try {
        diff = git.diff(row.fix, row.parent, row.path);
      } catch {
        continue;
      }
      if (!diff.trim()) continue;
      out = await review({ diff, config, scope: 'added', readFile: async (p) => git.show(row.parent, p), workers: 0 });
      const s = await runPass7(out, { config, compile: opts.compile });
      for (const k of ['findings', 'withRewrite', 'verified', 'unverified', 'failed', 'declined'] as const) total[k] += s[k];
      for (const [t, n] of Object.entries(s.byTemplate)) total.byTemplate[t] = (total.byTemplate[t] ?? 0) + n;
      seen.set(key, out);
    }
    for (const f of out.result.findings) {
      if (f.path !== row.path) continue;
      const onLabel = f.line <= row.end && f.endLine >= row.start;
      if (!fresh && !onLabel) continue;
      const rw = f.rewrite;
      const o: Out = { id: row.id, rule: f.ruleId, line: f.line, onLabel, status: isRewrite(rw) ? rw.verification.status : rw && 'tried' in rw && rw.tried.length && /verification failed/.test(rw.declined) ? 'failed' : 'none' };
      if (isRewrite(rw)) o.template = rw.template;
      else if (rw && 'declined' in rw) o.declined = rw.declined;
      outs.push(o);
      if (opts.show && onLabel && isRewrite(rw)) {
        console.log(`\n##### ${row.id} ${f.ruleId} line ${f.line} [${rw.template}, ${rw.verification.status}] — ${row.note}`);
        console.log(rw.diff);
        console.log('----- real fix:');
        console.log(git.diff(row.parent, row.fix, row.path).split('\n').slice(0, 60).join('\n'));
      }
    }
  }
  console.log(JSON.stringify(total));
  if (opts.json) writeFileSync(opts.json, JSON.stringify({ total, findings: outs }, null, 1));
  return 0;
}

main(process.argv.slice(2)).then((c) => (process.exitCode = c));

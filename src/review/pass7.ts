/**
 * Pass 7 off the main thread, for the App and the service: each file's findings go to the review
 * pool (the `pass7` task of review-worker.ts) with what is left of the pass's budget, so the
 * webhook server and /healthz keep answering while rewrites are built and reviewed again, like
 * the review itself (issue #16). Without a pool (GPU_REVIEW_WORKERS=0, the TypeScript sources in
 * tests, checks that are not the built-in ones) it runs on this thread with the same budget.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { CheckDef } from '../engine/check.js';
import { isolatedTask, type Pass7Task, type Pass7FileResult } from './pool.js';
import type { Finding } from '../core/types.js';
import type { ReviewOutput } from './pipeline.js';
import { runPass7, type Pass7Summary } from '../rewrite/index.js';

export interface IsolatedPass7Options {
  config: ResolvedConfig;
  checks?: readonly CheckDef[];
  compile: boolean;
  budgetMs: number;
  select: (f: Finding) => boolean;
}

export function emptySummary(): Pass7Summary {
  return { findings: 0, withRewrite: 0, verified: 0, unverified: 0, failed: 0, declined: 0, byTemplate: {} };
}

function addSummary(a: Pass7Summary, b: Pass7Summary): void {
  a.findings += b.findings;
  a.withRewrite += b.withRewrite;
  a.verified += b.verified;
  a.unverified += b.unverified;
  a.failed += b.failed;
  a.declined += b.declined;
  for (const [k, v] of Object.entries(b.byTemplate)) a.byTemplate[k] = (a.byTemplate[k] ?? 0) + v;
}

export async function runPass7Isolated(out: ReviewOutput, opts: IsolatedPass7Options): Promise<Pass7Summary> {
  const run = isolatedTask<Pass7Task, Pass7FileResult>('pass7', { config: opts.config, checks: opts.checks });
  if (!run) return runPass7(out, { config: opts.config, checks: opts.checks, compile: opts.compile, budgetMs: opts.budgetMs, select: opts.select });
  const deadline = performance.now() + opts.budgetMs;
  const byPath = new Map<string, Finding[]>();
  for (const f of out.result.findings) if (opts.select(f)) (byPath.get(f.path) ?? byPath.set(f.path, []).get(f.path)!).push(f);
  const summary = emptySummary();
  await Promise.all(
    [...byPath].map(async ([path, findings]) => {
      const budget = deadline - performance.now();
      const decline = (why: string) => {
        for (const f of findings) f.rewrite = { declined: why, tried: [] };
        summary.findings += findings.length;
        summary.declined += findings.length;
      };
      if (budget <= 0) return decline('the time budget of pass 7 was spent before this finding');
      const report = out.result.files.find((r) => r.path === path);
      const diffFile = out.diff.files.find((d) => d.path === path);
      const lines = out.fileLines.get(path);
      if (!report || !diffFile || !lines) return decline('the whole file is not available');
      try {
        const got = await run({ path, findings, report, diffFile, lines, compile: opts.compile }, deadline);
        got.outcomes.forEach((o, i) => {
          const f = findings[i];
          f.rewrite = o.rewrite;
          f.fix = o.fix;
          f.suggestionFits = o.suggestionFits;
        });
        addSummary(summary, got.summary);
      } catch (e) {
        decline(`pass 7 stopped: ${(e as Error).message}`);
      }
    }),
  );
  return summary;
}

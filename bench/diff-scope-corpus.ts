/**
 * The diff-scope masking (src/sources/diff-scope.ts) on the corpus rows: the corpus runner reviews
 * each fix-reversed diff (`--scope added`, the post-change file from the mirror) with the masking
 * off (GPU_REVIEW_DIFF_SCOPE=0) and on, in two processes, and every row's findings must be
 * identical. Prints the rows compared, the differing ones, and both runs' wall seconds; exits 1 on
 * a difference.
 *
 *   node dist/bench/diff-scope-corpus.js --mirrors DIR [--half all] [--repo OWNER/NAME]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const runner = path.join(here, '..', 'corpus', 'runner.js');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0) return process.argv[i + 1];
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

interface Row {
  id: string;
  status: string;
  intro: unknown[];
  fix: unknown[];
  error?: string;
}

function run(on: boolean, out: string, extra: string[]): Promise<{ wall: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [runner, ...extra, '--quiet', '--json', out], { env: { ...process.env, GPU_REVIEW_DIFF_SCOPE: on ? '1' : '0' }, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0 && code !== 1) reject(new Error(`corpus runner exited ${code}`));
      else resolve({ wall: (performance.now() - t0) / 1000 });
    });
  });
}

async function main(): Promise<void> {
  const mirrors = arg('mirrors');
  if (!mirrors) {
    console.error('diff-scope-corpus: --mirrors DIR is required');
    process.exit(2);
  }
  const extra = ['--mirrors', mirrors, '--half', arg('half') ?? 'all', ...(arg('repo') ? ['--repo', arg('repo')!] : [])];
  const tmp = os.tmpdir();
  const offFile = path.join(tmp, `diff-scope-off-${process.pid}.json`);
  const onFile = path.join(tmp, `diff-scope-on-${process.pid}.json`);
  const off = await run(false, offFile, extra);
  const on = await run(true, onFile, extra);
  const a = JSON.parse(readFileSync(offFile, 'utf8')) as { rows: Row[] };
  const b = JSON.parse(readFileSync(onFile, 'utf8')) as { rows: Row[] };
  const byId = new Map(b.rows.map((r) => [r.id, r]));
  const differ: string[] = [];
  let compared = 0;
  let findings = 0;
  for (const r of a.rows) {
    const o = byId.get(r.id);
    compared++;
    findings += r.intro.length + r.fix.length;
    const key = (x: Row | undefined) => JSON.stringify(x ? [x.status, x.error ?? null, x.intro, x.fix] : null);
    if (key(r) !== key(o)) differ.push(r.id);
  }
  console.log(`diff scope on the corpus rows: ${compared} rows, ${findings} findings with it off; ${differ.length} rows differ${differ.length ? `: ${differ.join(', ')}` : ''}`);
  console.log(`wall: off ${off.wall.toFixed(1)} s, on ${on.wall.toFixed(1)} s`);
  if (differ.length || a.rows.length !== b.rows.length) process.exitCode = 1;
}

main().catch((e: Error) => {
  console.error(`diff-scope-corpus: ${e.message}`);
  process.exit(2);
});

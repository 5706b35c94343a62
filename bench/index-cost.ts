/**
 * Cost of the project index (issue #15): the built CLI reviews one diff with the index and without
 * it (`index.enabled: false`), alternating, each run a process of its own, and prints wall seconds
 * (best and median), peak RSS (`/usr/bin/time`, where present) and the index's own stats.
 *
 *   node dist/bench/index-cost.js [--runs=3] -- review ARGS...
 *
 *   # the bundled example
 *   node dist/bench/index-cost.js -- review examples/ring-area.diff --repo examples/repo
 *   # the 50-file xgboost PR (dmlc/xgboost d32132dd), --git mode on a bare mirror
 *   node dist/bench/index-cost.js -- review --git d32132dd~1..d32132dd --repo /work/.mirror/dmlc+xgboost/repo
 *
 * `--format json --fail-on none` are added; a `--config FILE` in ARGS (without an `index` key) is
 * kept for the run with the index and extended with `index.enabled: false` for the run without.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
const own = sep < 0 ? argv : argv.slice(0, sep);
const args = sep < 0 ? [] : argv.slice(sep + 1);
if (!args.length) {
  console.error('usage: node dist/bench/index-cost.js [--runs=N] -- review ARGS...');
  process.exit(2);
}
const runs = Number(own.find((a) => a.startsWith('--runs='))?.slice(7) ?? 3);
const tmp = mkdtempSync(join(tmpdir(), 'gpu-review-index-cost-'));
const ci = args.indexOf('--config');
const base = ci >= 0 ? readFileSync(args[ci + 1], 'utf8') : '';
const off = join(tmp, 'no-index.yml');
if (/^index:/m.test(base)) {
  console.error('index-cost: give a --config without an "index" key (the run without the index adds one)');
  process.exit(2);
}
writeFileSync(off, `${base}\nindex:\n  enabled: false\n`);
const withoutArgs = ci >= 0 ? args.map((a, i) => (i === ci + 1 ? off : a)) : [...args, '--config', off];
const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : null;

interface Run {
  s: number;
  /** User + system CPU seconds of the process (all threads): steadier than wall time on a loaded machine. */
  cpu: number | null;
  rssMb: number | null;
  index: unknown;
  findings: number;
}

function once(a: string[]): Run {
  const full = [CLI, ...a, '--format', 'json', '--fail-on', 'none'];
  const t0 = performance.now();
  const r = timeBin ? spawnSync(timeBin, ['-f', 'RSS_KB %M CPU %U %S', process.execPath, ...full], { encoding: 'utf8', maxBuffer: 1 << 30 }) : spawnSync(process.execPath, full, { encoding: 'utf8', maxBuffer: 1 << 30 });
  const s = (performance.now() - t0) / 1000;
  if (r.status !== 0) {
    console.error(`gpu-review exited ${r.status}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    process.exit(1);
  }
  const rss = /RSS_KB (\d+) CPU ([\d.]+) ([\d.]+)/.exec(r.stderr ?? '');
  const out = JSON.parse(r.stdout) as { findings: unknown[]; index?: unknown };
  return { s, cpu: rss ? Number(rss[2]) + Number(rss[3]) : null, rssMb: rss ? Number(rss[1]) / 1024 : null, index: out.index ?? null, findings: out.findings.length };
}

const on: Run[] = [];
const offRuns: Run[] = [];
once(args); // warm-up (file cache, native module)
for (let i = 0; i < runs; i++) {
  on.push(once(args));
  offRuns.push(once(withoutArgs));
}
rmSync(tmp, { recursive: true, force: true });
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const best = (xs: number[]) => Math.min(...xs);
const line = (name: string, rs: Run[]) => `${name}: best ${best(rs.map((r) => r.s)).toFixed(2)} s, median ${med(rs.map((r) => r.s)).toFixed(2)} s, CPU best ${rs[0].cpu === null ? '?' : `${best(rs.map((r) => r.cpu!)).toFixed(2)} s`}, peak RSS ${rs[0].rssMb === null ? '?' : `${Math.max(...rs.map((r) => r.rssMb!)).toFixed(0)} MB`}, ${rs[0].findings} findings`;
console.log(`review ${args.join(' ')} (${runs} runs each, alternating)`);
console.log(line('with the index   ', on));
console.log(line('without the index', offRuns));
console.log(`ratio: best ${(best(on.map((r) => r.s)) / best(offRuns.map((r) => r.s))).toFixed(2)}x, median ${(med(on.map((r) => r.s)) / med(offRuns.map((r) => r.s))).toFixed(2)}x`);
if (on[0].cpu !== null) console.log(`CPU ratio: best ${(best(on.map((r) => r.cpu!)) / best(offRuns.map((r) => r.cpu!))).toFixed(2)}x`);
console.log(`index: ${JSON.stringify(on[0].index)}`);

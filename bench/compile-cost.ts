/**
 * Cost of compiler evidence (`--compile`): wall time of a review with and without it, and per unit
 * and side the nvcc time and the time per kernel (unit time / entry functions, all target archs in
 * one nvcc call). Nothing asserts the figures.
 *
 *   node dist/bench/compile-cost.js                                   # the bundled example
 *   node dist/bench/compile-cost.js --git A..B --repo DIR [--config FILE]   # a real change
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CompileReport } from '../src/compile/evidence.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(root, 'dist', 'src', 'cli.js');
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const git = arg('--git');
const base = git
  ? ['review', '--git', git, '--repo', arg('--repo') ?? '.', ...(arg('--config') ? ['--config', arg('--config')!] : [])]
  : ['review', path.join(root, 'examples', 'ring-area.diff'), '--repo', path.join(root, 'examples', 'repo')];

function run(extra: string[]): { ms: number; out: string } {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [cli, ...base, '--fail-on', 'none', '--format', 'json', ...extra], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`gpu-review exited ${r.status}: ${r.stderr.trim().split('\n')[0]}`);
  return { ms: performance.now() - t0, out: r.stdout };
}

const plain = run([]);
const compiled = run(['--compile']);
const report = (JSON.parse(compiled.out) as { compile: CompileReport }).compile;
if (report.unavailable) {
  console.log(`compilation unavailable: ${report.unavailable}`);
  process.exit(0);
}
console.log(`nvcc ${report.nvcc}, ${report.arches.join(', ')}`);
console.log(`review without --compile: ${(plain.ms / 1000).toFixed(2)} s; with: ${(compiled.ms / 1000).toFixed(2)} s (compile step ${(report.ms / 1000).toFixed(2)} s)`);
for (const u of report.units) {
  const per = u.kernels ? ` = ${(u.ms / u.kernels).toFixed(0)} ms per kernel` : '';
  console.log(`  ${u.unit} ${u.side}: ${u.skipped ? `skipped (${u.skipped})` : u.reused ? 'same files as base, reused' : `${u.ms} ms, ${u.kernels} kernels${per}`}`);
}
const ran = report.units.filter((u) => !u.skipped && !u.reused);
const kernels = ran.reduce((a, u) => a + u.kernels, 0);
const ms = ran.reduce((a, u) => a + u.ms, 0);
if (kernels) console.log(`nvcc: ${ms} ms for ${kernels} kernel compiles (${(ms / kernels).toFixed(0)} ms per kernel and side, ${report.arches.length} archs each); ${report.kernels.length} kernels reported`);

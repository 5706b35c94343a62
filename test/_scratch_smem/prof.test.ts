import { it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildSources } from '../../src/sources/build.js';
import { cudaModel } from '../../src/analysis/cuda.js';
import { pythonModel } from '../../src/analysis/python.js';
import { smemFacts } from '../../src/analysis/smem.js';
import { pythonLaunches } from '../../src/analysis/pylaunch.js';
import { smemLaunches } from '../../src/analysis/smem-launch.js';
import { config } from '../helpers.js';

function files(d: string): string[] {
  const out: string[] = [];
  for (const n of readdirSync(d)) { const p = join(d, n); if (statSync(p).isDirectory()) out.push(...files(p)); else out.push(p); }
  return out;
}
it('prof', () => {
  const cfg = config();
  const all = [...files('bench/corpus/cuda'), ...files('bench/corpus/python')];
  const srcs = all.flatMap((p) => buildSources(p.replace('bench/corpus/', 'src/'), p.endsWith('.py') ? 'python' : 'cuda', { text: readFileSync(p, 'utf8'), firstLine: 1, label: 'file', wholeFile: true }, 20000));
  const time = (name: string, f: () => void) => { const t = performance.now(); f(); console.log(name, (performance.now() - t).toFixed(0)); };
  time('cudaModel', () => srcs.filter((s) => s.language !== 'python').forEach((s) => cudaModel.compute(s, cfg)));
  time('pythonModel', () => srcs.filter((s) => s.language === 'python').forEach((s) => pythonModel.compute(s, cfg)));
  time('smemFacts', () => srcs.filter((s) => s.language !== 'python').forEach((s) => smemFacts.compute(s, cfg)));
  time('pythonLaunches', () => srcs.filter((s) => s.language === 'python').forEach((s) => pythonLaunches.compute(s, cfg)));
  time('smemLaunches', () => srcs.forEach((s) => smemLaunches.compute(s, cfg)));
}, 600000);

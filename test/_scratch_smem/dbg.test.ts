import { it } from 'vitest';
import { readFileSync } from 'node:fs';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';
import { smemLaunches } from '../../src/analysis/smem-launch.js';

it('dbg', () => {
  const text = readFileSync(process.env.DUMP_FILE!, 'utf8');
  const lang = process.env.DUMP_FILE!.endsWith('.py') ? 'python' : 'cuda';
  for (const s of buildSources(`src/x`, lang as 'cuda', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000)) {
    console.log(s.language, s.parseCoverage, s.errorRanges.map(([a, b]) => s.text.slice(a, b).slice(0, 80)));
    for (const l of smemLaunches.compute(s, config())) console.log(l.node.startPosition.row + 1, l.label, l.dynamic, l.static, l.optIns.map((o) => [o.line, o.value, o.effective]));
  }
});

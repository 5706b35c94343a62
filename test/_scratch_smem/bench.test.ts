import { it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildSources } from '../../src/sources/build.js';
import { runChecks } from '../../src/engine/runner.js';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { config } from '../helpers.js';

function files(d: string): string[] {
  const out: string[] = [];
  for (const n of readdirSync(d)) { const p = join(d, n); if (statSync(p).isDirectory()) out.push(...files(p)); else out.push(p); }
  return out;
}
it('bench', () => {
  const cfg = config({ enable_preview: true });
  const ids = (process.env.IDS ?? '').split(',');
  const mine = ids.map((id) => CHECKS.find((c) => c.id === id)!);
  const all = [...files('bench/corpus/cuda'), ...files('bench/corpus/python')];
  let bytes = 0; const t: Record<string, number> = {}; let findings: Record<string, number> = {};
  const srcs = all.map((p) => { const text = readFileSync(p, 'utf8'); bytes += text.length; return buildSources(p.replace('bench/corpus/', 'src/'), p.endsWith('.py') ? 'python' : 'cuda', { text, firstLine: 1, label: 'file', wholeFile: true }, 20000); });
  for (const c of (process.env.ONCE ? mine : [...mine, ...mine])) {
    const t0 = performance.now();
    for (const ss of srcs) for (const s of ss) if (c.languages.includes(s.language)) { const errs: any[] = []; const f = runChecks(s, [c], cfg, errs); findings[c.id] = (findings[c.id] ?? 0) + f.length; if (process.env.SHOW && c.id === process.env.SHOW && t[c.id] === undefined) for (const x of f.slice(0, 100)) console.log(x.path, x.line, x.message); if (errs.length) console.log(errs[0]); }
    t[c.id] = performance.now() - t0 + (t[c.id] ? 0 : 0);
  }
  console.log((bytes / 1e6).toFixed(1), 'MB', t, findings);
}, 600000);

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { RETIRED_IDS, RULE_IDS } from '../../checks/rule-ids.generated.js';
import { LANGUAGES, SEVERITIES } from '../../src/core/types.js';
import { loadCorpus } from '../../corpus/runner.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const catalogPath = join(root, '..', 'shared', 'rules', 'CATALOG.md');
// The catalog sits beside the checkout (shared/); without it the catalog comparisons are skipped.
const catalog = existsSync(catalogPath) ? readFileSync(catalogPath, 'utf8') : '';

/** Rule ids of one pass section of the catalog (`#### \`id\`` headings). */
function catalogIds(prefix: string): string[] {
  return [...catalog.matchAll(/^#### `([^`]+)`/gm)].map((m) => m[1]).filter((id) => id.startsWith(prefix));
}

describe('registry', () => {
  it('is generated from the check folders and up to date', () => {
    expect(() => execFileSync('node', [join(root, 'scripts/gen-registry.mjs'), '--check'], { stdio: 'pipe' })).not.toThrow();
  });

  it('the id list the CLI starts with (without loading the checks) is the registry\'s', () => {
    expect([...RULE_IDS]).toEqual(CHECKS.map((c) => c.id));
    expect([...RETIRED_IDS]).toEqual(CHECKS.filter((c) => c.status === 'retired').map((c) => c.id));
  });

  it('every check id equals its folder, and every folder has check.ts, README.md and fixtures', () => {
    // The pass folders; the generated registry files sit beside them.
    for (const pass of readdirSync(join(root, 'checks')).filter((n) => !n.endsWith('.generated.ts'))) {
      for (const rule of readdirSync(join(root, 'checks', pass))) {
        const dir = join(root, 'checks', pass, rule);
        expect(existsSync(join(dir, 'check.ts')), `${dir}/check.ts`).toBe(true);
        expect(existsSync(join(dir, 'README.md')), `${dir}/README.md`).toBe(true);
        expect(existsSync(join(dir, 'fixtures')), `${dir}/fixtures`).toBe(true);
        expect(CHECKS.some((c) => c.id === `${pass}/${rule}`), `${pass}/${rule} registered`).toBe(true);
      }
    }
  });

  it('metadata is complete and consistent', () => {
    const ids = new Set<string>();
    for (const c of CHECKS) {
      expect(ids.has(c.id), `duplicate ${c.id}`).toBe(false);
      ids.add(c.id);
      expect(SEVERITIES).toContain(c.severity);
      expect(c.pass).toBeGreaterThanOrEqual(1);
      expect(c.pass).toBeLessThanOrEqual(7);
      expect(c.languages.length).toBeGreaterThan(0);
      for (const l of c.languages) expect(LANGUAGES).toContain(l);
      // A rule for a hazard the seeds lack cites the corpus of real fixes it was derived from.
      expect(c.citation).toMatch(/^((\(derived\) )?(000|003|004) §|derived from real fixes\b)/);
      expect(c.why.length).toBeGreaterThan(20);
      expect(Object.keys(c.messages).length).toBeGreaterThan(0);
      for (const s of c.supersedes ?? []) expect(s).toMatch(/^[a-z-]+\/[a-z0-9-]+$/);
    }
  });

  it.skipIf(!catalog)('each registered rule exists in the catalog, or was derived from >= 3 corpus rows (else it is preview)', () => {
    const all = new Set([...catalog.matchAll(/^#### `([^`]+)`/gm)].map((m) => m[1]));
    const rows = loadCorpus().real;
    for (const c of CHECKS) {
      if (all.has(c.id)) continue;
      // A hazard the catalog lacks earns a default-on rule from the real fixes that name it.
      const named = rows.filter((r) => r.rule === c.id).length;
      if (c.status !== 'preview') expect(named, `${c.id} is not in the catalog and only ${named} corpus row(s) name it`).toBeGreaterThanOrEqual(3);
      else expect(named, `${c.id} is not in the catalog and no corpus row names it`).toBeGreaterThanOrEqual(1);
      expect(readFileSync(join(root, 'checks', c.id, 'README.md'), 'utf8'), `${c.id} README names its corpus rows`).toMatch(/corpus/i);
    }
  });

  it.skipIf(!catalog)('pass 1 is complete: all nine host-device rules of the catalog are registered', () => {
    const want = catalogIds('host-device/');
    expect(want).toHaveLength(9);
    const ids = new Set(CHECKS.map((c) => c.id));
    for (const id of want) expect(ids.has(id), id).toBe(true);
  });
});

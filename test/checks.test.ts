import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CHECKS } from '../checks/registry.generated.js';
import { applyFixes, fixturePath, hasNvcc, listFiles, parseMarkers, read, reviewText, sites, snapshot } from './helpers.js';

/**
 * The fixture harness (docs/architecture.md, "One check"): every finding of the rule under test must sit under
 * a `ruleid:` marker (else noisy), every `ruleid:` must get its finding (else missing);
 * `todoruleid:` documents a known gap. Each fixture is reviewed as an added file twice, with the
 * whole file from the repository and from the diff alone: the two must agree.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Fixtures under test/fixtures/shared/ hold markers for several rules (one realistic file that
 * several checks must judge); each is run for every rule it marks, as if it sat in that rule's folder.
 */
const sharedDir = join(root, 'test', 'fixtures', 'shared');
const shared = existsSync(sharedDir) ? listFiles(sharedDir).filter((f) => !f.endsWith('.fixed') && !f.endsWith('.md') && !f.endsWith('.snap')) : [];
const sharedMarked = new Map(shared.map((f) => [f, new Set(parseMarkers(read(f)).map((m) => m.rule))]));

for (const check of CHECKS) {
  const dir = join(root, 'checks', check.id, 'fixtures');
  if (!existsSync(dir)) continue;
  const own = listFiles(dir).filter((f) => !f.endsWith('.fixed') && !f.endsWith('.md') && !f.endsWith('.snap'));
  const fixtures = [...own.map((f) => ({ file: f, rel: relative(dir, f) })), ...shared.filter((f) => sharedMarked.get(f)!.has(check.id)).map((f) => ({ file: f, rel: relative(root, f) }))];
  // Rules that read nvcc's figures run only where nvcc is installed.
  describe.skipIf(check.requires === 'compiler' && !hasNvcc)(check.id, () => {
    for (const { file, rel } of fixtures) {
      it(`fixture ${rel}`, async () => {
        const text = read(file);
        const path = fixturePath(file, text, `src/${rel}`);
        const markers = parseMarkers(text).filter((m) => m.rule === check.id);
        expect(markers.length, 'fixture has no markers for this rule').toBeGreaterThan(0);
        const findings = await reviewText(path, text, { checks: [check], repoMode: true });
        // A grouped finding speaks for each of its sites (members).
        const got = sites(findings.filter((f) => f.ruleId === check.id));
        const lines = new Set(got.map((f) => f.line));
        const expected = markers.filter((m) => m.kind === 'ruleid').map((m) => m.target);
        const todo = new Set(markers.filter((m) => m.kind === 'todoruleid').map((m) => m.target));
        const missing = expected.filter((l) => !lines.has(l));
        const noisy = got.filter((f) => !expected.includes(f.line) && !todo.has(f.line)).map((f) => `${f.line}: ${f.message}`);
        expect({ missing, noisy }).toEqual({ missing: [], noisy: [] });

        const diffOnly = await reviewText(path, text, { checks: [check], repoMode: false });
        expect(diffOnly.map((f) => [f.line, f.column, f.ruleId, f.fingerprint])).toEqual(findings.map((f) => [f.line, f.column, f.ruleId, f.fingerprint]));

        // Ruff-style snapshot, reviewed in diffs: every grouped rule, and any fixture that has one.
        if (check.group || existsSync(file + '.snap')) {
          await expect(snapshot(findings.filter((f) => f.ruleId === check.id))).toMatchFileSnapshot(`${file}.snap`);
        }

        if (existsSync(file + '.fixed')) {
          expect(applyFixes(text, got)).toBe(read(file + '.fixed'));
        }
      });
    }
  });
}

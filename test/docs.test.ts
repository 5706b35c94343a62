import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CHECKS } from '../checks/registry.generated.js';
import { fixturePath, hasNvcc, parseMarkers, read, reviewText } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const HEADINGS = ['## What it flags', '## Why', '## What it does not flag', '## How to fix', '## Examples'];
const LANG_PATH: Record<string, string> = { python: 'src/example.py', cuda: 'src/example.cu', cpp: 'src/example.cpp', cu: 'src/example.cu' };

/** Every check's README has the fixed headings, and its examples run as fixtures. */
for (const check of CHECKS) {
  describe(`docs ${check.id}`, () => {
    const readme = join(root, 'checks', check.id, 'README.md');
    it('has a README with the fixed headings in order', () => {
      expect(existsSync(readme)).toBe(true);
      const text = read(readme);
      expect(text.startsWith(`# ${check.id}\n`)).toBe(true);
      let at = -1;
      for (const h of HEADINGS) {
        const i = text.indexOf(`\n${h}\n`);
        expect(i, `missing heading "${h}"`).toBeGreaterThan(at);
        at = i;
      }
      expect(text).toContain(check.citation.split(';')[0]);
    });
    it.skipIf(check.requires === 'compiler' && !hasNvcc)('README examples behave as their markers say', async () => {
      const text = read(readme);
      const examples = text.slice(text.indexOf('\n## Examples\n'));
      const blocks = [...examples.matchAll(/```(\w+)\n([\s\S]*?)```/g)];
      expect(blocks.length).toBeGreaterThanOrEqual(2);
      let sawFlag = false;
      let sawOk = false;
      for (const [, lang, code] of blocks) {
        const markers = parseMarkers(code).filter((m) => m.rule === check.id);
        if (!markers.length) continue;
        // `// gpu-review-fixture: path=…` on an example's first line reviews it under that path (test-only rules).
        const path = fixturePath('', code, LANG_PATH[lang] ?? `src/example.${lang}`);
        const findings = (await reviewText(path, code, { checks: [check], repoMode: true })).filter((f) => f.ruleId === check.id);
        for (const m of markers) {
          const hit = findings.some((f) => f.line === m.target);
          if (m.kind === 'ruleid') {
            sawFlag = true;
            expect(hit, `README example: expected a finding at line ${m.target}`).toBe(true);
          }
          if (m.kind === 'ok') {
            sawOk = true;
            expect(hit, `README example: unexpected finding at line ${m.target}`).toBe(false);
          }
        }
      }
      expect(sawFlag && sawOk, 'README needs a flagged and an ok example').toBe(true);
    });
  });
}

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { review } from '../../src/review/pipeline.js';
import { applyEdits } from '../../src/rewrite/edit.js';
import { runPass7 } from '../../src/rewrite/index.js';
import { isRewrite, planFixes } from '../../src/rewrite/apply.js';
import { TEMPLATES } from '../../src/rewrite/templates/index.js';
import { addedFileDiff, config } from '../helpers.js';

const root = join(import.meta.dirname, 'fixtures');

/** Each template folder: cases whose `.fixed` is the file after the template's rewrites; `expect-decline:` cases keep the file. */
describe.each(TEMPLATES.map((t) => [t.id, t] as const))('template %s', (id, template) => {
  const dir = join(root, id);
  const cases = existsSync(dir) ? readdirSync(dir).filter((f) => !f.endsWith('.fixed')) : [];
  it('has a rewrite case and a decline case', () => {
    const texts = cases.map((c) => readFileSync(join(dir, c), 'utf8'));
    expect(texts.some((t) => t.includes('expect-decline:'))).toBe(true);
    expect(texts.some((t) => !t.includes('expect-decline:'))).toBe(true);
  });
  it.each(cases)('%s', async (name) => {
    const text = readFileSync(join(dir, name), 'utf8');
    const path = `src/${name}`;
    const cfg = config({ enable_preview: true });
    const out = await review({ diff: addedFileDiff(path, text), config: cfg, scope: 'file', readFile: async (p) => (p === path ? text : null) });
    const mine = out.result.findings.filter((f) => template.rules.includes(f.ruleId));
    expect(mine.length, `no finding of ${template.rules.join(', ')}`).toBeGreaterThan(0);
    await runPass7(out, { config: cfg, templates: [template], compile: false, engineFixes: false });
    const decline = /expect-decline:\s*(.+)$/m.exec(text)?.[1].trim();
    const rewrites = mine.map((f) => f.rewrite).filter(isRewrite);
    if (decline) {
      expect(rewrites).toEqual([]);
      const reasons = mine.map((f) => (f.rewrite && 'declined' in f.rewrite ? f.rewrite.declined : ''));
      expect(reasons.some((r) => r.includes(decline)), reasons.join(' | ')).toBe(true);
      return;
    }
    expect(rewrites.length, mine.map((f) => JSON.stringify(f.rewrite)).join('\n')).toBe(mine.length);
    for (const r of rewrites) {
      expect(r.template).toBe(id);
      expect(r.verification.status).not.toBe('failed');
      expect(r.diff).toMatch(/^--- a\//);
    }
    const plans = planFixes(out.result.findings, true);
    const lines = text.replace(/\n$/, '').split('\n');
    const fixed = applyEdits(lines, plans.flatMap((p) => p.rewrites.flatMap((r) => r.edits))).join('\n') + '\n';
    const want = join(dir, `${name}.fixed`);
    if (!existsSync(want) && process.env.UPDATE_FIXED === '1') writeFileSync(want, fixed);
    expect(fixed).toBe(readFileSync(want, 'utf8'));
  });
});

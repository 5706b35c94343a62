import { it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { reviewText, applyFixes, fixturePath } from '../helpers.js';

it('write fixed', async () => {
  const file = process.env.DUMP_FILE!;
  const rule = process.env.DUMP_RULE!;
  const text = readFileSync(file, 'utf8');
  const rel = file.split('/fixtures/')[1];
  const f = (await reviewText(fixturePath(file, text, `src/${rel}`), text, { checks: CHECKS.filter((c) => c.id === rule), repoMode: true })).filter((x) => x.ruleId === rule);
  writeFileSync(file + '.fixed', applyFixes(text, f));
});

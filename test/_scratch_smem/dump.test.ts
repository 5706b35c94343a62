import { it } from 'vitest';
import { readFileSync } from 'node:fs';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { reviewText, applyFixes } from '../helpers.js';

it('dump', async () => {
  const file = process.env.DUMP_FILE!;
  const rule = process.env.DUMP_RULE!;
  const text = readFileSync(file, 'utf8');
  const ext = file.endsWith('.py') ? 'py' : 'cu';
  const cfg = process.env.DUMP_CFG ? JSON.parse(process.env.DUMP_CFG) : undefined;
  const f = (await reviewText(`src/x.${ext}`, text, { checks: CHECKS.filter((c) => c.id === rule), repoMode: true, config: cfg })).filter((x) => x.ruleId === rule);
  for (const x of f) console.log(`${x.line}: ${x.message}\n    fix[${x.fix?.kind}]: ${x.fix?.description}${x.fix?.replace ? ' => ' + JSON.stringify(x.fix.replace) : ''}`);
  if (process.env.DUMP_FIXED) console.log(applyFixes(text, f));
});

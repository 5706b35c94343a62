import { it } from 'vitest';
import { CHECKS } from '../src/engine/registry.generated.js';
import { reviewText, read, fixturePath } from './helpers.js';
it('show', async () => {
  for (const f of (process.env.FILES ?? '').split(',')) {
    const text = read(f);
    const checks = CHECKS.filter((c) => (process.env.RULES ?? '').split(',').includes(c.id));
    const out = await reviewText(fixturePath(f, text, 'src/x.py'), text, { checks, repoMode: true });
    for (const x of out) console.log(f.split('/').pop(), x.line, x.ruleId, x.message, x.fix?.replace?.text ?? '');
  }
});

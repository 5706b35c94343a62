import { it } from 'vitest';
import { readFileSync } from 'node:fs';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { addedFileDiff, config } from '../helpers.js';
import { review } from '../../src/pipeline.js';

it('errors', async () => {
  const file = process.env.DUMP_FILE!;
  const text = readFileSync(file, 'utf8');
  const ext = file.endsWith('.py') ? 'py' : 'cu';
  const out = await review({ diff: addedFileDiff(`src/x.${ext}`, text), config: config({ enable_preview: true }), scope: 'file', checks: CHECKS.filter((c) => c.id === process.env.DUMP_RULE), readFile: async () => text });
  console.log(JSON.stringify(out.result.errors, null, 1));
});

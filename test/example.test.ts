import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { review } from '../src/review/pipeline.js';
import { buildReview, visibleText } from '../src/reporters/github-review.js';
import { config, snapshot } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The bundled example PR as a new user meets it: the findings (snapshot) and the comments they get. */
describe('the bundled example (examples/ring-area.diff)', () => {
  it('one finding per root cause, each with its message id, column and sites', async () => {
    const diff = readFileSync(join(root, 'examples', 'ring-area.diff'), 'utf8');
    const out = await review({ diff, config: config({}), readFile: async (p) => readFileSync(join(root, 'examples', 'repo', p), 'utf8') });
    await expect(snapshot(out.result.findings, true)).toMatchFileSnapshot(join(root, 'test', 'snapshots', 'example.snap'));
    const posted = buildReview({ result: out.result, diff: out.diff, fileLines: (p) => out.fileLines.get(p), inlineCommentCap: 30, failOn: 'high', toolVersion: 't' });
    // One comment per finding, never two on one line, each short enough to be read.
    expect(new Set(posted.comments.map((c) => `${c.path}:${c.line}`)).size).toBe(posted.comments.length);
    expect(posted.comments).toHaveLength(out.result.findings.length);
    for (const c of posted.comments) expect(visibleText(c.body).length).toBeLessThanOrEqual(600);
  });
});

import { buildReview } from './github-review.js';
import type { ReportInput } from './types.js';

/**
 * The review as the GitHub App would post it: its body, then each inline comment under a
 * `### path:line` heading with the very body buildReview produced, so a local dry run shows
 * exactly what lands on the pull request.
 */
export function renderMarkdown(input: ReportInput): string {
  const review = buildReview(input);
  const parts = [review.body];
  if (review.comments.length > 0) {
    parts.push('---', `## Inline comments (${review.comments.length})`);
    for (const c of review.comments) {
      const where = c.start_line !== undefined ? `${c.path}:${c.start_line}-${c.line}` : `${c.path}:${c.line}`;
      parts.push(`### ${where}\n\n${c.body}`);
    }
  }
  return `${parts.join('\n\n')}\n`;
}

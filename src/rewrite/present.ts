import type { Finding } from '../core/types.js';
import type { Rewrite } from './types.js';

/** A rewrite worth showing: built and not failed verification. */
export function shownRewrite(f: Finding): Rewrite | null {
  const r = f.rewrite;
  if (!r || !('edits' in r) || r.verification.status === 'failed') return null;
  return r;
}

/** "verified (re-parse, nvcc, re-review)" / "not compiled: nvcc not found". */
export function verificationLabel(r: Rewrite): string {
  if (r.verification.status === 'verified') return `verified: ${r.verification.steps.map((s) => s.step).join(', ')}`;
  const skipped = r.verification.steps.filter((s) => s.status === 'skipped').map((s) => `${s.step} skipped (${s.detail ?? ''})`);
  return `re-parsed and re-reviewed, not compiled: ${skipped.join('; ')}`;
}

function fence(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** The collapsed "Proposed rewrite" block of an inline comment (Markdown). */
export function rewriteDetails(r: Rewrite): string {
  const f = fence(r.diff);
  const who = r.origin === 'llm' ? ', drafted by a language model' : '';
  return [`<details><summary>Proposed rewrite of ${r.unit.label} (${verificationLabel(r)}${who})</summary>`, '', r.description, '', `${f}diff`, r.diff, f, '', '</details>'].join('\n');
}

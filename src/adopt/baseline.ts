import { readFile, writeFile } from 'node:fs/promises';
import type { Finding } from '../core/types.js';

/**
 * A baseline: the fingerprints of the findings an existing codebase already has, so that adopting
 * gpu-review reports only what is new. Fingerprints are line-independent (rule, path, enclosing
 * function, flagged code), so edits elsewhere in a file do not bring a baselined finding back.
 * The file lists rule and path beside each fingerprint so that a diff of it can be reviewed; no
 * line numbers, which would churn on every unrelated edit.
 */
export interface BaselineEntry {
  rule: string;
  path: string;
  fingerprint: string;
}

export interface BaselineFile {
  tool: 'gpu-review';
  version: 1;
  findings: BaselineEntry[];
}

export class BaselineError extends Error {}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorted by path, rule, fingerprint, one entry per finding (duplicates collapsed): stable output for the same findings. */
export function baselineOf(findings: readonly Finding[]): BaselineFile {
  const seen = new Set<string>();
  const entries: BaselineEntry[] = [];
  for (const f of findings) {
    if (seen.has(f.fingerprint)) continue;
    seen.add(f.fingerprint);
    entries.push({ rule: f.ruleId, path: f.path, fingerprint: f.fingerprint });
  }
  entries.sort((a, b) => cmp(a.path, b.path) || cmp(a.rule, b.rule) || cmp(a.fingerprint, b.fingerprint));
  return { tool: 'gpu-review', version: 1, findings: entries };
}

/** One entry per line, so a change to the baseline reads as added/removed lines in review. */
export function renderBaseline(b: BaselineFile): string {
  const rows = b.findings.map((e) => `    ${JSON.stringify({ rule: e.rule, path: e.path, fingerprint: e.fingerprint })}`);
  return `{\n  "tool": "gpu-review",\n  "version": 1,\n  "findings": [${rows.length ? `\n${rows.join(',\n')}\n  ` : ''}]\n}\n`;
}

/** Parse and validate a baseline's text; `name` is for the error message. */
export function parseBaseline(text: string, name: string): Set<string> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new BaselineError(`baseline ${name} is not valid JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  const d = doc as Partial<BaselineFile> | null;
  if (!d || typeof d !== 'object' || d.tool !== 'gpu-review' || d.version !== 1 || !Array.isArray(d.findings)) {
    throw new BaselineError(`baseline ${name} is not a gpu-review baseline (expected {"tool": "gpu-review", "version": 1, "findings": [...]}; write one with --write-baseline)`);
  }
  const out = new Set<string>();
  d.findings.forEach((e, i) => {
    if (!e || typeof e !== 'object' || typeof (e as BaselineEntry).fingerprint !== 'string' || !(e as BaselineEntry).fingerprint) {
      throw new BaselineError(`baseline ${name}: entry ${i + 1} has no "fingerprint"`);
    }
    out.add((e as BaselineEntry).fingerprint);
  });
  return out;
}

export async function readBaseline(path: string): Promise<Set<string>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new BaselineError(`cannot read baseline file ${path}`);
  }
  return parseBaseline(text, path);
}

export async function writeBaseline(path: string, findings: readonly Finding[]): Promise<number> {
  const b = baselineOf(findings);
  try {
    await writeFile(path, renderBaseline(b));
  } catch (e) {
    throw new BaselineError(`cannot write baseline file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return b.findings.length;
}

/** Findings not in the baseline, and how many were in it. */
export function applyBaseline<T extends { fingerprint: string }>(findings: readonly T[], known: ReadonlySet<string>): { findings: T[]; baselined: number } {
  const kept = findings.filter((f) => !known.has(f.fingerprint));
  return { findings: kept, baselined: findings.length - kept.length };
}

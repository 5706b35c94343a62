import type { FileReport, Finding, Fix, ReviewError } from '../core/types.js';
import { compareByLocation } from './common.js';
import type { ReportInput } from './types.js';

/** Bumped only on a breaking change of the shape below; consumers key on it. */
export const JSON_REPORT_VERSION = 1;

const FINDING_KEYS = [
  'ruleId',
  'pass',
  'severity',
  'confidence',
  'kind',
  'path',
  'language',
  'line',
  'endLine',
  'column',
  'endColumn',
  'messageId',
  'message',
  'citation',
  'why',
  'docUrl',
  'fingerprint',
  'fix',
  'also',
  'members',
  'onAddedLine',
  'inHunk',
  'suggestionFits',
] as const satisfies readonly (keyof Finding)[];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function fixJson(fix: Fix): Json {
  const out: { [key: string]: Json } = { kind: fix.kind, description: fix.description };
  if (fix.replace) {
    out.replace = { startLine: fix.replace.startLine, endLine: fix.replace.endLine, text: fix.replace.text };
  }
  return out;
}

function findingJson(f: Finding): Json {
  const out: { [key: string]: Json } = {};
  const source = f as unknown as Record<string, unknown>;
  for (const key of FINDING_KEYS) {
    const value = source[key];
    if (value === undefined) continue;
    out[key] = key === 'fix' ? fixJson(value as Fix) : (value as Json);
  }
  // Fields added to Finding later still reach consumers, after the known ones in a fixed order.
  const known = new Set<string>(FINDING_KEYS);
  for (const key of Object.keys(source).sort()) {
    if (!known.has(key) && source[key] !== undefined) out[key] = source[key] as Json;
  }
  return out;
}

function fileJson(f: FileReport): Json {
  const out: { [key: string]: Json } = {
    path: f.path,
    language: f.language,
    parseCoverage: f.parseCoverage,
    sources: f.sources.map((s) => ({ language: s.language, label: s.label, parseCoverage: s.parseCoverage, bytes: s.bytes })),
    findings: f.findings,
  };
  if (f.skipped !== undefined) out.skipped = f.skipped;
  if (f.timedOut) out.timedOut = true;
  return out;
}

function errorJson(e: ReviewError): Json {
  return e.path !== undefined ? { path: e.path, message: e.message } : { message: e.message };
}

/** The machine-readable report: `{"version":1,"findings":[…],"files":[…],"errors":[…]}`. */
export function renderJson(input: ReportInput): string {
  const { findings, files, errors } = input.result;
  const doc = {
    version: JSON_REPORT_VERSION,
    findings: [...findings].sort(compareByLocation).map(findingJson),
    files: [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map(fileJson),
    errors: errors.map(errorJson),
    ...(input.result.unusedSuppressions ? { unusedSuppressions: input.result.unusedSuppressions.map((u) => ({ path: u.path, line: u.line, column: u.column, ruleId: u.ruleId })) } : {}),
    // Present only with --compile: the nvcc figures per changed kernel (src/compile/evidence.ts).
    ...(input.result.compile ? { compile: input.result.compile } : {}),
    // Present only when the project index stopped at a bound (src/index/): what it read and why it stopped.
    ...(input.result.index?.stopped ? { index: input.result.index } : {}),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

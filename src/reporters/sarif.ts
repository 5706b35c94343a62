import type {
  ArtifactChange,
  Fix as SarifFix,
  Log,
  Notification,
  Region,
  ReportingDescriptor,
  Result,
} from 'sarif';
import type { Finding, Pass, Severity } from '../core/types.js';
import { PROJECT_URL, compareByLocation, isApplicableFix, replacementLines } from './common.js';
import type { ReportInput } from './types.js';

export const SARIF_SCHEMA_URI = 'https://json.schemastore.org/sarif-2.1.0.json';
export const FINGERPRINT_KEY = 'gpuReview/v1';

/** What SARIF needs to know of a rule; `pass` is taken from the findings when not given. */
export interface SarifRule {
  id: string;
  summary: string;
  citation: string;
  docUrl: string;
  severity: Severity;
  pass?: Pass;
  /** Longer description (the rule's "why"); shortDescription stays the one-line summary. */
  fullDescription?: string;
  /** The rule's documentation in Markdown (its README), shown by code scanning as the rule help. */
  helpMarkdown?: string;
  tags?: string[];
  /** Code scanning's precision: how often a result is a true positive. */
  precision?: 'very-high' | 'high' | 'medium' | 'low';
}

type Level = 'error' | 'warning' | 'note';

export function sarifLevel(s: Severity): Level {
  switch (s) {
    case 'critical':
    case 'high':
      return 'error';
    case 'medium-high':
    case 'medium':
      return 'warning';
    default:
      return 'note';
  }
}

/**
 * artifactLocation.uri is a URI reference: a path with a space, `#` or `?` must be escaped or
 * viewers (and GitHub code scanning) resolve it to another file or reject the log.
 */
export function pathToUri(path: string): string {
  return encodeURI(path.replace(/\\/g, '/')).replace(/[?#]/g, (c) => encodeURIComponent(c));
}

function isAbsoluteUri(s: string): boolean {
  return /^[a-z][a-z0-9+.-]*:[^\s]*$/i.test(s);
}

function region(f: Finding): Region {
  const startColumn = Math.max(1, f.column);
  const endLine = Math.max(f.line, f.endLine);
  let endColumn = Math.max(1, f.endColumn);
  // SARIF's endColumn is exclusive; an empty or inverted span on one line would hide the region.
  if (endLine === f.line && endColumn <= startColumn) endColumn = startColumn + 1;
  return { startLine: f.line, startColumn, endLine, endColumn };
}

function fixOf(f: Finding): SarifFix[] | undefined {
  if (!isApplicableFix(f)) return undefined;
  const { startLine, endLine } = f.fix.replace;
  const lines = replacementLines(f.fix);
  const change: ArtifactChange = {
    artifactLocation: { uri: pathToUri(f.path) },
    replacements:
      lines.length === 0
        ? // Deleting whole lines must take their line breaks too, hence up to column 1 of the next line.
          [{ deletedRegion: { startLine, startColumn: 1, endLine: endLine + 1, endColumn: 1 } }]
        : // A line-only region spans the lines' text without the final EOL, which is kept.
          [{ deletedRegion: { startLine, endLine }, insertedContent: { text: lines.join('\n') } }],
  };
  return [{ description: { text: f.fix.description }, artifactChanges: [change] }];
}

function descriptor(rule: SarifRule, pass: Pass | undefined): ReportingDescriptor {
  const properties: Record<string, unknown> = { citation: rule.citation, severity: rule.severity };
  if (pass !== undefined) properties.pass = pass;
  if (rule.tags?.length) properties.tags = [...rule.tags];
  if (rule.precision) properties.precision = rule.precision;
  const d: ReportingDescriptor = {
    id: rule.id,
    shortDescription: { text: rule.summary || rule.id },
    defaultConfiguration: { level: sarifLevel(rule.severity) },
    properties,
  };
  const docs = isAbsoluteUri(rule.docUrl);
  if (docs) d.helpUri = rule.docUrl;
  if (rule.fullDescription) d.fullDescription = { text: rule.fullDescription };
  d.help = { text: `Source: ${rule.citation}${docs ? ` · ${rule.docUrl}` : ''}` };
  if (rule.helpMarkdown) d.help.markdown = rule.helpMarkdown;
  return d;
}

/**
 * SARIF 2.1.0 log with one run: every rule the caller knows (plus any rule a finding names that
 * the caller did not list), one result per finding, safe fixes as `fixes`, skipped files and
 * errors as tool execution notifications.
 */
export function renderSarif(input: ReportInput, rules: ReadonlyArray<SarifRule>): string {
  const findings = [...input.result.findings].sort(compareByLocation);

  const byId = new Map<string, SarifRule>();
  for (const r of rules) if (!byId.has(r.id)) byId.set(r.id, r);
  for (const f of findings) {
    if (!byId.has(f.ruleId)) {
      byId.set(f.ruleId, { id: f.ruleId, summary: f.ruleId, citation: f.citation, docUrl: f.docUrl, severity: f.severity, pass: f.pass });
    }
  }
  const passOf = new Map<string, Pass>();
  for (const f of findings) if (!passOf.has(f.ruleId)) passOf.set(f.ruleId, f.pass);
  const ordered = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const indexOf = new Map(ordered.map((r, i) => [r.id, i]));

  const results: Result[] = findings.map((f) => {
    const result: Result = {
      ruleId: f.ruleId,
      ruleIndex: indexOf.get(f.ruleId)!,
      level: sarifLevel(f.severity),
      message: { text: f.message },
      locations: [{ physicalLocation: { artifactLocation: { uri: pathToUri(f.path) }, region: region(f) } }],
      partialFingerprints: { [FINGERPRINT_KEY]: f.fingerprint },
      properties: { severity: f.severity, confidence: f.confidence, pass: f.pass, citation: f.citation, kind: f.kind },
    };
    if (f.also && f.also.length > 0) result.properties!.also = [...f.also];
    const fixes = fixOf(f);
    if (fixes) result.fixes = fixes;
    return result;
  });

  const notifications: Notification[] = [];
  for (const file of input.result.files) {
    if (file.skipped === undefined) continue;
    notifications.push({
      level: 'note',
      descriptor: { id: 'skipped-file' },
      message: { text: `Skipped ${file.path}: ${file.skipped}` },
      locations: [{ physicalLocation: { artifactLocation: { uri: pathToUri(file.path) } } }],
    });
  }
  for (const e of input.result.errors) {
    const n: Notification = { level: 'error', descriptor: { id: 'review-error' }, message: { text: e.message } };
    if (e.path) n.locations = [{ physicalLocation: { artifactLocation: { uri: pathToUri(e.path) } } }];
    notifications.push(n);
  }

  const log: Log = {
    $schema: SARIF_SCHEMA_URI,
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'gpu-review',
            version: input.toolVersion,
            informationUri: PROJECT_URL,
            rules: ordered.map((r) => descriptor(r, r.pass ?? passOf.get(r.id))),
          },
        },
        // One bad file never stops the review of the others, so per-file errors are
        // notifications of a run that still completed.
        invocations: [{ executionSuccessful: true, toolExecutionNotifications: notifications }],
        results,
      },
    ],
  };
  return `${JSON.stringify(log, null, 2)}\n`;
}

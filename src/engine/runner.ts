import { createHash } from 'node:crypto';
import { ruleDocUrl } from '../config/docs-url.js';
import type { ResolvedConfig } from '../config/schema.js';
import type { Source } from '../sources/types.js';
import { explainFinding } from '../index/explain.js';
import { renderMessage, type Analysis, type CheckContext, type CheckDef, type Report } from './check.js';
import { severityRank, type Finding, type ReviewError, type SyntaxNode } from '../core/types.js';

export interface RawFinding extends Finding {
  /** Which source it came from (for dropping findings in parse-error regions). */
  sourceLabel: string;
  startIndex: number;
  endIndex: number;
  /** Function the finding sits in, for the fingerprint and for precedence. */
  scope: string;
  /** Grouping key for rules with `group` (engine/group.ts); null when the site stands alone. */
  groupKey: string | null;
  /** Report.subject, for precedence across lines. */
  subject?: string;
}

const LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop', 'list_comprehension', 'generator_expression', 'set_comprehension', 'dictionary_comprehension']);

/** The innermost loop around a node, or null. */
function enclosingLoop(n: SyntaxNode): SyntaxNode | null {
  for (let p: SyntaxNode | null = n.parent; p; p = p.parent) {
    if (LOOPS.has(p.type)) return p;
    if (p.type === 'function_definition' || p.type === 'lambda_expression') return null;
  }
  return null;
}

function functionNode(n: SyntaxNode): SyntaxNode | null {
  for (let p: SyntaxNode | null = n.parent; p; p = p.parent) if (p.type === 'function_definition') return p;
  return null;
}

/**
 * The key of the root cause a site belongs to and the text its fingerprint hashes. The text names
 * the group (the loop's header, the function, the shared value), never a member, so the
 * fingerprint stays when sites are added to the group or removed from it.
 */
function groupOf(check: CheckDef, source: Source, r: Report, scope: string): { key: string; anchor: string } | null {
  const mode = r.groupBy ?? check.group;
  if (!mode) return null;
  if (mode === 'value') {
    const v = (r.groupKey ?? r.node.text).replace(/\s+/g, ' ').trim();
    return { key: `value\0${v}`, anchor: `value:${v}` };
  }
  if (mode === 'loop') {
    const loop = enclosingLoop(r.node);
    if (!loop) return null;
    const header = loop.text.split('\n')[0].replace(/\s+/g, ' ').trim();
    return { key: `loop\0${source.label}\0${loop.startIndex}`, anchor: `loop:${header}` };
  }
  const fn = functionNode(r.node);
  return { key: `function\0${source.label}\0${fn?.startIndex ?? -1}`, anchor: `function:${scope}` };
}

function enclosingFunction(n: SyntaxNode): string {
  let p: SyntaxNode | null = n.parent;
  while (p) {
    if (p.type === 'function_definition') {
      const name = p.childForFieldName('name') ?? p.childForFieldName('declarator');
      if (name) {
        const ident = name.type === 'identifier' ? name : name.descendantsOfType(['identifier', 'field_identifier'])[0];
        return ident?.text ?? name.text.slice(0, 60);
      }
    }
    p = p.parent;
  }
  return '<module>';
}

/**
 * Opt-in per-rule timing (GPU_REVIEW_PROFILE_RULES=1): wall time of each check's visitors and
 * 'source:exit' per source language, with shared analyses (ctx.get) timed on their own and not
 * charged to the check that happened to ask first. Printed as a table when the process exits.
 */
const PROFILE_RULES = process.env.GPU_REVIEW_PROFILE_RULES === '1';
const ruleTimes = new Map<string, { ms: number; calls: number }>();
let analysisMs = 0;
function addTime(key: string, ms: number): void {
  const t = ruleTimes.get(key) ?? { ms: 0, calls: 0 };
  t.ms += ms;
  t.calls++;
  ruleTimes.set(key, t);
}
if (PROFILE_RULES) {
  process.on('exit', () => {
    const rows = [...ruleTimes.entries()].sort((a, b) => b[1].ms - a[1].ms);
    const total = rows.reduce((a, [, v]) => a + v.ms, 0);
    process.stderr.write(`\nper-rule time (GPU_REVIEW_PROFILE_RULES), ${total.toFixed(0)} ms in checks and analyses:\n`);
    for (const [k, v] of rows.slice(0, 60)) process.stderr.write(`${v.ms.toFixed(1).padStart(10)} ms ${v.calls.toString().padStart(8)}  ${k}\n`);
  });
}

function overlapsError(s: Source, start: number, end: number): boolean {
  for (const [a, b] of s.errorRanges) if (a < Math.max(end, start + 1) && start < b) return true;
  return false;
}

/**
 * Run the checks on one source: one native traversal collects every node type any check visits,
 * then each node goes to its visitors in document order. A failing check becomes an error value;
 * the other checks' findings stand.
 */
export function runChecks(
  source: Source,
  checks: readonly CheckDef[],
  config: ResolvedConfig,
  errors: ReviewError[],
  deadline = Number.POSITIVE_INFINITY,
  projectVocabulary = false,
): RawFinding[] {
  const findings: RawFinding[] = [];
  const memo = new Map<string, unknown>();
  const lines = source.text.split('\n');
  const dispatch = new Map<string, Array<{ check: CheckDef; fn: (n: SyntaxNode) => void }>>();
  const exits: Array<{ check: CheckDef; fn: () => void }> = [];

  for (const check of checks) {
    const ctx: CheckContext = {
      source,
      config,
      projectVocabulary,
      get<T>(a: Analysis<T>): T {
        if (!memo.has(a.name)) {
          if (!PROFILE_RULES) memo.set(a.name, a.compute(source, config));
          else {
            const t0 = performance.now();
            const before = analysisMs;
            try {
              memo.set(a.name, a.compute(source, config));
            } finally {
              const own = performance.now() - t0 - (analysisMs - before);
              addTime(`analysis ${a.name} [${source.language}]`, own);
              analysisMs = before + (performance.now() - t0);
            }
          }
        }
        return memo.get(a.name) as T;
      },
      linesOf(from: SyntaxNode, to?: SyntaxNode): string {
        return lines.slice(from.startPosition.row, (to ?? from).endPosition.row + 1).join('\n');
      },
      report(r: Report): void {
        const f = toFinding(check, source, r, config);
        if (f) findings.push(f);
      },
    };
    let visitors;
    try {
      visitors = check.create(ctx);
    } catch (e) {
      errors.push({ path: source.path, message: `check ${check.id} failed to start: ${(e as Error).message}` });
      continue;
    }
    for (const [type, fn] of Object.entries(visitors)) {
      if (!fn) continue;
      if (type === 'source:exit') exits.push({ check, fn: fn as () => void });
      else {
        const list = dispatch.get(type) ?? [];
        list.push({ check, fn: fn as (n: SyntaxNode) => void });
        dispatch.set(type, list);
      }
    }
  }

  const failed = new Set<string>();
  let outOfTime = false;
  // The clock is read once every CLOCK_EVERY visits: a check cannot be interrupted, but checks stop
  // being started soon after the file's budget is spent.
  let sinceClock = 0;
  const CLOCK_EVERY = 64;
  const guard = (check: CheckDef, fn: (n: SyntaxNode) => void, n: SyntaxNode) => {
    if (outOfTime || (failed.size !== 0 && failed.has(check.id))) return;
    if (++sinceClock >= CLOCK_EVERY) {
      sinceClock = 0;
      if (performance.now() > deadline) {
        outOfTime = true;
        errors.push({ path: source.path, message: `analysis of ${source.label} ran out of its time budget; some checks did not run` });
        return;
      }
    }
    try {
      if (!PROFILE_RULES) fn(n);
      else {
        const t0 = performance.now();
        const before = analysisMs;
        try {
          fn(n);
        } finally {
          addTime(`${check.id} [${source.language}]`, performance.now() - t0 - (analysisMs - before));
        }
      }
    } catch (e) {
      failed.add(check.id);
      errors.push({ path: source.path, message: `check ${check.id} failed on ${source.label}: ${(e as Error).message}` });
    }
  };
  if (dispatch.size) {
    const nodes = source.root.descendantsOfType([...dispatch.keys()]);
    for (const n of nodes) {
      const list = dispatch.get(n.type);
      if (list) for (let k = 0; k < list.length; k++) guard(list[k].check, list[k].fn, n);
    }
  }
  // Whole-source passes are the long ones: the clock is read before each.
  for (const { check, fn } of exits) {
    sinceClock = CLOCK_EVERY;
    guard(check, fn as unknown as (n: SyntaxNode) => void, source.root);
  }
  return findings.filter((f) => !overlapsError(source, f.startIndex, f.endIndex));
}

function toFinding(check: CheckDef, source: Source, r: Report, config: ResolvedConfig): RawFinding | null {
  const start = source.toFile(r.node.startPosition.row, r.node.startPosition.column);
  if (!start) return null;
  const end = source.toFile(r.node.endPosition.row, r.node.endPosition.column) ?? start;
  const template = check.messages[r.messageId];
  if (!template) throw new Error(`unknown message id "${r.messageId}"`);
  const scope = enclosingFunction(r.node);
  const group = groupOf(check, source, r, scope);
  const finding: RawFinding = {
    ruleId: check.id,
    pass: check.pass,
    severity: r.severity && severityRank(r.severity) > severityRank(check.severity) ? r.severity : check.severity,
    confidence: check.confidence,
    kind: check.kind,
    messageId: r.messageId,
    // Project index: name the other file's fact the finding rests on (src/index/explain.ts).
    message: renderMessage(template, r.data) + (config.projectIndex ? (explainFinding(source, config, r.node) ?? '') : ''),
    citation: check.citation,
    why: check.why,
    docUrl: ruleDocUrl(config.docsUrl, check.id),
    path: source.path,
    language: source.language,
    line: start.line,
    endLine: Math.max(start.line, end.line),
    column: start.column,
    endColumn: end.column,
    fingerprint: '',
    sourceLabel: source.label,
    startIndex: r.node.startIndex,
    endIndex: r.node.endIndex,
    scope,
    groupKey: group?.key ?? null,
    ...(r.subject ? { subject: r.subject } : {}),
  };
  if (r.fix) {
    finding.fix = { kind: check.fix === 'safe' && r.fix.replace ? 'safe' : 'judgment', description: r.fix.description };
    if (r.fix.replace && check.fix === 'safe') {
      const a = source.toFile(r.fix.replace.from.startPosition.row, 0);
      const b = source.toFile((r.fix.replace.to ?? r.fix.replace.from).endPosition.row, 0);
      const rows = (r.fix.replace.to ?? r.fix.replace.from).endPosition.row - r.fix.replace.from.startPosition.row;
      // Only a fix whose lines map one-to-one onto file lines can become a suggestion.
      if (a && b && b.line - a.line === rows) {
        finding.fix.replace = { startLine: a.line, endLine: b.line, text: r.fix.replace.text };
      } else {
        finding.fix.kind = 'judgment';
      }
    }
  }
  finding.fingerprint = group ? fingerprint(check.id, source.path, (r.groupBy ?? check.group) === 'value' ? '' : scope, group.anchor) : fingerprint(check.id, source.path, scope, r.node.text);
  return finding;
}

/** Line-independent identity: rule, path, enclosing function and the flagged code, whitespace-normalised. */
export function fingerprint(ruleId: string, path: string, scope: string, code: string): string {
  const norm = code.replace(/\s+/g, ' ').trim();
  return createHash('sha256').update(`${ruleId}\0${path}\0${scope}\0${norm}`).digest('hex').slice(0, 20);
}

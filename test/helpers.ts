import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { resolveConfig, type ResolvedConfig } from '../src/config/schema.js';
import type { CheckDef } from '../src/engine/check.js';
import { CHECKS } from '../checks/registry.generated.js';
import type { Finding } from '../src/core/types.js';
import { review, type Scope } from '../src/review/pipeline.js';

/** A `git diff` of one added file. */
export function addedFileDiff(path: string, text: string): string {
  const lines = text.split('\n');
  const noEol = !text.endsWith('\n');
  if (!noEol) lines.pop();
  const body = lines.map((l) => '+' + l).join('\n');
  return [
    `diff --git a/${path} b/${path}`,
    'new file mode 100644',
    'index 0000000..1111111',
    '--- /dev/null',
    `+++ b/${path}`,
    `@@ -0,0 +1,${lines.length} @@`,
    body,
    ...(noEol ? ['\\ No newline at end of file'] : []),
    '',
  ].join('\n');
}

/** nvcc runs here (CI installs it); tests of compiler evidence are skipped cleanly without it. */
export const hasNvcc = spawnSync('nvcc', ['--version'], { stdio: 'ignore' }).status === 0;

export function config(raw: unknown = {}): ResolvedConfig {
  return resolveConfig(raw, CHECKS.map((c) => c.id));
}

export async function reviewText(
  path: string,
  text: string,
  opts: { checks?: readonly CheckDef[]; config?: unknown; repoMode?: boolean; scope?: Scope } = {},
): Promise<Finding[]> {
  // Fixtures run every rule they are given: preview ones, and retired ones (which only run when named).
  const retired = (opts.checks ?? []).filter((c) => c.status === 'retired').map((c) => [c.id, 'on']);
  const resolved = config(opts.config ?? { enable_preview: true, ...(retired.length ? { rules: Object.fromEntries(retired) } : {}) });
  const out = await review({
    diff: addedFileDiff(path, text),
    config: resolved,
    scope: opts.scope ?? 'file',
    checks: opts.checks,
    // Rules that read the compiler's figures get them, as with --compile.
    compile: opts.checks?.some((c) => c.requires === 'compiler') ? { settings: resolved.compile } : undefined,
    readFile: opts.repoMode ? async (p) => (p === path ? text : null) : undefined,
  });
  return out.result.findings;
}

export interface Marker {
  kind: 'ruleid' | 'ok' | 'todoruleid' | 'todook';
  rule: string;
  /** 1-based line the marker points at. */
  target: number;
}

const MARKER_ONLY = /^\s*(?:#|\/\/|\/\*)\s*(ruleid|ok|todoruleid|todook):/;
const MARKER = /(?:#|\/\/|\/\*)\s*(ruleid|ok|todoruleid|todook):\s*([\w\-/]+)/;

/** Markers sit in a comment on the line before their target (stacked markers share the target). */
export function parseMarkers(text: string): Marker[] {
  const lines = text.split('\n');
  const out: Marker[] = [];
  lines.forEach((l, i) => {
    const m = MARKER.exec(l);
    if (!m) return;
    let t = i + 1;
    while (t < lines.length && MARKER_ONLY.test(lines[t])) t++;
    out.push({ kind: m[1] as Marker['kind'], rule: m[2], target: t + 1 });
  });
  return out;
}

/** `# gpu-review-fixture: path=tests/test_x.py` on the first line sets the path the fixture is reviewed under. */
export function fixturePath(file: string, text: string, fallback: string): string {
  const m = /gpu-review-fixture:\s*path=(\S+)/.exec(text.split('\n')[0] ?? '');
  return m ? m[1] : fallback;
}

export function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out.sort();
}

export function read(p: string): string {
  return readFileSync(p, 'utf8');
}

/** Apply whole-line replacements (bottom-up) to a text. */
/**
 * A snapshot of findings as Ruff keeps them: `line:col ruleId messageId message`, one finding a
 * line, the sites of a grouped finding indented under it; with `withPath`, each file's path heads its findings.
 */
export function snapshot(findings: readonly Finding[], withPath = false): string {
  const out: string[] = [];
  let path: string | null = null;
  for (const f of [...findings].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) || a.line - b.line || a.column - b.column || (a.ruleId < b.ruleId ? -1 : 1))) {
    if (withPath && f.path !== path) out.push(`${(path = f.path)}`);
    out.push(`${f.line}:${f.column} ${f.ruleId} ${f.messageId} ${f.message}`);
    for (const m of f.members ?? []) out.push(`    ${m.line}:${m.column} ${m.message}`);
  }
  return out.join('\n') + '\n';
}

/** Each site of each finding: a grouped finding becomes one finding per member (its line, message, fix). */
export function sites(findings: Finding[]): Finding[] {
  return findings.flatMap((f) => (f.members ? f.members.map((m) => ({ ...f, ...m, fix: m.fix, members: undefined })) : [f]));
}

export function applyFixes(text: string, findings: Finding[]): string {
  findings = sites(findings);
  const lines = text.split('\n');
  const edits = findings
    .filter((f) => f.fix?.kind === 'safe' && f.fix.replace)
    .map((f) => f.fix!.replace!)
    .sort((a, b) => b.startLine - a.startLine);
  // Same reading as the reporters (replacementLines): '' deletes the lines, a final newline adds no line.
  for (const e of edits) lines.splice(e.startLine - 1, e.endLine - e.startLine + 1, ...(e.text === '' ? [] : e.text.replace(/\r?\n$/, '').split('\n')));
  return lines.join('\n');
}

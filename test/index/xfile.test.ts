/**
 * Facts across files (src/index/): each folder of test/fixtures/xfile/ is a small repository whose
 * changed file (the one with `ruleid:` / `ok:` markers) uses a helper, a header constant or a wrapper
 * defined in another file. The built CLI reviews it in --repo mode and in --git mode (a temporary
 * repository where the changed file arrives in the last commit); both must give the markers' findings,
 * the same ones, and at least one marker must depend on the other file (index off: it no longer holds).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTmp, GIT_ENV, tmpDir, TmpRepo } from '../diff/tmp-git.js';
import { parseMarkers } from '../helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
const CASES = join(ROOT, 'test', 'fixtures', 'xfile');

interface Out {
  status: number | null;
  stdout: string;
  stderr: string;
}
function cli(args: string[], cwd: string): Promise<Out> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...GIT_ENV, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

function filesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? filesOf(join(dir, n)) : [join(dir, n)]));
}

function addedFileDiff(path: string, text: string): string {
  const lines = text.replace(/\n$/, '').split('\n');
  return `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}`).join('\n')}\n`;
}

type Found = Array<{ ruleId: string; line: number; message: string }>;
function findingsOf(o: Out): Found {
  expect(o.stderr.split('\n').filter((l) => /^gpu-review:/.test(l))).toEqual([]);
  const report = JSON.parse(o.stdout) as { findings: Found };
  return report.findings.map((f) => ({ ruleId: f.ruleId, line: f.line, message: f.message }));
}

const cases = readdirSync(CASES).filter((c) => statSync(join(CASES, c)).isDirectory());

describe('project index: cases spanning files', () => {
  afterAll(() => cleanupTmp());
  it('has a case per language', () => {
    expect(cases.some((c) => c.startsWith('py-'))).toBe(true);
    expect(cases.some((c) => c.startsWith('cu-'))).toBe(true);
    expect(cases.some((c) => c.startsWith('luisa-'))).toBe(true);
  });
  for (const name of cases) {
    it(`${name}: --repo and --git give the markers' findings, and they need the other file`, async () => {
      const dir = join(CASES, name);
      const all = filesOf(dir).map((f) => relative(dir, f));
      const changed = all.filter((p) => parseMarkers(readFileSync(join(dir, p), 'utf8')).length);
      expect(changed.length, 'one changed file with markers').toBe(1);
      const path = changed[0];
      const text = readFileSync(join(dir, path), 'utf8');
      const markers = parseMarkers(text);
      const tmp = tmpDir('gpu-review-xfile-');
      const diffFile = join(tmp, 'change.diff');
      writeFileSync(diffFile, addedFileDiff(path, text));
      writeFileSync(join(tmp, 'no-index.yml'), 'index:\n  enabled: false\n');

      // --git: the other files in a first commit, the changed file in the second.
      const repo = new TmpRepo();
      for (const p of all.filter((p) => p !== path)) {
        mkdirSync(dirname(join(repo.dir, p)), { recursive: true });
        cpSync(join(dir, p), join(repo.dir, p));
      }
      repo.git('add', '-A');
      repo.git('commit', '-q', '-m', 'helpers');
      mkdirSync(dirname(join(repo.dir, path)), { recursive: true });
      cpSync(join(dir, path), join(repo.dir, path));
      repo.git('add', '-A');
      repo.git('commit', '-q', '-m', 'change');

      const [byRepo, byGit, without] = await Promise.all([
        cli(['review', '--repo', dir, '--format', 'json', '--fail-on', 'none', diffFile], ROOT),
        cli(['review', '--git', 'HEAD~1..HEAD', '--format', 'json', '--fail-on', 'none'], repo.dir),
        cli(['review', '--repo', dir, '--config', join(tmp, 'no-index.yml'), '--format', 'json', '--fail-on', 'none', diffFile], ROOT),
      ]);
      const a = findingsOf(byRepo);
      const b = findingsOf(byGit);
      const c = findingsOf(without);
      expect(b).toEqual(a);
      let dependsOnIndex = false;
      for (const m of markers) {
        const hit = (f: Found) => f.some((x) => x.ruleId === m.rule && x.line === m.target);
        if (m.kind === 'ruleid') expect(hit(a), `${path}:${m.target} expects ${m.rule}`).toBe(true);
        if (m.kind === 'ok') expect(hit(a), `${path}:${m.target} must not get ${m.rule}`).toBe(false);
        if (hit(a) !== hit(c)) dependsOnIndex = true;
      }
      expect(dependsOnIndex, 'some marker holds only with the other file').toBe(true);
      // A finding that rests on another file's fact names where that fact is.
      for (const f of a.filter((x) => markers.some((m) => m.kind === 'ruleid' && m.rule === x.ruleId && m.target === x.line) && !c.some((y) => y.ruleId === x.ruleId && y.line === x.line))) {
        expect(f.message).toMatch(/\((`[^`]+`|[^()]*) .*[\w/.-]+:\d+\)/);
      }
    }, 120_000);
  }
});

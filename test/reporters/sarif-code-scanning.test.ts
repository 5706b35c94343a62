/**
 * SARIF as GitHub code scanning ingests it, on the built CLI's `scan --format sarif`: rule
 * metadata (descriptions, the README as help, tags, precision), fingerprints that survive line
 * moves, the SARIF 2.1.0 schema, and Microsoft's SARIF validator with GitHub's ingestion rules
 * (`sarif-multitool validate --rule-kind "Gh;Sarif"`, the checks GitHub Advanced Security runs).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { cleanupTmp, tmpDir } from '../diff/tmp-git.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
const require = createRequire(import.meta.url);

afterAll(() => cleanupTmp());

const CODE = (pad: number) =>
  ['import cupy as cp', '', ...Array(pad).fill('# moved down'), '', 'def sizes(d_sizes, n):', '    out = 0', '    for k in range(n):', '        out += int(d_sizes[k])', '        d_sizes = cp.cumsum(d_sizes)', '    return out', ''].join('\n');

/** Asynchronous, so a slow run never blocks the test worker's event loop. */
function exec(cmd: string, args: string[], cwd?: string): Promise<{ status: number | null; stdout: string; stderr: string; error?: Error }> {
  return new Promise((res) => {
    const child = spawn(cmd, args, { cwd, timeout: 300_000, env: { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: '1', GPU_REVIEW_DOCS_URL: 'https://docs.example.test/gpu-review/checks' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', (error) => res({ status: null, stdout, stderr, error }));
    child.on('close', (status) => res({ status, stdout, stderr }));
  });
}

async function scanSarif(dir: string): Promise<any> {
  const r = await exec(process.execPath, [CLI, 'scan', '--format', 'sarif', '--enable-preview'], dir);
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout);
}

function multitool(): string | null {
  try {
    const pkg = require.resolve(`@microsoft/sarif-multitool-${process.platform}/package.json`);
    const bin = join(dirname(pkg), process.platform === 'win32' ? 'Sarif.Multitool.exe' : 'Sarif.Multitool');
    return existsSync(bin) ? bin : null;
  } catch {
    return null;
  }
}

describe('SARIF for code scanning', () => {
  let log: any;
  let run: any;
  beforeAll(async () => {
    const dir = tmpDir('adopt-sarif-');
    writeFileSync(join(dir, 'k.py'), CODE(0));
    log = await scanSarif(dir);
    run = log.runs[0];
  }, 120_000);

  it('every rule carries the metadata code scanning shows', () => {
    const rules = run.tool.driver.rules;
    expect(rules.length).toBe(CHECKS.length);
    for (const r of rules) {
      const check = CHECKS.find((c) => c.id === r.id)!;
      expect(r.shortDescription.text, r.id).toBe(check.summary);
      expect(r.fullDescription.text, r.id).toBe(check.why);
      expect(r.helpUri, r.id).toMatch(new RegExp(`^https://.*/checks/${r.id}/README\\.md$`));
      const readme = join(ROOT, 'checks', r.id, 'README.md');
      if (existsSync(readme)) expect(r.help.markdown, r.id).toBe(readFileSync(readme, 'utf8'));
      // GitHub: at most 20 tags, and precision one of its four values.
      expect(r.properties.tags.length, r.id).toBeLessThanOrEqual(20);
      expect(r.properties.tags, r.id).toContain(r.id.split('/')[0]);
      expect(r.properties.tags).not.toContain('security'); // would file the results as security alerts
      expect(['very-high', 'high', 'medium', 'low']).toContain(r.properties.precision);
    }
  });

  it('partialFingerprints stay the same when the code moves down the file', async () => {
    const moved = tmpDir('adopt-sarif-');
    writeFileSync(join(moved, 'k.py'), CODE(9));
    const after = (await scanSarif(moved)).runs[0].results;
    const before = run.results;
    expect(before.length).toBeGreaterThan(0);
    expect(after.map((r: any) => r.partialFingerprints)).toEqual(before.map((r: any) => r.partialFingerprints));
    expect(after[0].locations[0].physicalLocation.region.startLine).toBe(before[0].locations[0].physicalLocation.region.startLine + 9);
  });

  it('is valid SARIF 2.1.0 (schema)', () => {
    const schema = JSON.parse(readFileSync(require.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'), 'utf8'));
    const { $schema: _d, id, ...rest } = schema;
    const ajv = new Ajv({ allErrors: true, strict: false, unicodeRegExp: false });
    addFormatsPlugin.default(ajv);
    const validate = ajv.compile({ ...rest, $id: id });
    expect(validate(log), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
  });

  it("passes sarif-multitool's SARIF and GitHub ingestion rules, which do catch a broken log", async (ctx) => {
    const bin = multitool();
    if (!bin) {
      ctx.skip();
      return;
    }
    const check = async (doc: any) => {
      const file = join(tmpDir('adopt-smt-'), 'log.sarif');
      const out = `${file}.validation.sarif`;
      writeFileSync(file, JSON.stringify(doc));
      const r = await exec(bin, ['validate', '--rule-kind', 'Gh;Sarif', '--output', out, file]);
      if (r.error) return null; // cannot start here (wrong arch, not executable)
      expect(existsSync(out), r.stdout + r.stderr).toBe(true);
      const results = JSON.parse(readFileSync(out, 'utf8')).runs[0].results ?? [];
      return results.filter((x: any) => x.level === 'error' || x.level === 'warning').map((x: any) => `${x.ruleId}: ${x.message?.text ?? ''}`);
    };
    const problems = await check(log);
    if (problems === null) {
      ctx.skip();
      return;
    }
    expect(problems).toEqual([]);
    // The validator is live: a rule without shortDescription breaks GitHub's GH2012.
    const broken = structuredClone(log);
    delete broken.runs[0].tool.driver.rules[0].shortDescription;
    expect(((await check(broken)) ?? []).join('\n')).toMatch(/GH2012/);
  }, 600_000);
});

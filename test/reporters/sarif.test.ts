import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { pathToUri, renderSarif, sarifLevel } from '../../src/reporters/sarif.js';
import type { SarifRule } from '../../src/reporters/sarif.js';
import { ALL, COPY_IN_LOOP, DIVERGENT_SYNC, GET_IN_LOOP, finding, makeInput } from './fixtures.js';

// A CommonJS module seen from ESM: its `export default` is the `.default` of module.exports.
const addFormats = addFormatsPlugin.default;

/**
 * The SARIF 2.1.0 schema as published to SchemaStore (2.1.0-rtm.5), shipped by
 * @microsoft/jest-sarif. It declares draft-04 with `id`; its keywords are all valid in draft-07,
 * which Ajv 8 speaks, so only the two header keys are adjusted.
 */
function sarifValidator() {
  const require = createRequire(import.meta.url);
  const file = require.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json');
  const schema = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  expect(schema.title).toMatch(/SARIF\) Version 2\.1\.0/);
  const { $schema: _draft, id, ...rest } = schema;
  // The schema's `language` pattern has a stray `]` that only a non-unicode RegExp accepts.
  const ajv = new Ajv({ allErrors: true, strict: false, unicodeRegExp: false });
  addFormats(ajv);
  return ajv.compile({ ...rest, $id: id as string });
}

const RULES: SarifRule[] = [
  {
    id: 'sync/syncthreads-in-branch',
    summary: '__syncthreads() reached by only some threads',
    citation: 'CUDA C++ Programming Guide §7.6',
    docUrl: 'https://github.com/gpu-review/gpu-review/blob/main/checks/sync/syncthreads-in-branch/README.md',
    severity: 'critical',
  },
  {
    id: 'host-device/memcpy-in-loop',
    summary: 'Synchronous copy inside a loop',
    citation: '003 §8.2',
    docUrl: 'https://github.com/gpu-review/gpu-review/blob/main/checks/host-device/memcpy-in-loop/README.md',
    severity: 'high',
  },
  { id: 'precision/double-literal', summary: 'Double literal in float code', citation: '004 §2', docUrl: '', severity: 'low', pass: 4 },
];

const validate = sarifValidator();

function run(input = makeInput({ errors: [{ path: 'src/bad file.cu', message: 'cannot read' }] })) {
  const text = renderSarif(input, RULES);
  return { text, log: JSON.parse(text) };
}

describe('renderSarif', () => {
  it('is valid against the SARIF 2.1.0 JSON schema', () => {
    const { log } = run();
    const ok = validate(log);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it('the validator catches a broken log', () => {
    const { log } = run();
    log.runs[0].results[0].level = 'critical';
    delete log.runs[0].invocations[0].executionSuccessful;
    expect(validate(log)).toBe(false);
    const { log: other } = run();
    other.runs[0].results[0].locations[0].physicalLocation.region.startLine = 0;
    expect(validate(other)).toBe(false);
    const { log: third } = run();
    third.runs[0].results[0].partialFingerprint = {};
    expect(validate(third)).toBe(false);
  });

  it('declares schema, version and the driver with its rules', () => {
    const { text, log } = run();
    expect(text.endsWith('}\n')).toBe(true);
    expect(log.$schema).toBe('https://json.schemastore.org/sarif-2.1.0.json');
    expect(log.version).toBe('2.1.0');
    const driver = log.runs[0].tool.driver;
    expect(driver).toMatchObject({ name: 'gpu-review', version: '0.1.0' });
    const ids = driver.rules.map((r: { id: string }) => r.id);
    // Rules the caller listed, plus those only findings name; sorted for stable indices.
    expect(ids).toEqual([...new Set([...RULES.map((r) => r.id), ...ALL.map((f) => f.ruleId)])].sort());
    const sync = driver.rules.find((r: { id: string }) => r.id === 'sync/syncthreads-in-branch');
    expect(sync).toEqual({
      id: 'sync/syncthreads-in-branch',
      shortDescription: { text: '__syncthreads() reached by only some threads' },
      defaultConfiguration: { level: 'error' },
      properties: { citation: 'CUDA C++ Programming Guide §7.6', severity: 'critical', pass: 2 },
      helpUri: 'https://github.com/gpu-review/gpu-review/blob/main/checks/sync/syncthreads-in-branch/README.md',
      help: { text: 'Source: CUDA C++ Programming Guide §7.6 · https://github.com/gpu-review/gpu-review/blob/main/checks/sync/syncthreads-in-branch/README.md' },
    });
    const precision = driver.rules.find((r: { id: string }) => r.id === 'precision/double-literal');
    expect(precision.properties.pass).toBe(4);
    expect(precision).not.toHaveProperty('helpUri');
    expect(precision.defaultConfiguration.level).toBe('note');
  });

  it('writes one result per finding with rule index, level, region, fingerprint and properties', () => {
    const { log } = run();
    const { results, tool } = log.runs[0];
    expect(results).toHaveLength(ALL.length);
    for (const r of results) expect(tool.driver.rules[r.ruleIndex].id).toBe(r.ruleId);
    const sync = results.find((r: { ruleId: string }) => r.ruleId === DIVERGENT_SYNC.ruleId);
    expect(sync).toMatchObject({
      level: 'error',
      message: { text: DIVERGENT_SYNC.message },
      locations: [
        {
          physicalLocation: {
            artifactLocation: { uri: 'src/kernels/reduce.cu' },
            region: { startLine: 13, startColumn: 7, endLine: 13, endColumn: 23 },
          },
        },
      ],
      partialFingerprints: { 'gpuReview/v1': 'a1b2c3d4e5f6a7b8c9d0' },
      properties: { severity: 'critical', confidence: 'high', pass: 2, citation: 'CUDA C++ Programming Guide §7.6' },
    });
    // A judgment fix is prose for a human, not a SARIF fix.
    expect(sync).not.toHaveProperty('fixes');
  });

  it('maps the six severities onto three levels', () => {
    expect(['critical', 'high', 'medium-high', 'medium', 'low-medium', 'low'].map((s) => sarifLevel(s as never))).toEqual([
      'error', 'error', 'warning', 'warning', 'note', 'note',
    ]);
  });

  it('describes safe fixes as whole-line replacements', () => {
    const { log } = run();
    const copy = log.runs[0].results.find((r: { ruleId: string }) => r.ruleId === COPY_IN_LOOP.ruleId);
    expect(copy.fixes).toEqual([
      {
        description: { text: COPY_IN_LOOP.fix!.description },
        artifactChanges: [
          {
            artifactLocation: { uri: 'src/kernels/reduce.cu' },
            replacements: [
              {
                deletedRegion: { startLine: 24, endLine: 24 },
                insertedContent: { text: '    cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, 0);' },
              },
            ],
          },
        ],
      },
    ]);
    const get = log.runs[0].results.find((r: { ruleId: string }) => r.ruleId === GET_IN_LOOP.ruleId);
    expect(get.fixes[0].artifactChanges[0].replacements[0]).toEqual({
      deletedRegion: { startLine: 6, endLine: 7 },
      insertedContent: { text: '    for x in xs:\n        acc += float(cp.sum(x))' },
    });
  });

  it('deletes whole lines, line breaks included, for an empty replacement', () => {
    const f = { ...COPY_IN_LOOP, fix: { kind: 'safe' as const, description: 'Drop it.', replace: { startLine: 24, endLine: 25, text: '' } } };
    const { log } = run(makeInput({ findings: [f] }));
    expect(validate(log)).toBe(true);
    expect(log.runs[0].results[0].fixes[0].artifactChanges[0].replacements).toEqual([
      { deletedRegion: { startLine: 24, startColumn: 1, endLine: 26, endColumn: 1 } },
    ]);
  });

  it('reports skipped files and errors as tool execution notifications', () => {
    const { log } = run();
    const inv = log.runs[0].invocations[0];
    expect(inv.executionSuccessful).toBe(true);
    expect(inv.toolExecutionNotifications).toEqual([
      {
        level: 'note',
        descriptor: { id: 'skipped-file' },
        message: { text: 'Skipped assets/logo.png: binary file' },
        locations: [{ physicalLocation: { artifactLocation: { uri: 'assets/logo.png' } } }],
      },
      {
        level: 'error',
        descriptor: { id: 'review-error' },
        message: { text: 'cannot read' },
        locations: [{ physicalLocation: { artifactLocation: { uri: 'src/bad%20file.cu' } } }],
      },
    ]);
  });

  it('escapes paths into URI references', () => {
    expect(pathToUri('src/a b/c#1?.cu')).toBe('src/a%20b/c%231%3F.cu');
    expect(pathToUri('src/ünï.cu')).toBe('src/%C3%BCn%C3%AF.cu');
  });

  it('stays valid for an empty review and for odd columns', () => {
    const empty = JSON.parse(renderSarif(makeInput({ findings: [], files: [] }), []));
    expect(validate(empty)).toBe(true);
    expect(empty.runs[0].results).toEqual([]);
    const odd = finding({ ruleId: 'x/y', line: 3, column: 0, endColumn: 0 });
    const { log } = run(makeInput({ findings: [odd] }));
    expect(validate(log)).toBe(true);
    expect(log.runs[0].results[0].locations[0].physicalLocation.region).toEqual({ startLine: 3, startColumn: 1, endLine: 3, endColumn: 2 });
  });
});

import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ConfigError, resolveConfig, type ResolvedConfig } from '../../src/config/schema.js';
import { DEFAULT_HOT_PATH_FUNCTIONS, DEFAULT_VOCABULARIES } from '../../src/config/vocabularies.js';
import type { CheckDef } from '../../src/engine/check.js';
import { CHECKS } from '../../checks/registry.generated.js';
import { SEVERITIES } from '../../src/core/types.js';
import { activeChecks, review } from '../../src/review/pipeline.js';
import { addedFileDiff } from '../helpers.js';
import { applyOneOff } from '../../src/adopt/select.js';

const IDS = CHECKS.map((c) => c.id);
const GET_IN_LOOP = 'host-device/get-in-loop';

function resolve(raw: unknown, ids: readonly string[] = IDS): ResolvedConfig {
  return resolveConfig(raw, ids);
}

/** The ConfigError `raw` raises (fails the test when it raises nothing or something else). */
function configError(raw: unknown, ids: readonly string[] = IDS): ConfigError {
  try {
    resolveConfig(raw, ids);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(raw)}`);
}

const PING_PONG = `import cupy as cp
from vibespatial import runtime


def fill(d_counts, n):
    out = []
    for i in range(n):
        total = d_counts[i].get()
        runtime.launch(k, grid=1, block=1, args=(total,))
        out.append(total)
    return out
`;

async function findingsUnder(raw: unknown) {
  const out = await review({ diff: addedFileDiff('pkg/fill.py', PING_PONG), config: resolve(raw), scope: 'file' });
  return out.result.findings.filter((f) => f.ruleId === GET_IN_LOOP);
}

describe('resolveConfig: defaults', () => {
  it.each([
    ['an empty object', {}],
    ['null (an empty YAML file)', null],
    ['undefined', undefined],
  ])('%s resolves to the documented defaults', (_name, raw) => {
    const c = resolve(raw);
    expect(c.passes).toEqual({ 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true });
    expect(c.rules).toEqual({});
    expect(c.minSeverity).toBe('low');
    expect(c.failOn).toBe('high');
    expect(c.include).toEqual([]);
    expect(c.exclude).toEqual([]);
    expect(c.targets.map((t) => t.name)).toEqual(['A100', 'H100', 'RTX 3090', 'RTX 4090']);
    expect(c.vocab).toEqual(DEFAULT_VOCABULARIES);
    expect(c.hotPathFunctions.source).toBe(DEFAULT_HOT_PATH_FUNCTIONS);
    expect(c.inlineCommentCap).toBe(30);
    expect(c.enablePreview).toBe(false);
    expect(c.skipDrafts).toBe(true);
    expect(c.skipBotAuthors).toBe(true);
    expect(c.limits).toEqual({ maxFileBytes: 2_000_000, maxLineLength: 20_000, fileTimeoutMs: 20_000, reviewTimeoutMs: 600_000, onTimeout: 'neutral' });
  });

  it('the example configuration of the README is valid and resolves as written', () => {
    const yaml = `
passes: { "4": false }
rules:
  ${GET_IN_LOOP}: high
min_severity: low
fail_on: high
include: ["src/**", "python/**"]
exclude: ["third_party/**"]
targets: [A100, H100, RTX 3090, RTX 4090]
vocabularies:
  sync_calls: [my_runtime.fence]
  device_helpers: [mylib.device_empty]
hot_path_functions: "^(dispatch|launch|run|execute|_gpu_|.*_kernel$|.*_pipeline$)"
inline_comment_cap: 30
enable_preview: false
limits: { max_file_bytes: 2000000, max_line_length: 20000, file_timeout_ms: 5000 }
`;
    const c = resolve(YAML.parse(yaml));
    expect(c.passes[4]).toBe(false);
    expect(c.passes[1]).toBe(true);
    expect(c.rules).toEqual({ [GET_IN_LOOP]: 'high' });
    expect(c.include).toEqual(['src/**', 'python/**']);
    expect(c.exclude).toEqual(['third_party/**']);
    expect(c.vocab.sync_calls).toContain('my_runtime.fence');
    expect(c.vocab.device_helpers).toContain('mylib.device_empty');
    expect(c.hotPathFunctions.test('my_kernel')).toBe(true);
    expect(c.hotPathFunctions.test('helper')).toBe(false);
  });

  it('explicit values override the defaults', () => {
    const c = resolve({ min_severity: 'medium', fail_on: 'none', inline_comment_cap: 0, enable_preview: true, skip_drafts: false, limits: { max_line_length: 100 } });
    expect(c.minSeverity).toBe('medium');
    expect(c.failOn).toBe('none');
    expect(c.inlineCommentCap).toBe(0);
    expect(c.enablePreview).toBe(true);
    expect(c.skipDrafts).toBe(false);
    expect(c.limits).toEqual({ maxFileBytes: 2_000_000, maxLineLength: 100, fileTimeoutMs: 20_000, reviewTimeoutMs: 600_000, onTimeout: 'neutral' });
  });

  it('targets accept every built-in GPU and its aliases', () => {
    const names = ['V100', 'T4', 'A10', 'A10G', 'A40', 'L4', 'L40S', 'H200', 'H200 SXM', 'B200', 'GB200', 'RTX 5090', 'RTX 6000 Ada', 'Jetson AGX Orin', 'AGX Orin'];
    const got = resolve({ targets: names }).targets.map((t) => t.name);
    expect(got).toEqual(['V100', 'T4', 'A10', 'A10G', 'A40', 'L4', 'L40S', 'H200', 'H200', 'B200', 'GB200', 'RTX 5090', 'RTX 6000 Ada', 'Jetson AGX Orin', 'Jetson AGX Orin']);
    expect(resolve({ targets: ['h200sxm', 'rtx-5090', 'a10g'] }).targets.map((t) => t.cc)).toEqual(['9.0', '12.0', '8.6']);
  });

  it('a custom GPU under gpus: defaults its limits from the cc and can be a target', () => {
    const c = resolve({ gpus: { MyCard: { cc: '8.9', sms: 58, l2_mb: 32 } }, targets: ['MyCard', 'H100'] });
    const g = c.targets[0]!;
    expect(g.name).toBe('MyCard');
    expect(g.custom).toBe(true);
    expect([g.sms, g.maxBlocksPerSm, g.maxWarpsPerSm, g.smemPerSmKb, g.smemPerBlockOptinKb, g.reservedSmemPerBlockBytes]).toEqual([58, 24, 48, 100, 99, 1024]);
    expect(g.l2SetAsideMaxMb).toBe(24);
    expect(c.targets[1]!.name).toBe('H100');
    // YAML reads `cc: 12.0` as the number 12; overrides win over the cc's limits.
    const b = resolve({ gpus: { Card2: { cc: 12, sms: 10, max_warps_per_sm: 32, smem_per_sm_kb: 64, aliases: ['c2'] } }, targets: ['c2'] }).targets[0]!;
    expect([b.cc, b.maxWarpsPerSm, b.maxThreadsPerSm, b.smemPerSmKb, b.smemPerBlockOptinKb]).toEqual(['12.0', 32, 1024, 64, 64]);
    expect(b.smemCarveoutsKb.at(-1)).toBe(64);
    // Defining a GPU does not change the default targets.
    expect(resolve({ gpus: { MyCard: { cc: '8.0', sms: 1 } } }).targets.map((t) => t.name)).toEqual(['A100', 'H100', 'RTX 3090', 'RTX 4090']);
  });

  it('targets accept the spellings lookupGpu documents', () => {
    expect(resolve({ targets: ['rtx4090', 'h100'] }).targets.map((t) => t.name)).toEqual(['RTX 4090', 'H100']);
  });
});

describe('resolveConfig: errors name what is wrong', () => {
  it('an unknown top-level key names the key', () => {
    const e = configError({ fail_on: 'high', severity_threshold: 'low' });
    expect(e.message).toContain('"severity_threshold"');
    expect(e.message).toMatch(/unknown key/);
  });

  it('several unknown keys are all named', () => {
    const e = configError({ foo: 1, bar: 2 });
    expect(e.message).toContain('"foo"');
    expect(e.message).toContain('"bar"');
  });

  it('a misspelt key (failOn instead of fail_on) is an error, not silently ignored', () => {
    expect(configError({ failOn: 'low' }).message).toContain('"failOn"');
  });

  it('an unknown key under limits names the key and where it is', () => {
    const e = configError({ limits: { max_file_bytes: 10, foo: 1 } });
    expect(e.message).toContain('"foo"');
    expect(e.message).toContain('limits');
  });

  it('an unknown vocabulary names the key and where it is', () => {
    const e = configError({ vocabularies: { sync_calls: ['x.fence'], bar: ['y'] } });
    expect(e.message).toContain('"bar"');
    expect(e.message).toContain('vocabularies');
  });

  it('an unknown rule id in rules is an error naming the id', () => {
    const e = configError({ rules: { 'host-device/get-in-loops': 'off' } });
    expect(e.message).toContain('"host-device/get-in-loops"');
    expect(e.message).toContain('rules');
  });

  it('rule ids are checked against the list given, not a pattern', () => {
    expect(() => resolve({ rules: { 'x/y': 'off' } }, ['x/y'])).not.toThrow();
    expect(configError({ rules: { 'x/y': 'off' } }, ['x/z']).message).toContain('"x/y"');
  });

  it.each(['urgent', 'HIGH', 'medium_high', 'warn', '', 'disabled'])('a bad severity %j for a rule names the rule and the valid values', (sev) => {
    const e = configError({ rules: { [GET_IN_LOOP]: sev } });
    expect(e.message).toContain(GET_IN_LOOP);
    for (const s of [...SEVERITIES, 'off', 'on']) expect(e.message).toContain(`"${s}"`);
  });

  it.each([
    ['min_severity', 'urgent'],
    ['fail_on', 'always'],
    ['min_severity', 'none'],
  ])('a bad severity in %s is an error naming the key', (key, value) => {
    const e = configError({ [key]: value });
    expect(e.message).toContain(key);
  });

  it('fail_on accepts "none", min_severity does not', () => {
    expect(resolve({ fail_on: 'none' }).failOn).toBe('none');
    expect(() => resolve({ min_severity: 'none' })).toThrow(ConfigError);
  });

  it('a bad custom GPU is a one-line error naming the key', () => {
    const cases: [unknown, string][] = [
      [{ gpus: { MyCard: { sms: 58 } } }, '"gpus.MyCard.cc"'],
      [{ gpus: { MyCard: { cc: '8.8', sms: 58 } } }, 'unknown compute capability'],
      [{ gpus: { MyCard: { cc: '8.9' } } }, '"gpus.MyCard.sms"'],
      [{ gpus: { MyCard: { cc: '8.9', sms: -3 } } }, '"gpus.MyCard.sms"'],
      [{ gpus: { MyCard: { cc: '8.9', sms: 2.5 } } }, '"gpus.MyCard.sms"'],
      [{ gpus: { MyCard: { cc: '8.9', sms: 58, smz: 1 } } }, '"smz"'],
      [{ gpus: { MyCard: { cc: '8.9', sms: 58, smem_per_block_optin_kb: 200 } } }, '"gpus.MyCard.smem_per_block_optin_kb"'],
      [{ gpus: { MyCard: { cc: '8.9', sms: 58, vram_gb: 'lots' } } }, '"gpus.MyCard.vram_gb"'],
      [{ gpus: { h100: { cc: '9.0', sms: 114 } } }, '"gpus.h100"'],
      [{ gpus: { MyCard: 'big' } }, '"gpus.MyCard"'],
    ];
    for (const [raw, needle] of cases) {
      const e = configError(raw);
      expect(e.message, JSON.stringify(raw)).toContain(needle);
      expect(e.message).not.toContain('\n');
    }
    expect(configError({ gpus: { MyCard: { cc: '8.8', sms: 58 } } }).message).toContain('"gpus.MyCard.cc"');
  });

  it('an unknown GPU in targets names the GPU', () => {
    const e = configError({ targets: ['A100', 'GTX 480'] });
    expect(e.message).toContain('"GTX 480"');
    // The message lists what is accepted, aliases included.
    for (const n of ['V100', 'T4', 'A10G', 'L4', 'H200 (H200 SXM)', 'B200', 'RTX 5090', 'Jetson AGX Orin']) expect(e.message).toContain(n);
    expect(e.message).toContain('targets');
  });

  it('an empty targets list is an error', () => {
    expect(configError({ targets: [] }).message).toContain('targets');
  });

  it.each(['(unclosed', '[a-', '*starts-with-star', '(?<name', 'a{2,1}'])('an invalid regex %j in hot_path_functions is an error naming the key', (re) => {
    expect(configError({ hot_path_functions: re }).message).toContain('hot_path_functions');
  });

  it('an invalid regex in setup_functions is an error naming the key', () => {
    expect(configError({ setup_functions: '(unclosed' }).message).toContain('setup_functions');
    expect(resolve({ setup_functions: '^init_' }).setupFunctions.test('init_pool')).toBe(true);
  });

  it('a valid custom hot_path_functions regex is used', () => {
    const c = resolve({ hot_path_functions: '^my_hot_' });
    expect(c.hotPathFunctions.test('my_hot_loop')).toBe(true);
    expect(c.hotPathFunctions.test('dispatch')).toBe(false);
  });

  it.each([
    ['passes key out of range', { passes: { '8': false } }, 'passes'],
    ['passes value not a boolean', { passes: { '1': 'no' } }, 'passes'],
    ['include not a list', { include: 'src/**' }, 'include'],
    ['vocabulary not a list', { vocabularies: { sync_calls: 'fence' } }, 'vocabularies.sync_calls'],
    ['vocabulary entry not a string', { vocabularies: { sync_calls: [1] } }, 'vocabularies.sync_calls'],
    ['negative limit', { limits: { max_file_bytes: -1 } }, 'limits.max_file_bytes'],
    ['fractional limit', { limits: { file_timeout_ms: 1.5 } }, 'limits.file_timeout_ms'],
    ['inline_comment_cap too large', { inline_comment_cap: 100000 }, 'inline_comment_cap'],
    ['enable_preview not a boolean', { enable_preview: 'yes' }, 'enable_preview'],
  ])('%s is an error naming the key', (_name, raw, key) => {
    expect(configError(raw).message).toContain(key);
  });

  it.each([
    ['a string', 'fail_on: high is not yaml here'],
    ['a list', ['fail_on', 'high']],
    ['a number', 42],
  ])('a config that is %s, not a mapping, is an error', (_name, raw) => {
    expect(configError(raw).message).toMatch(/expected object/);
  });

  it('error messages start with "invalid config:" and are one line', () => {
    for (const raw of [{ foo: 1 }, { rules: { nope: 'off' } }, { targets: ['GTX 480'] }, { gpus: { X: { cc: '9.9', sms: 1 } } }, { hot_path_functions: '(' }, { limits: { foo: 1 } }]) {
      const m = configError(raw).message;
      expect(m.startsWith('invalid config:')).toBe(true);
      expect(m).not.toContain('\n');
    }
  });
});

describe('resolveConfig: vocabularies', () => {
  it('extra names are added to the defaults, not replacing them', () => {
    const c = resolve({ vocabularies: { sync_calls: ['my_runtime.fence'], device_helpers: ['mylib.device_empty', 'mylib.device_zeros'] } });
    expect(c.vocab.sync_calls).toEqual([...DEFAULT_VOCABULARIES.sync_calls, 'my_runtime.fence']);
    expect(c.vocab.device_helpers).toEqual([...DEFAULT_VOCABULARIES.device_helpers, 'mylib.device_empty', 'mylib.device_zeros']);
    // Vocabularies that were not mentioned keep their defaults.
    expect(c.vocab.launch_calls).toEqual(DEFAULT_VOCABULARIES.launch_calls);
  });

  it('extending one config does not leak into the defaults or into another config', () => {
    const before = [...DEFAULT_VOCABULARIES.sync_calls];
    resolve({ vocabularies: { sync_calls: ['leak.fence'] } });
    expect(DEFAULT_VOCABULARIES.sync_calls).toEqual(before);
    expect(resolve({}).vocab.sync_calls).not.toContain('leak.fence');
  });

  it('every built-in vocabulary can be extended', () => {
    const raw = Object.fromEntries(Object.keys(DEFAULT_VOCABULARIES).map((k) => [k, [`extra_${k}`]]));
    const c = resolve({ vocabularies: raw });
    for (const k of Object.keys(DEFAULT_VOCABULARIES) as Array<keyof typeof DEFAULT_VOCABULARIES>) expect(c.vocab[k]).toContain(`extra_${k}`);
  });

  it('a project device helper (README form: mylib.device_empty) makes its result device data in the review', async () => {
    const src = `import mylib
from vibespatial import runtime


def fill(n):
    out = []
    for i in range(n):
        buf = mylib.device_empty(4)
        total = buf.get()
        runtime.launch(k, grid=1, block=1, args=(total,))
        out.append(total)
    return out
`;
    const run = async (raw: unknown) =>
      (await review({ diff: addedFileDiff('pkg/mine.py', src), config: resolve(raw), scope: 'file' })).result.findings.filter((f) => f.ruleId === GET_IN_LOOP);
    expect(await run({})).toHaveLength(0);
    const found = await run({ vocabularies: { device_helpers: ['mylib.device_empty'] } });
    expect(found).toHaveLength(1);
    expect(found[0].line).toBe(9);
  });
});

describe('rules and passes drive activeChecks', () => {
  const preview: CheckDef = { ...CHECKS.find((c) => c.id === GET_IN_LOOP)!, id: 'test/preview-rule', pass: 3, status: 'preview', severity: 'low' };
  const pass2: CheckDef = { ...CHECKS.find((c) => c.id === GET_IN_LOOP)!, id: 'test/pass-two', pass: 2, severity: 'medium' };
  const ALL = [...CHECKS, preview, pass2];
  const ALL_IDS = ALL.map((c) => c.id);

  it('by default every stable rule is active at its own severity, in pass order', () => {
    const active = activeChecks(resolve({}));
    expect(active.map((c) => c.id).sort()).toEqual(CHECKS.filter((c) => c.status !== 'preview' && c.status !== 'retired').map((c) => c.id).sort());
    expect(active.find((c) => c.id === GET_IN_LOOP)?.severity).toBe('critical');
    const passes = activeChecks(resolve({}, ALL_IDS), ALL).map((c) => c.pass);
    expect(passes).toEqual([...passes].sort((a, b) => a - b));
  });

  it('rules: {id: off} turns the rule off', () => {
    const active = activeChecks(resolve({ rules: { [GET_IN_LOOP]: 'off' } }));
    expect(active.map((c) => c.id)).not.toContain(GET_IN_LOOP);
    // Only that rule.
    expect(active).toHaveLength(CHECKS.filter((c) => c.status !== 'preview' && c.status !== 'retired').length - 1);
  });

  it('rules: {id: medium} overrides the severity without touching the registry', () => {
    const active = activeChecks(resolve({ rules: { [GET_IN_LOOP]: 'medium' } }));
    expect(active.find((c) => c.id === GET_IN_LOOP)?.severity).toBe('medium');
    expect(CHECKS.find((c) => c.id === GET_IN_LOOP)?.severity).toBe('critical');
  });

  it.each(SEVERITIES)('rules: {id: %s} sets that severity', (sev) => {
    expect(activeChecks(resolve({ rules: { [GET_IN_LOOP]: sev } })).find((c) => c.id === GET_IN_LOOP)?.severity).toBe(sev);
  });

  it('rules: {id: on} enables a preview rule at its own severity; enable_preview enables them all', () => {
    expect(activeChecks(resolve({}, ALL_IDS), ALL).map((c) => c.id)).not.toContain('test/preview-rule');
    const on = activeChecks(resolve({ rules: { 'test/preview-rule': 'on' } }, ALL_IDS), ALL).find((c) => c.id === 'test/preview-rule');
    expect(on?.severity).toBe('low');
    expect(activeChecks(resolve({ enable_preview: true }, ALL_IDS), ALL).map((c) => c.id)).toContain('test/preview-rule');
    expect(activeChecks(resolve({ rules: { 'test/preview-rule': 'high' } }, ALL_IDS), ALL).find((c) => c.id === 'test/preview-rule')?.severity).toBe('high');
  });

  it('a retired rule runs only when the config names it, never through enable_preview', () => {
    const retired: CheckDef = { ...preview, id: 'test/retired-rule', status: 'retired' };
    const all = [...ALL, retired];
    const ids = all.map((c) => c.id);
    expect(activeChecks(resolve({}, ids), all).map((c) => c.id)).not.toContain('test/retired-rule');
    expect(activeChecks(resolve({ enable_preview: true }, ids), all).map((c) => c.id)).not.toContain('test/retired-rule');
    expect(activeChecks(resolve({ rules: { 'test/retired-rule': 'on' } }, ids), all).map((c) => c.id)).toContain('test/retired-rule');
    // --select of its family leaves it out; --select of its id runs it.
    const family = applyOneOff(resolve({}, ids), ids, { select: 'test' }, new Set(['test/retired-rule']));
    expect(activeChecks(family, all).map((c) => c.id)).toEqual(expect.arrayContaining(['test/preview-rule', 'test/pass-two']));
    expect(activeChecks(family, all).map((c) => c.id)).not.toContain('test/retired-rule');
    const named = applyOneOff(resolve({}, ids), ids, { select: 'test/retired-rule' }, new Set(['test/retired-rule']));
    expect(activeChecks(named, all).map((c) => c.id)).toEqual(['test/retired-rule']);
  });

  it('passes: {"1": false} disables every pass-1 rule and nothing else', () => {
    const active = activeChecks(resolve({ passes: { '1': false } }, ALL_IDS), ALL);
    expect(active.filter((c) => c.pass === 1)).toEqual([]);
    expect(active.map((c) => c.id)).toContain('test/pass-two');
    expect(activeChecks(resolve({ passes: { '2': false } }, ALL_IDS), ALL).map((c) => c.id)).toEqual(expect.arrayContaining([GET_IN_LOOP]));
  });

  it('passes written as YAML numbers ({1: false}) work too', () => {
    const c = resolve(YAML.parse('passes: {1: false, 3: true}'));
    expect(c.passes[1]).toBe(false);
    expect(activeChecks(c).filter((x) => x.pass === 1)).toEqual([]);
  });

  it('rules: {id: on} does not re-enable a rule whose pass is off', () => {
    expect(activeChecks(resolve({ passes: { '1': false }, rules: { [GET_IN_LOOP]: 'on' } })).map((c) => c.id)).not.toContain(GET_IN_LOOP);
  });

  it('end to end: off removes the finding, a severity override changes it, pass off removes it, min_severity filters it', async () => {
    const base = await findingsUnder({});
    expect(base).toHaveLength(1);
    expect(base[0]).toMatchObject({ severity: 'critical', line: 8 });
    expect(await findingsUnder({ rules: { [GET_IN_LOOP]: 'off' } })).toHaveLength(0);
    const medium = await findingsUnder({ rules: { [GET_IN_LOOP]: 'medium' } });
    expect(medium).toHaveLength(1);
    expect(medium[0].severity).toBe('medium');
    expect(await findingsUnder({ passes: { '1': false } })).toHaveLength(0);
    expect(await findingsUnder({ rules: { [GET_IN_LOOP]: 'low' }, min_severity: 'medium' })).toHaveLength(0);
    expect(await findingsUnder({ exclude: ['pkg/**'] })).toHaveLength(0);
    expect(await findingsUnder({ include: ['other/**'] })).toHaveLength(0);
    expect(await findingsUnder({ include: ['pkg/**'] })).toHaveLength(1);
  });
});

describe('resolveConfig: hostile repository configs (issue 16)', () => {
  it('a catastrophic hot_path_functions pattern runs in linear time (RE2), so a long name answers at once', () => {
    const c = resolve({ hot_path_functions: '^(a+)+$', setup_functions: '^(x|x)*y$' });
    expect(c.hotPathFunctions.test('a'.repeat(30) + '!')).toBe(false);
    expect(c.hotPathFunctions.test('aaaa')).toBe(true);
    expect(c.setupFunctions.test('x'.repeat(40))).toBe(false);
  });
  it('a catastrophic pattern in a config does not stall the review of a file using it', async () => {
    const name = 'a'.repeat(40) + 'b';
    const text = `__global__ void k(float* p) { p[0] = 1; }\nvoid ${name}(float* p) { for (int i = 0; i < 4; i++) { k<<<1, 32>>>(p); cudaDeviceSynchronize(); } }\n`;
    const out = await review({ diff: addedFileDiff('src/a.cu', text), config: resolve({ hot_path_functions: '^(a|aa)+$' }), scope: 'file' });
    expect(out.result.errors).toEqual([]);
  });
  it('lookaround and backreferences (not RE2) are a config error naming the key', () => {
    expect(configError({ hot_path_functions: '(?<=x)y' }).message).toMatch(/"hot_path_functions" is not a valid RE2 regular expression/);
    expect(configError({ setup_functions: '(a)\\1' }).message).toMatch(/"setup_functions"/);
  });
  it('limits past the absolute maxima are rejected (1e11 ms is not a timeout)', () => {
    expect(configError({ limits: { review_timeout_ms: 1e11 } }).message).toContain('limits.review_timeout_ms');
    expect(configError({ limits: { max_file_bytes: 1e11 } }).message).toContain('limits.max_file_bytes');
  });
  it('the operator\'s environment caps what a repository config may set, and the defaults', () => {
    const saved = { ...process.env };
    try {
      process.env.GPU_REVIEW_FILE_TIMEOUT_MS = '5000';
      process.env.GPU_REVIEW_MAX_FILE_BYTES = '1000000';
      const c = resolve({ limits: { file_timeout_ms: 500_000, max_file_bytes: 10_000 } });
      expect(c.limits.fileTimeoutMs).toBe(5000);
      expect(c.limits.maxFileBytes).toBe(10_000);
      expect(resolve({}).limits.fileTimeoutMs).toBe(5000);
      process.env.GPU_REVIEW_REVIEW_TIMEOUT_MS = '1e11';
      expect(configError({}).message).toContain('GPU_REVIEW_REVIEW_TIMEOUT_MS is invalid');
    } finally {
      process.env = saved;
    }
  });
});

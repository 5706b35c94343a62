import { posix } from 'node:path';
import { z } from 'zod';
import { namePattern, type NamePattern } from '../core/regex.js';
import { SEVERITIES, type Confidence, type Severity } from '../core/types.js';
import { defaultDocsUrl } from './docs-url.js';
import { ARCH_LIMITS, customGpu, DEFAULT_TARGETS, GPU_TABLE, KNOWN_CCS, knownGpuNames, lookupGpu, type CustomGpuInput, type GpuSpec } from './gpus.js';
import { DEFAULT_HOT_PATH_FUNCTIONS, DEFAULT_SETUP_FUNCTIONS, DEFAULT_VOCABULARIES, type Vocabularies, type VocabularyName } from './vocabularies.js';

const severity = z.enum(SEVERITIES);

/** "8.9", 8.9, "12.0", 12 (YAML reads `cc: 12.0` as 12): the cc as ARCH_LIMITS spells it. */
const ccValue = z
  .union([z.string(), z.number()])
  .transform((v) => (typeof v === 'number' ? (Number.isInteger(v) ? `${v}.0` : String(v)) : v.trim()))
  .refine((v) => v in ARCH_LIMITS, { message: `unknown compute capability (known: ${KNOWN_CCS.join(', ')})` });
const positive = (max: number) => z.number().positive().max(max);
const positiveInt = (max: number) => z.number().int().positive().max(max);

/** One `gpus:` entry: cc and SM count are required; every other limit defaults from the cc (ARCH_LIMITS). */
const customGpuSchema = z
  .object({
    cc: ccValue.describe('Compute capability, e.g. "8.9": sets every per-architecture limit the occupancy model uses.'),
    sms: positiveInt(1024).describe('Streaming multiprocessors.'),
    class: z.enum(['datacenter', 'consumer', 'embedded']).optional().describe('Default: datacenter.'),
    vram_gb: positive(100_000).optional().describe('Device memory in GB (pool-size rules). Default: unknown (0).'),
    l2_mb: positive(4096).optional().describe('L2 cache in MB; the persisting window defaults to 75 % of it on cc >= 8.0.'),
    l2_persisting_max_mb: z.number().min(0).max(4096).optional().describe('cudaDevAttrMaxPersistingL2CacheSize in MB, when it is not 75 % of L2.'),
    bandwidth_gbs: positive(1_000_000).optional().describe('Memory bandwidth in GB/s.'),
    fp32_tflops: positive(100_000).optional(),
    fp64_tflops: positive(100_000).optional(),
    max_blocks_per_sm: positiveInt(64).optional().describe("Override the cc's resident-block cap."),
    max_warps_per_sm: positiveInt(64).optional().describe("Override the cc's resident-warp cap."),
    smem_per_sm_kb: positiveInt(1024).optional().describe("Override the cc's shared memory per SM (KB)."),
    smem_per_block_optin_kb: positiveInt(1024).optional().describe("Override the cc's opt-in shared memory per block (KB)."),
    regs_per_sm: positiveInt(1 << 20).optional().describe("Override the cc's 32-bit registers per SM."),
    aliases: z.array(z.string().min(1)).optional().describe('Other names `targets` accepts for this GPU.'),
  })
  .strict()
  .superRefine((g, ctx) => {
    const arch = ARCH_LIMITS[g.cc];
    if (!arch) return;
    const perSm = g.smem_per_sm_kb ?? arch.smemPerSmKb;
    const optin = g.smem_per_block_optin_kb ?? Math.min(arch.smemPerBlockOptinKb, perSm);
    if (optin > perSm) ctx.addIssue({ code: 'custom', path: ['smem_per_block_optin_kb'], message: `${optin} KB is more than the ${perSm} KB per SM` });
  });
type Limits = { maxFileBytes: number; maxLineLength: number; fileTimeoutMs: number; reviewTimeoutMs: number };
const LIMIT_DEFAULTS: Limits = { maxFileBytes: 2_000_000, maxLineLength: 20_000, fileTimeoutMs: 20_000, reviewTimeoutMs: 600_000 };
/** Absolute bounds of `limits` (a config past them is invalid): 50 MB, 1 MB lines, 10 min per file, 1 h per review. */
export const LIMIT_MAXIMA: Limits = { maxFileBytes: 50_000_000, maxLineLength: 1_000_000, fileTimeoutMs: 600_000, reviewTimeoutMs: 3_600_000 };
const LIMIT_ENV: Record<keyof Limits, string> = {
  maxFileBytes: 'GPU_REVIEW_MAX_FILE_BYTES',
  maxLineLength: 'GPU_REVIEW_MAX_LINE_LENGTH',
  fileTimeoutMs: 'GPU_REVIEW_FILE_TIMEOUT_MS',
  reviewTimeoutMs: 'GPU_REVIEW_REVIEW_TIMEOUT_MS',
};

/**
 * The operator's ceilings (environment variables): a repository's config may lower a limit, never
 * raise it past these; defaults above a ceiling come down to it. Unset: the absolute maxima.
 */
export function limitCeilings(env: NodeJS.ProcessEnv = process.env): Limits {
  const out = { ...LIMIT_MAXIMA };
  for (const k of Object.keys(LIMIT_ENV) as Array<keyof Limits>) {
    const raw = env[LIMIT_ENV[k]];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0 || n > LIMIT_MAXIMA[k]) throw new ConfigError(`${LIMIT_ENV[k]} is invalid: a whole number from 1 to ${LIMIT_MAXIMA[k]}`);
    out[k] = n;
  }
  return out;
}
const failOn = z.enum([...SEVERITIES, 'none'] as const);

const vocabularyShape = Object.fromEntries(
  Object.keys(DEFAULT_VOCABULARIES).map((k) => [
    k,
    z.array(z.string()).optional().describe(`Extra names for the "${k}" vocabulary (added to the defaults).`),
  ]),
) as Record<VocabularyName, z.ZodOptional<z.ZodArray<z.ZodString>>>;

/**
 * The one configuration schema, shared by the CLI (`--config FILE`) and the GitHub App
 * (`.github/gpu-review.yml`). Unknown keys are errors, so a typo never silently disables a rule.
 */
export const configSchema = z
  .object({
    passes: z
      .partialRecord(z.enum(['1', '2', '3', '4', '5', '6', '7']), z.boolean())
      .optional()
      .describe('Turn review passes on or off by number, e.g. {"4": false}. All passes are on by default.'),
    rules: z
      .record(z.string(), z.enum([...SEVERITIES, 'off', 'on'] as const))
      .optional()
      .describe('Per-rule override: a severity, "off", or "on" (enables a preview rule at its own severity).'),
    min_severity: severity.optional().describe('Findings below this severity are not reported. Default: low (report all).'),
    fail_on: failOn.optional().describe('Severity at or above which the review fails (CLI exit 1, failing check run), counting only findings of at least fail_on_confidence. Default: high.'),
    fail_on_confidence: z
      .enum(['high', 'medium', 'low'])
      .optional()
      .describe('Least confidence a finding needs to fail the review (with fail_on). Default: high, so only severe and high-confidence findings fail a check.'),
    docs_url: z
      .string()
      .url()
      .optional()
      .describe('Base URL of the rule documentation: a rule links to <docs_url>/<rule-id>/README.md, or to docs_url with {rule} replaced. Default: GPU_REVIEW_DOCS_URL, else the checks/ folder of package.json "repository"; no link when neither is known.'),
    include: z.array(z.string()).optional().describe('Only review paths matching one of these globs. Default: everything.'),
    exclude: z.array(z.string()).optional().describe('Never review paths matching these globs (e.g. "third_party/**").'),
    targets: z
      .array(z.string())
      .min(1)
      .optional()
      .describe(`Target GPUs whose limits the checks apply: any of ${knownGpuNames()}, or a GPU defined under "gpus". Default: ${DEFAULT_TARGETS.join(', ')}.`),
    gpus: z
      .record(z.string().min(1), customGpuSchema)
      .optional()
      .describe('Custom GPUs, by name, that "targets" may then name: { MyCard: { cc: "8.9", sms: 58 } }; limits not given default from the cc.'),
    vocabularies: z
      .object(vocabularyShape)
      .strict()
      .optional()
      .describe('Project names added to the built-in vocabularies (catalog §1.5).'),
    hot_path_functions: z
      .string()
      .optional()
      .describe(`Regex of function names treated as hot paths. Default: ${DEFAULT_HOT_PATH_FUNCTIONS}`),
    setup_functions: z
      .string()
      .optional()
      .describe(`Regex of one-time setup/teardown function names, never hot paths (C++ constructors and destructors always count). Default: ${DEFAULT_SETUP_FUNCTIONS}`),
    inline_comment_cap: z.number().int().min(0).max(1000).optional().describe('Most inline comments per review; the rest go to the review body. Default: 30.'),
    precision: z
      .object({
        require_compute_t: z
          .boolean()
          .optional()
          .describe('Also apply precision/hardcoded-double to .cu/.cuh files: their kernels must do arithmetic in the compute_t typedef, not hard-coded double (catalog §3 Pass 4). Default: false.'),
      })
      .strict()
      .optional()
      .describe('Precision rules (Pass 4) options.'),
    luisa: z
      .object({
        backends: z
          .array(z.enum(['cuda', 'dx', 'metal', 'vulkan', 'cpu', 'fallback']))
          .optional()
          .describe('LuisaCompute backends the project ships on. Rules about backend limits (the DirectX 65,535-group dispatch limit, HLSL\'s 32 KiB groupshared, warp sizes other than 32 on CUDA/Metal) treat an unset list as "any backend". Default: unset.'),
      })
      .strict()
      .optional()
      .describe('LuisaCompute DSL rules options.'),
    compile: z
      .object({
        enabled: z.boolean().optional().describe('Compile the changed kernels with nvcc at the base and the head and report registers, spills, stack, shared and constant memory and occupancy per target (README "Compiler evidence"). Default: false; the CLI also turns it on with --compile.'),
        nvcc: z.string().min(1).optional().describe('The nvcc to run. Default: "nvcc" on PATH.'),
        include_dirs: z.array(z.string().min(1)).max(64).optional().describe('Include directories, relative to the repository root and inside it. Default: ["."].'),
        defines: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(=[^\s]*)?$/, 'expected NAME or NAME=VALUE')).max(256).optional().describe('Preprocessor definitions (NAME or NAME=VALUE). Default: none.'),
        std: z.enum(['c++11', 'c++14', 'c++17', 'c++20']).optional().describe('C++ standard. Default: c++17.'),
        timeout_ms: z.number().int().positive().max(3_600_000).optional().describe('Time limit per translation unit and side; the compiler process group is killed past it. Default: 120000.'),
        memory_mb: z.number().int().min(64).max(262_144).optional().describe('Address-space limit of the compiler per unit, in MiB. Default: 8192.'),
        review_timeout_ms: z.number().int().positive().max(86_400_000).optional().describe('Time limit for all compiles of one review; units not reached in time are skipped. Default: 600000.'),
      })
      .strict()
      .optional()
      .describe('nvcc compiler evidence (opt-in).'),
    rewrite: z
      .object({
        enabled: z.boolean().optional().describe('GitHub App and Action: pass 7, a verified before/after rewrite attached to each posted finding that needs one (a one-click suggestion when it stays inside the changed lines and preserves behaviour, else a collapsed "Proposed rewrite"). Default: true. The CLI runs pass 7 with --rewrite or --fix.'),
        time_budget_ms: z.number().int().positive().max(600_000).optional().describe('Time limit for pass 7 in one review; findings not reached in time get no rewrite. Default: 30000.'),
      })
      .strict()
      .optional()
      .describe('Pass 7 rewrites.'),
    index: z
      .object({
        enabled: z.boolean().optional().describe('Read the files the changed files import or include (inside the repository) and give the rules their facts: helpers that return device data, synchronize, launch, allocate or free; constants and macros; kernel signatures (README "Facts across files"). Default: true where the review can read the repository (--repo, --git, the App).'),
        depth: z.number().int().min(1).max(4).optional().describe('How many import / include steps to follow from a changed file. Default: 2.'),
        max_files: z.number().int().min(1).max(2000).optional().describe('Most files the index reads in one review; past it the review goes on with what it has and says so. Default: 200.'),
        max_bytes: z.number().int().min(1000).max(200_000_000).optional().describe('Most bytes the index reads in one review. Default: 8000000.'),
        include_roots: z.array(z.string().min(1)).max(64).optional().describe('Folders, relative to the repository root, that `#include "..."` resolves against after the including file\'s folder. Default: [".", "include", "src"].'),
        python_roots: z.array(z.string().min(1)).max(64).optional().describe('Folders, relative to the repository root, that hold top-level Python packages (besides the root and the folders above a changed file). Default: [].'),
      })
      .strict()
      .optional()
      .describe('The project index: facts of the files a change imports or includes.'),
    enable_preview: z.boolean().optional().describe('Run rules marked preview (low confidence). Default: false.'),
    baseline: z.string().min(1).optional().describe('Baseline file (written by `gpu-review scan --write-baseline`), relative to the repository root: findings whose fingerprint it lists are not reported. Default: none.'),
    strict: z.boolean().optional().describe('A file that should have been reviewed but could not be (too large, minified, not UTF-8, timed out, unreadable) fails the review like a finding at fail_on. Default: false.'),
    skip_drafts: z.boolean().optional().describe('GitHub App: skip draft pull requests. Default: true.'),
    skip_bot_authors: z.boolean().optional().describe('GitHub App: skip pull requests opened by bots. Default: true.'),
    limits: z
      .object({
        max_file_bytes: z.number().int().positive().max(LIMIT_MAXIMA.maxFileBytes).optional().describe('Files larger than this are skipped. Default: 2000000 (at most the server\'s GPU_REVIEW_MAX_FILE_BYTES).'),
        max_line_length: z.number().int().positive().max(LIMIT_MAXIMA.maxLineLength).optional().describe('Files with a longer line (minified or generated) are skipped. Default: 20000 (at most GPU_REVIEW_MAX_LINE_LENGTH).'),
        file_timeout_ms: z.number().int().positive().max(LIMIT_MAXIMA.fileTimeoutMs).optional().describe('Time limit for parsing and checking one file; past it the file\'s work is stopped and the file reported as timed out. Default: 20000 (at most GPU_REVIEW_FILE_TIMEOUT_MS).'),
        review_timeout_ms: z.number().int().positive().max(LIMIT_MAXIMA.reviewTimeoutMs).optional().describe('Time limit for a whole review; past it the remaining work is stopped and those files reported as timed out. Default: 600000 (at most GPU_REVIEW_REVIEW_TIMEOUT_MS).'),
        on_timeout: z.enum(['neutral', 'failure']).optional().describe('GitHub App: check run conclusion when a file or the review ran out of time (never "success"). Default: neutral.'),
      })
      .strict()
      .optional()
      .describe('Per-file bounds that keep one pathological file from stalling a review.'),
  })
  .strict();

export type RawConfig = z.infer<typeof configSchema>;

export interface ResolvedConfig {
  passes: Record<number, boolean>;
  rules: Record<string, Severity | 'off' | 'on'>;
  minSeverity: Severity;
  failOn: Severity | 'none';
  /** Least confidence a finding needs to count for failOn. */
  failOnConfidence: Confidence;
  /** Base of the rule documentation links; null: no link. */
  docsUrl: string | null;
  include: string[];
  exclude: string[];
  targets: GpuSpec[];
  vocab: Vocabularies;
  hotPathFunctions: NamePattern;
  setupFunctions: NamePattern;
  inlineCommentCap: number;
  enablePreview: boolean;
  /** Baseline file path relative to the repository root, or null. */
  baseline: string | null;
  strict: boolean;
  precision: { requireComputeT: boolean };
  /** LuisaCompute backends the project targets; null when the config does not say (any backend). */
  luisa: { backends: string[] | null };
  skipDrafts: boolean;
  skipBotAuthors: boolean;
  limits: Limits & { onTimeout: 'neutral' | 'failure' };
  compile: CompileSettings;
  /** Pass 7 in the App (the CLI asks with --rewrite / --fix). */
  rewrite: { enabled: boolean; timeBudgetMs: number };
  /** Bounds and roots of the project index (src/index/). */
  index: import('../index/types.js').IndexLimits;
  /** Facts of the files the change imports or includes, set by review() when it could read them (src/index/). */
  projectIndex?: import('../index/types.js').ProjectIndex;
  /** Compiler figures of the changed kernels, set by review() when it compiled them (src/compile/). */
  compileEvidence?: import('../compile/evidence.js').KernelEvidence[];
}

export interface CompileSettings {
  enabled: boolean;
  nvcc: string;
  includeDirs: string[];
  defines: string[];
  std: string;
  timeoutMs: number;
  memoryMb: number;
  reviewTimeoutMs: number;
}

export class ConfigError extends Error {}

/** A config regex runs on RE2 (linear time), so `^(a+)+$` cannot stall a review; RE2 has no lookaround or backreferences. */
function configPattern(key: string, source: string): NamePattern {
  try {
    return namePattern(source);
  } catch (e) {
    const why = (e as Error).message.replace(/\s+/g, ' ').slice(0, 160);
    throw new ConfigError(`invalid config: "${key}" is not a valid RE2 regular expression (${why}; lookaround and backreferences are not supported)`);
  }
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.map(String).join('.') : '(top level)';
  if (issue.code === 'unrecognized_keys') {
    const keys = (issue as { keys: string[] }).keys;
    const at = issue.path.length ? ` in "${where}"` : '';
    return `unknown key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}${at}`;
  }
  return `"${where}": ${issue.message}`;
}

/** The built-in GPUs plus the config's `gpus:` entries; a custom name may not shadow a built-in one. */
function customGpuTable(gpus: RawConfig['gpus']): Record<string, GpuSpec> {
  const table: Record<string, GpuSpec> = { ...GPU_TABLE };
  for (const [name, g] of Object.entries(gpus ?? {})) {
    for (const n of [name, ...(g.aliases ?? [])]) {
      const clash = lookupGpu(n, table);
      if (clash) throw new ConfigError(`invalid config: "gpus.${name}": the name "${n}" is already the GPU "${clash.name}"`);
    }
    const input: CustomGpuInput = {
      cc: g.cc,
      sms: g.sms,
      class: g.class,
      vramGb: g.vram_gb,
      l2Mb: g.l2_mb,
      bwGbs: g.bandwidth_gbs,
      fp32Tflops: g.fp32_tflops,
      fp64TflopsDoc: g.fp64_tflops,
      maxBlocksPerSm: g.max_blocks_per_sm,
      maxWarpsPerSm: g.max_warps_per_sm,
      smemPerSmKb: g.smem_per_sm_kb,
      smemPerBlockOptinKb: g.smem_per_block_optin_kb,
      regsPerSm: g.regs_per_sm,
    };
    const spec = customGpu(name, input);
    if (g.l2_persisting_max_mb !== undefined) spec.l2SetAsideMaxMb = g.l2_persisting_max_mb;
    if (g.smem_per_sm_kb !== undefined && g.smem_per_block_optin_kb === undefined) spec.smemPerBlockOptinKb = Math.min(spec.smemPerBlockOptinKb, g.smem_per_sm_kb);
    if (g.aliases?.length) spec.aliases = g.aliases;
    table[name] = spec;
  }
  return table;
}

/**
 * Validate a parsed YAML/JSON object and resolve defaults. `knownRules` is the registry's id list:
 * a rule id that does not exist is an error naming it.
 */
export function resolveConfig(raw: unknown, knownRules: readonly string[]): ResolvedConfig {
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new ConfigError(`invalid config: ${parsed.error.issues.map(describeIssue).join('; ')}`);
  }
  const c = parsed.data;
  const ceilings = limitCeilings();
  const known = new Set(knownRules);
  for (const id of Object.keys(c.rules ?? {})) {
    if (!known.has(id)) throw new ConfigError(`invalid config: unknown rule id "${id}" in "rules"`);
  }
  const table = customGpuTable(c.gpus);
  const targets: GpuSpec[] = [];
  for (const name of c.targets ?? DEFAULT_TARGETS) {
    const gpu = lookupGpu(name, table);
    if (!gpu) throw new ConfigError(`invalid config: unknown GPU "${name}" in "targets" (known: ${knownGpuNames(table)})`);
    targets.push(gpu);
  }
  const hot = configPattern('hot_path_functions', c.hot_path_functions ?? DEFAULT_HOT_PATH_FUNCTIONS);
  const setup = configPattern('setup_functions', c.setup_functions ?? DEFAULT_SETUP_FUNCTIONS);
  const vocab = Object.fromEntries(
    Object.entries(DEFAULT_VOCABULARIES).map(([k, v]) => [k, [...v, ...((c.vocabularies as Record<string, string[] | undefined> | undefined)?.[k] ?? [])]]),
  ) as Vocabularies;
  for (const d of [...(c.index?.include_roots ?? []), ...(c.index?.python_roots ?? [])]) {
    const n = posix.normalize(d.replace(/\\/g, '/'));
    if (posix.isAbsolute(n) || /^[A-Za-z]:/.test(d) || n === '..' || n.startsWith('../')) throw new ConfigError(`invalid config: "index" root "${d}" is outside the repository`);
  }
  for (const d of c.compile?.include_dirs ?? []) {
    const n = posix.normalize(d.replace(/\\/g, '/'));
    if (posix.isAbsolute(n) || /^[A-Za-z]:/.test(d) || n === '..' || n.startsWith('../')) throw new ConfigError(`invalid config: "compile.include_dirs" entry "${d}" is outside the repository`);
  }
  const passes: Record<number, boolean> = { 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true };
  for (const [k, v] of Object.entries(c.passes ?? {})) passes[Number(k)] = v;
  return {
    passes,
    rules: c.rules ?? {},
    minSeverity: c.min_severity ?? 'low',
    failOn: c.fail_on ?? 'high',
    failOnConfidence: c.fail_on_confidence ?? 'high',
    docsUrl: c.docs_url ?? defaultDocsUrl(),
    include: c.include ?? [],
    exclude: c.exclude ?? [],
    targets,
    vocab,
    hotPathFunctions: hot,
    setupFunctions: setup,
    inlineCommentCap: c.inline_comment_cap ?? 30,
    enablePreview: c.enable_preview ?? false,
    baseline: c.baseline ?? null,
    strict: c.strict ?? false,
    precision: { requireComputeT: c.precision?.require_compute_t ?? false },
    luisa: { backends: c.luisa?.backends ?? null },
    skipDrafts: c.skip_drafts ?? true,
    skipBotAuthors: c.skip_bot_authors ?? true,
    limits: {
      maxFileBytes: Math.min(c.limits?.max_file_bytes ?? LIMIT_DEFAULTS.maxFileBytes, ceilings.maxFileBytes),
      maxLineLength: Math.min(c.limits?.max_line_length ?? LIMIT_DEFAULTS.maxLineLength, ceilings.maxLineLength),
      fileTimeoutMs: Math.min(c.limits?.file_timeout_ms ?? LIMIT_DEFAULTS.fileTimeoutMs, ceilings.fileTimeoutMs),
      reviewTimeoutMs: Math.min(c.limits?.review_timeout_ms ?? LIMIT_DEFAULTS.reviewTimeoutMs, ceilings.reviewTimeoutMs),
      onTimeout: c.limits?.on_timeout ?? 'neutral',
    },
    compile: {
      enabled: c.compile?.enabled ?? false,
      nvcc: c.compile?.nvcc ?? 'nvcc',
      includeDirs: (c.compile?.include_dirs ?? ['.']).map((d) => posix.normalize(d.replace(/\\/g, '/'))),
      defines: c.compile?.defines ?? [],
      std: c.compile?.std ?? 'c++17',
      timeoutMs: c.compile?.timeout_ms ?? 120_000,
      memoryMb: c.compile?.memory_mb ?? 8192,
      reviewTimeoutMs: c.compile?.review_timeout_ms ?? 600_000,
    },
    index: {
      enabled: c.index?.enabled ?? true,
      depth: c.index?.depth ?? 2,
      maxFiles: c.index?.max_files ?? 200,
      maxBytes: c.index?.max_bytes ?? 8_000_000,
      // A quarter of the review budget at most: the index informs the review, it must not eat it.
      budgetMs: Math.floor(Math.min(c.limits?.review_timeout_ms ?? LIMIT_DEFAULTS.reviewTimeoutMs, ceilings.reviewTimeoutMs) / 4),
      includeRoots: (c.index?.include_roots ?? ['.', 'include', 'src']).map((d) => posix.normalize(d.replace(/\\/g, '/'))),
      pythonRoots: (c.index?.python_roots ?? []).map((d) => posix.normalize(d.replace(/\\/g, '/'))),
    },
    rewrite: {
      enabled: c.rewrite?.enabled ?? true,
      timeBudgetMs: c.rewrite?.time_budget_ms ?? 30_000,
    },
  };
}

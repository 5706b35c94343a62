import { posix } from 'node:path';
import { z } from 'zod';
import { SEVERITIES, type Severity } from '../engine/types.js';
import { DEFAULT_TARGETS, lookupGpu, type GpuSpec } from './gpus.js';
import { DEFAULT_HOT_PATH_FUNCTIONS, DEFAULT_SETUP_FUNCTIONS, DEFAULT_VOCABULARIES, type Vocabularies, type VocabularyName } from './vocabularies.js';

const severity = z.enum(SEVERITIES);
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
    fail_on: failOn.optional().describe('Severity at or above which the review fails (CLI exit 1, failing check run). Default: high.'),
    include: z.array(z.string()).optional().describe('Only review paths matching one of these globs. Default: everything.'),
    exclude: z.array(z.string()).optional().describe('Never review paths matching these globs (e.g. "third_party/**").'),
    targets: z
      .array(z.string())
      .min(1)
      .optional()
      .describe('Target GPUs whose limits the checks apply: any of A100, H100, RTX 3090, RTX 4090. Default: all four.'),
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
    enable_preview: z.boolean().optional().describe('Run rules marked preview (low confidence). Default: false.'),
    skip_drafts: z.boolean().optional().describe('GitHub App: skip draft pull requests. Default: true.'),
    skip_bot_authors: z.boolean().optional().describe('GitHub App: skip pull requests opened by bots. Default: true.'),
    limits: z
      .object({
        max_file_bytes: z.number().int().positive().optional().describe('Files larger than this are skipped. Default: 2000000.'),
        max_line_length: z.number().int().positive().optional().describe('Files with a longer line (minified or generated) are skipped. Default: 20000.'),
        file_timeout_ms: z.number().int().positive().optional().describe('Time limit for parsing and checking one file; checks still pending when it runs out are skipped, with an error entry. Default: 20000.'),
        review_timeout_ms: z.number().int().positive().optional().describe('Time limit for a whole review; files not reached in time are skipped with the reason. Default: 600000.'),
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
  include: string[];
  exclude: string[];
  targets: GpuSpec[];
  vocab: Vocabularies;
  hotPathFunctions: RegExp;
  setupFunctions: RegExp;
  inlineCommentCap: number;
  enablePreview: boolean;
  precision: { requireComputeT: boolean };
  /** LuisaCompute backends the project targets; null when the config does not say (any backend). */
  luisa: { backends: string[] | null };
  skipDrafts: boolean;
  skipBotAuthors: boolean;
  limits: { maxFileBytes: number; maxLineLength: number; fileTimeoutMs: number; reviewTimeoutMs: number };
  compile: CompileSettings;
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

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.map(String).join('.') : '(top level)';
  if (issue.code === 'unrecognized_keys') {
    const keys = (issue as { keys: string[] }).keys;
    const at = issue.path.length ? ` in "${where}"` : '';
    return `unknown key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}${at}`;
  }
  return `"${where}": ${issue.message}`;
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
  const known = new Set(knownRules);
  for (const id of Object.keys(c.rules ?? {})) {
    if (!known.has(id)) throw new ConfigError(`invalid config: unknown rule id "${id}" in "rules"`);
  }
  const targets: GpuSpec[] = [];
  for (const name of c.targets ?? DEFAULT_TARGETS) {
    const gpu = lookupGpu(name);
    if (!gpu) throw new ConfigError(`invalid config: unknown GPU "${name}" in "targets" (known: A100, H100, RTX 3090, RTX 4090)`);
    targets.push(gpu);
  }
  let hot: RegExp;
  try {
    hot = new RegExp(c.hot_path_functions ?? DEFAULT_HOT_PATH_FUNCTIONS);
  } catch {
    throw new ConfigError(`invalid config: "hot_path_functions" is not a valid regular expression`);
  }
  let setup: RegExp;
  try {
    setup = new RegExp(c.setup_functions ?? DEFAULT_SETUP_FUNCTIONS);
  } catch {
    throw new ConfigError(`invalid config: "setup_functions" is not a valid regular expression`);
  }
  const vocab = Object.fromEntries(
    Object.entries(DEFAULT_VOCABULARIES).map(([k, v]) => [k, [...v, ...((c.vocabularies as Record<string, string[] | undefined> | undefined)?.[k] ?? [])]]),
  ) as Vocabularies;
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
    include: c.include ?? [],
    exclude: c.exclude ?? [],
    targets,
    vocab,
    hotPathFunctions: hot,
    setupFunctions: setup,
    inlineCommentCap: c.inline_comment_cap ?? 30,
    enablePreview: c.enable_preview ?? false,
    precision: { requireComputeT: c.precision?.require_compute_t ?? false },
    luisa: { backends: c.luisa?.backends ?? null },
    skipDrafts: c.skip_drafts ?? true,
    skipBotAuthors: c.skip_bot_authors ?? true,
    limits: {
      maxFileBytes: c.limits?.max_file_bytes ?? 2_000_000,
      maxLineLength: c.limits?.max_line_length ?? 20_000,
      fileTimeoutMs: c.limits?.file_timeout_ms ?? 20_000,
      reviewTimeoutMs: c.limits?.review_timeout_ms ?? 600_000,
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
  };
}

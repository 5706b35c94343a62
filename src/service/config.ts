import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The service's settings, from environment variables only (no `.env`: a container gets its
 * secrets from the orchestrator). One bad or missing setting is one line naming the variable.
 */
export interface ServiceConfig {
  appId: number;
  privateKey: string;
  webhookSecret: string;
  /** REST base URL; GitHub.com unless `GHE_HOST` is set. */
  baseUrl: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  host: string;
  port: number;
  webhookPath: string;
  concurrency: number;
  queueMax: number;
  shutdownTimeoutMs: number;
  /** Largest webhook body taken (GitHub caps payloads at 25 MB); larger ones get 413. */
  maxBodyBytes: number;
  /** Set: queue, delivery de-duplication and rate-limit state in Redis (several replicas). */
  redisUrl: string | undefined;
  /** Prefix of every Redis key (several deployments can share one Redis). */
  redisPrefix: string;
  /**
   * Redis mode: lease of a running review (BullMQ's job lock and the per-PR lock). A replica that
   * dies mid-review holds them this long at most; then another replica takes the job again.
   */
  reviewLockMs: number;
  /** COMPILE=on: repositories may turn on nvcc compiler evidence (`compile.enabled`); off by default. */
  compile: boolean;
}

const int = (min: number) => z.coerce.number().int().min(min);

const schema = z.object({
  APP_ID: int(1),
  PRIVATE_KEY: z.string().optional(),
  PRIVATE_KEY_PATH: z.string().optional(),
  WEBHOOK_SECRET: z.string().min(1),
  GHE_HOST: z.string().regex(/^[A-Za-z0-9.-]+(:\d+)?$/, 'a host name such as github.example.com').optional(),
  GHE_PROTOCOL: z.enum(['https', 'http']).default('https'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: int(0).max(65535).default(3000),
  WEBHOOK_PATH: z.string().startsWith('/').default('/api/github/webhooks'),
  REVIEW_CONCURRENCY: int(1).max(256).default(4),
  QUEUE_MAX: int(1).default(1000),
  SHUTDOWN_TIMEOUT_MS: int(0).default(25_000),
  WEBHOOK_MAX_BYTES: int(1024).default(25 * 1024 * 1024),
  REDIS_URL: z
    .string()
    .refine((v) => {
      try {
        return ['redis:', 'rediss:'].includes(new URL(v).protocol);
      } catch {
        return false;
      }
    }, 'a redis:// or rediss:// URL')
    .optional(),
  REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (at most 64)').default('gpu-review'),
  REVIEW_LOCK_MS: int(1000).default(30_000),
  COMPILE: z.enum(['on', 'off']).default('off'),
});

export class ConfigError extends Error {}

const PEM = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/** Parses the environment; throws `ConfigError` with one line naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ServiceConfig {
  // An empty variable counts as unset (`docker run -e X=` and compose files produce them).
  const clean = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const r = schema.safeParse(clean);
  if (!r.success) {
    const issue = r.error.issues[0];
    const name = String(issue.path[0]);
    const missing = clean[name] === undefined;
    // Never echo the value: it may be a secret.
    throw new ConfigError(missing ? `${name} is required but not set` : `${name} is invalid: ${issue.message}`);
  }
  const e = r.data;
  let privateKey: string;
  if (e.PRIVATE_KEY) {
    privateKey = e.PRIVATE_KEY.replace(/\\n/g, '\n');
    if (!PEM.test(privateKey)) throw new ConfigError('PRIVATE_KEY is invalid: not a PEM private key');
  } else if (e.PRIVATE_KEY_PATH) {
    try {
      privateKey = readFileSync(e.PRIVATE_KEY_PATH, 'utf8');
    } catch (err) {
      throw new ConfigError(`PRIVATE_KEY_PATH is invalid: cannot read ${e.PRIVATE_KEY_PATH} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (!PEM.test(privateKey)) throw new ConfigError(`PRIVATE_KEY_PATH is invalid: ${e.PRIVATE_KEY_PATH} is not a PEM private key`);
  } else {
    throw new ConfigError('PRIVATE_KEY is required but not set (or set PRIVATE_KEY_PATH)');
  }
  return {
    appId: e.APP_ID,
    privateKey,
    webhookSecret: e.WEBHOOK_SECRET,
    baseUrl: e.GHE_HOST ? `${e.GHE_PROTOCOL}://${e.GHE_HOST}/api/v3` : undefined,
    logLevel: e.LOG_LEVEL,
    host: e.HOST,
    port: e.PORT,
    webhookPath: e.WEBHOOK_PATH,
    concurrency: e.REVIEW_CONCURRENCY,
    queueMax: e.QUEUE_MAX,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    maxBodyBytes: e.WEBHOOK_MAX_BYTES,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    reviewLockMs: e.REVIEW_LOCK_MS,
    compile: e.COMPILE === 'on',
  };
}

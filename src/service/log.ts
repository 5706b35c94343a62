import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** Paths pino blanks wherever they appear (Octokit errors carry the request with its headers). */
export const REDACT_PATHS = [
  'privateKey', 'secret', 'webhookSecret', 'token', 'authorization',
  '*.privateKey', '*.secret', '*.webhookSecret', '*.token', '*.authorization',
  'headers.authorization', '*.headers.authorization', '*.*.headers.authorization',
  'headers["x-hub-signature-256"]', '*.headers["x-hub-signature-256"]',
  'req.headers.cookie',
];

// Installation/user tokens, JWTs (the App's own token is signed with the private key) and
// `Authorization: token …` / `Bearer …` text inside messages.
const TOKEN_PATTERNS = [
  /\b(?:ghs|ghu|gho|ghp|ghr)_[A-Za-z0-9_]{16,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\b(token|bearer) [A-Za-z0-9._-]{20,}/gi,
];

/**
 * The last line of defence: whatever path a secret took into a log line (an error message, a
 * serialized request), its literal text is replaced before the line leaves the process.
 */
export function scrubber(secrets: readonly string[], out: NodeJS.WritableStream): Writable {
  // The private key as one string and line by line (JSON escapes its newlines).
  const literals = secrets.filter((s) => s.length >= 4).flatMap((s) => [s, JSON.stringify(s).slice(1, -1), ...s.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----'))]);
  return new Writable({
    write(chunk, _enc, cb) {
      let line = String(chunk);
      for (const s of literals) if (line.includes(s)) line = line.split(s).join('[redacted]');
      for (const re of TOKEN_PATTERNS) line = line.replace(re, '[redacted]');
      out.write(line, () => cb());
    },
  });
}

export function createLogger(level: string, secrets: readonly string[], out: NodeJS.WritableStream = process.stdout): Logger {
  return pino(
    { level, base: { name: 'gpu-review' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    scrubber(secrets, out),
  );
}

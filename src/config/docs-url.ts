import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the rule documentation lives when the config does not say: GPU_REVIEW_DOCS_URL, else the
 * checks/ folder of the `repository` named in this package's package.json (GitHub or GitLab
 * spellings), else nowhere: a link that does not resolve is worse than none.
 */
export function defaultDocsUrl(env: NodeJS.ProcessEnv = process.env): string | null {
  const fromEnv = env.GPU_REVIEW_DOCS_URL?.trim();
  if (fromEnv) return /^https?:\/\//.test(fromEnv) ? fromEnv : null;
  return docsUrlFromRepository(packageRepository());
}

let cached: unknown;
function packageRepository(): unknown {
  if (cached !== undefined) return cached;
  cached = null;
  // src/config/ or dist/src/config/: the first package.json above named gpu-review.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const p = join(dir, 'package.json');
    if (existsSync(p)) {
      try {
        const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: string; repository?: unknown };
        if (pkg.name === 'gpu-review') {
          cached = pkg.repository ?? null;
          break;
        }
      } catch {
        break;
      }
    }
    dir = dirname(dir);
  }
  return cached;
}

/** `owner/name`, `github:owner/name`, `git+https://github.com/owner/name.git` or `{ url, directory }` → the checks/ folder on the default branch. */
export function docsUrlFromRepository(repo: unknown): string | null {
  const raw = typeof repo === 'string' ? repo : repo && typeof repo === 'object' && typeof (repo as { url?: unknown }).url === 'string' ? (repo as { url: string }).url : null;
  if (!raw) return null;
  const directory = repo && typeof repo === 'object' && typeof (repo as { directory?: unknown }).directory === 'string' ? `${(repo as { directory: string }).directory.replace(/^\/+|\/+$/g, '')}/` : '';
  let host = 'github.com';
  let path: string | null = null;
  const short = raw.match(/^(?:(github|gitlab):)?([\w.-]+\/[\w.-]+)$/);
  if (short) {
    if (short[1] === 'gitlab') host = 'gitlab.com';
    path = short[2];
  } else {
    const url = raw.match(/^(?:git\+)?(?:https?|ssh|git):\/\/(?:[^@/]+@)?(github\.com|gitlab\.com)[/:]([\w.-]+\/[\w.-]+?)(?:\.git)?\/?$/) ?? raw.match(/^git@(github\.com|gitlab\.com):([\w.-]+\/[\w.-]+?)(?:\.git)?$/);
    if (url) {
      host = url[1];
      path = url[2];
    }
  }
  if (!path) return null;
  const blob = host === 'gitlab.com' ? '-/blob' : 'blob';
  return `https://${host}/${path}/${blob}/HEAD/${directory}checks`;
}

/** The documentation link of one rule under a base; '' when there is no base. */
export function ruleDocUrl(base: string | null, ruleId: string): string {
  if (!base) return '';
  return base.includes('{rule}') ? base.replaceAll('{rule}', ruleId) : `${base.replace(/\/+$/, '')}/${ruleId}/README.md`;
}

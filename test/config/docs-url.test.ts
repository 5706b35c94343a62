import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultDocsUrl, docsUrlFromRepository, ruleDocUrl } from '../../src/config/docs-url.js';
import { resolveConfig } from '../../src/config/schema.js';

describe('docs_url', () => {
  it('reads package.json "repository" in its usual spellings', () => {
    expect(docsUrlFromRepository('acme/gpu-review')).toBe('https://github.com/acme/gpu-review/blob/HEAD/checks');
    expect(docsUrlFromRepository('github:acme/gpu-review')).toBe('https://github.com/acme/gpu-review/blob/HEAD/checks');
    expect(docsUrlFromRepository({ type: 'git', url: 'git+https://github.com/acme/gpu-review.git' })).toBe('https://github.com/acme/gpu-review/blob/HEAD/checks');
    expect(docsUrlFromRepository({ type: 'git', url: 'git@github.com:acme/gpu-review.git', directory: 'tools/reviewer' })).toBe('https://github.com/acme/gpu-review/blob/HEAD/tools/reviewer/checks');
    expect(docsUrlFromRepository('gitlab:acme/gpu-review')).toBe('https://gitlab.com/acme/gpu-review/-/blob/HEAD/checks');
    expect(docsUrlFromRepository(undefined)).toBeNull();
    expect(docsUrlFromRepository({ type: 'svn', url: 'svn://example.org/x' })).toBeNull();
  });

  it('the environment overrides the package default; no repository and no environment: no link', () => {
    expect(defaultDocsUrl({ GPU_REVIEW_DOCS_URL: 'https://docs.example.com/r' })).toBe('https://docs.example.com/r');
    expect(defaultDocsUrl({ GPU_REVIEW_DOCS_URL: 'not a url' })).toBeNull();
    // Whatever package.json names (nothing today: then no link at all).
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { repository?: unknown };
    expect(defaultDocsUrl({})).toBe(docsUrlFromRepository(pkg.repository));
    if (pkg.repository === undefined) expect(defaultDocsUrl({})).toBeNull();
  });

  it('builds a rule link under the base or into a {rule} template; the config key wins', () => {
    expect(ruleDocUrl('https://x.org/checks/', 'sync/a')).toBe('https://x.org/checks/sync/a/README.md');
    expect(ruleDocUrl('https://x.org/r/{rule}.html', 'sync/a')).toBe('https://x.org/r/sync/a.html');
    expect(ruleDocUrl(null, 'sync/a')).toBe('');
    expect(resolveConfig({ docs_url: 'https://x.org/checks' }, []).docsUrl).toBe('https://x.org/checks');
    expect(() => resolveConfig({ docs_url: 'nope' }, [])).toThrow(/docs_url/);
  });
});

import { CONFIG_PATH, type ConfigBlobs } from './config.js';
import type { GitHubClient } from './octokit.js';

/** The pull request as it is now, and (when asked) which config files exist, from one read-only query. */
export interface LiveState {
  open: boolean;
  headSha: string;
  /** Present when the query asked for the config blobs. */
  config?: ConfigBlobs;
  /** The size of the change as GitHub counts it (absent when the answer does not say): sizes the file-list pages. */
  size?: { files: number; lines: number };
}

interface FileAt {
  defaultBranchRef: { target: { file?: { oid: string } | null } | null } | null;
}

interface LiveAnswer {
  repository: (Partial<FileAt> & { pullRequest: { state: string; headRefOid: string; changedFiles?: number; additions?: number; deletions?: number } | null }) | null;
  org?: FileAt | null;
}

const FILE_AT_DEFAULT = 'defaultBranchRef { target { ... on Commit { file(path: $path) { oid } } } }';

/** The query: the PR's state and head, plus the config file's blob id on each default branch it may come from. */
export function liveQuery(withConfig: boolean, withOrg: boolean): string {
  const vars = ['$owner: String!', '$repo: String!', '$number: Int!', ...(withConfig ? ['$path: String!'] : [])].join(', ');
  return [
    `query (${vars}) {`,
    '  repository(owner: $owner, name: $repo) {',
    '    pullRequest(number: $number) { state headRefOid changedFiles additions deletions }',
    ...(withConfig ? [`    ${FILE_AT_DEFAULT}`] : []),
    '  }',
    ...(withConfig && withOrg ? ['  org: repository(owner: $owner, name: ".github") {', `    ${FILE_AT_DEFAULT}`, '  }'] : []),
    '}',
  ].join('\n');
}

function blobOf(r: FileAt | null | undefined): string | null {
  return r?.defaultBranchRef?.target?.file?.oid ?? null;
}

/**
 * One GraphQL query (a read, so never spaced like a write) instead of `GET /pulls/{n}` plus one
 * or two config reads: whether the PR is still open at this head, and the blob ids of
 * `.github/gpu-review.yml` in the repository and in the owner's `.github` repository, which key
 * the config cache. A missing `.github` repository is GitHub's NOT_FOUND error beside the data,
 * read as "no file there". Null when the answer does not say (the caller falls back to REST).
 */
export async function readLive(octokit: GitHubClient, pr: { owner: string; repo: string; number: number }, withConfig: boolean): Promise<LiveState | null> {
  const withOrg = withConfig && pr.repo !== '.github';
  const variables: Record<string, unknown> = { owner: pr.owner, repo: pr.repo, number: pr.number, ...(withConfig ? { path: CONFIG_PATH } : {}) };
  let data: LiveAnswer;
  try {
    data = await octokit.graphql<LiveAnswer>(liveQuery(withConfig, withOrg), variables);
  } catch (e) {
    const partial = (e as { data?: LiveAnswer }).data;
    const errors = (e as { errors?: Array<{ type?: string; path?: Array<string | number> }> }).errors ?? [];
    // NOT_FOUND (no such repository) or not visible to the installation: either way no config there.
    const onlyOrgMissing = errors.length > 0 && errors.every((x) => x.path?.[0] === 'org');
    if (!partial?.repository || !onlyOrgMissing) throw e;
    data = { ...partial, org: null };
  }
  const pull = data.repository?.pullRequest;
  if (!pull || typeof pull.headRefOid !== 'string') return null;
  return {
    open: pull.state === 'OPEN',
    headSha: pull.headRefOid,
    ...(typeof pull.changedFiles === 'number' && typeof pull.additions === 'number' && typeof pull.deletions === 'number'
      ? { size: { files: pull.changedFiles, lines: pull.additions + pull.deletions } }
      : {}),
    ...(withConfig ? { config: { repo: blobOf(data.repository as FileAt), org: withOrg ? blobOf(data.org) : null } } : {}),
  };
}

/**
 * Who the bot is on GitHub. REST spells a GitHub App's user `slug[bot]` (type `Bot`), GraphQL
 * spells the same actor `slug` (typename `Bot`); both must match, or the bot would resolve a
 * human's thread or miss its own comments.
 */
export interface BotIdentity {
  slug: string | null;
  isBot(login: string | null | undefined, type: string | null | undefined): boolean;
}

export function botIdentity(slug: string | null): BotIdentity {
  return {
    slug,
    isBot(login, type) {
      if (!login || type !== 'Bot') return false;
      // Without the slug (GET /app failed), any bot comment that carries our marker is ours.
      return slug === null || login.replace(/\[bot\]$/, '') === slug;
    },
  };
}

/** Resolves the App's slug once (GET /app with the App's JWT) and remembers it. */
export function identityResolver(lookup: () => Promise<string>, log?: { warn(o: unknown, m?: string): void }): () => Promise<BotIdentity> {
  let known: string | null = null;
  return async () => {
    if (known === null) {
      try {
        known = await lookup();
      } catch (e) {
        log?.warn({ err: e }, 'could not look up the App slug; treating bot comments with a gpu-review marker as ours');
        return botIdentity(null);
      }
    }
    return botIdentity(known);
  };
}

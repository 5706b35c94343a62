import type { ResolvedConfig } from '../config/schema.js';
import { SEVERITIES, type Severity } from '../core/types.js';

/** Comma- or space-separated rule ids or families ("host-device" = every "host-device/…" rule). */
export function parseRuleList(spec: string, known: readonly string[], flag: string): string[] {
  const items = spec.split(/[\s,]+/).filter(Boolean);
  if (items.length === 0) throw new SelectError(`${flag} needs at least one rule id or family`);
  const out = new Set<string>();
  for (const raw of items) {
    const item = raw.replace(/\/(\*\*?)?$/, '');
    const hits = known.filter((id) => id === item || id.startsWith(`${item}/`));
    if (hits.length === 0) {
      const near = known.filter((id) => id.includes(item)).slice(0, 3);
      throw new SelectError(`${flag}: unknown rule or family "${raw}"${near.length ? ` (did you mean ${near.join(', ')}?)` : ''}; \`gpu-review rules\` lists them`);
    }
    for (const h of hits) out.add(h);
  }
  return [...out];
}

export class SelectError extends Error {}

export interface OneOff {
  select?: string;
  ignore?: string;
  minSeverity?: Severity;
  enablePreview?: boolean;
}

/**
 * CLI flags for one run on top of the file's config: --select runs only the named rules (preview
 * ones included: naming a rule asks for it; a retired rule only when named by its id, not by its
 * family), --ignore turns rules off, --min-severity and --enable-preview replace the config's values.
 */
export function applyOneOff(config: ResolvedConfig, known: readonly string[], o: OneOff, retired: ReadonlySet<string> = new Set()): ResolvedConfig {
  const rules = { ...config.rules };
  if (o.select !== undefined) {
    const keep = new Set(parseRuleList(o.select, known, '--select'));
    const named = new Set(o.select.split(/[\s,]+/).map((s) => s.replace(/\/(\*\*?)?$/, '')));
    for (const id of known) {
      if (!keep.has(id)) rules[id] = 'off';
      else if (retired.has(id) && !named.has(id)) continue;
      else if (rules[id] === undefined || rules[id] === 'off') rules[id] = 'on';
    }
  }
  if (o.ignore !== undefined) for (const id of parseRuleList(o.ignore, known, '--ignore')) rules[id] = 'off';
  if (o.minSeverity !== undefined && !(SEVERITIES as readonly string[]).includes(o.minSeverity)) throw new SelectError(`--min-severity: unknown severity "${o.minSeverity}"`);
  return {
    ...config,
    rules,
    minSeverity: o.minSeverity ?? config.minSeverity,
    enablePreview: o.enablePreview || config.enablePreview,
  };
}

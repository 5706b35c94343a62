import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckDef } from '../engine/check.js';
import type { SarifRule } from './sarif.js';

const PRECISION = { high: 'high', medium: 'medium', low: 'low' } as const;

/**
 * What code scanning shows of each rule: the summary, the "why", the rule's README as help, tags
 * (family, pass, kind, languages) and a precision taken from the rule's declared confidence.
 * `docUrl` gives each rule's README address.
 */
export function sarifRules(checks: readonly CheckDef[], projectRoot: string, docUrl: (id: string) => string): SarifRule[] {
  return checks.map((c) => {
    const readme = join(projectRoot, 'checks', c.id, 'README.md');
    const helpMarkdown = existsSync(readme) ? readFileSync(readme, 'utf8') : undefined;
    const family = c.id.split('/')[0];
    const tags = ['gpu', family, `pass-${c.pass}`, c.kind, ...c.languages, ...(c.status === 'preview' || c.status === 'retired' ? [c.status] : [])];
    return {
      id: c.id,
      summary: c.summary,
      citation: c.citation,
      docUrl: docUrl(c.id),
      severity: c.severity,
      pass: c.pass,
      fullDescription: c.why || undefined,
      helpMarkdown,
      tags: [...new Set(tags)],
      precision: PRECISION[c.confidence],
    };
  });
}

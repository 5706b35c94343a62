import type { SyntaxNode } from '../core/types.js';
import { escapeRe as esc } from '../core/regex.js';

/**
 * Cooperative-groups grid barriers (003 §3.3): a grid-wide sync is only valid under a cooperative
 * launch, so several pass-3 rules need to know whether a kernel body contains one.
 */
const CG = '(?:cg::|cooperative_groups::)?';
/** `this_grid().sync()` / `cg::this_grid().sync()` / `cg::sync(cg::this_grid())` without a named group. */
const DIRECT_SYNC = new RegExp(`\\b${CG}this_grid\\s*\\(\\s*\\)\\s*\\.\\s*sync\\s*\\(\\s*\\)|\\b${CG}sync\\s*\\(\\s*${CG}this_grid\\s*\\(\\s*\\)\\s*\\)`);

/** The grid-wide barrier in a kernel body, or null. */
export function gridSyncIn(body: SyntaxNode | null): string | null {
  if (!body) return null;
  const t = body.text;
  const d = DIRECT_SYNC.exec(t);
  if (d) return d[0].replace(/\s+/g, '');
  const decl = new RegExp(`\\b(?:auto|${CG}grid_group)\\s+(\\w+)\\s*=\\s*${CG}this_grid\\s*\\(\\s*\\)`, 'g');
  for (const m of t.matchAll(decl)) {
    const g = m[1];
    const use = new RegExp(`\\b${esc(g)}\\s*\\.\\s*sync\\s*\\(\\s*\\)|\\b${CG}sync\\s*\\(\\s*${esc(g)}\\s*\\)`).exec(t);
    if (use) return use[0].replace(/\s+/g, '');
  }
  return null;
}


/** Every grid-wide barrier call in a kernel body (`g.sync()`, `cg::sync(g)`, `this_grid().sync()`). */
export function gridSyncCalls(body: SyntaxNode | null): SyntaxNode[] {
  if (!body || !gridSyncIn(body)) return [];
  const t = body.text;
  const names = new Set<string>();
  for (const m of t.matchAll(new RegExp(`\\b(?:auto|${CG}grid_group)\\s+(\\w+)\\s*=\\s*${CG}this_grid\\s*\\(\\s*\\)`, 'g'))) names.add(m[1]);
  return body.descendantsOfType('call_expression').filter((c) => {
    const fn = c.childForFieldName('function');
    const args = c.childForFieldName('arguments')?.namedChildren ?? [];
    if (fn?.type === 'field_expression' && fn.childForFieldName('field')?.text === 'sync') {
      const obj = fn.childForFieldName('argument')?.text.replace(/\s+/g, '') ?? '';
      return names.has(obj) || /this_grid\(\)$/.test(obj);
    }
    if (/^(cg::|cooperative_groups::)?sync$/.test(fn?.text ?? '') && args.length === 1) {
      const a = args[0].text.replace(/\s+/g, '');
      return names.has(a) || /this_grid\(\)$/.test(a);
    }
    return false;
  });
}

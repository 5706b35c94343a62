import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

const LAZY_NAME = /\w*(?:lazy|deferred|pending_expr)\w*/i;
/** An insert into a lazy map: `lazy_[id] = e`, `lazy_.emplace(...)`, `deferred->insert(...)`. */
const INSERT = /\b(\w*(?:lazy|deferred|pending_expr)\w*)\s*(?:\.|->)\s*(?:emplace|insert|try_emplace|insert_or_assign|emplace_back|push_back)\s*\(|\b(\w*(?:lazy|deferred|pending_expr)\w*)\s*\[[^\]\n]*\]\s*=(?!=)/gi;
/** Tile writers of 000 §10.2: clear, fill, copy-into, accumulate (plus store/write). */
const WRITER = /^(clear|fill|copy_into|copy_from|accumulate|store|write|assign|set_zero|zero)/;
const INVALIDATE = /invalidate|erase|materiali[sz]e|forget|evict|drop_lazy|reset_lazy|flush|clear_lazy/i;

/** `Tile::fill` → [Tile, fill]; a method defined in the class body → [class name, name]. */
function methodOf(fn: SyntaxNode): { cls: string | null; name: string; nameNode: SyntaxNode } | null {
  let d = fn.childForFieldName('declarator');
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
  const n = d?.childForFieldName('declarator');
  if (!n) return null;
  if (n.type === 'qualified_identifier') {
    const parts = n.text.replace(/\s/g, '').split('::');
    return { cls: parts[parts.length - 2] ?? null, name: parts[parts.length - 1], nameNode: n };
  }
  let cur = fn.parent;
  while (cur && cur.type !== 'class_specifier' && cur.type !== 'struct_specifier' && cur.type !== 'translation_unit') cur = cur.parent;
  const cls = cur && cur.type !== 'translation_unit' ? cur.childForFieldName('name')?.text ?? null : null;
  return { cls, name: n.text, nameNode: n };
}

/** Source of `n` without its comments (a comment naming the map is not an invalidation). */
function codeOf(n: SyntaxNode): string {
  let t = n.text;
  const cs = n.descendantsOfType('comment');
  for (let i = cs.length - 1; i >= 0; i--) t = t.slice(0, cs[i].startIndex - n.startIndex) + ' '.repeat(cs[i].endIndex - cs[i].startIndex) + t.slice(cs[i].endIndex - n.startIndex);
  return t;
}

export default defineCheck({
  id: 'luisa/codegen-lazy-store-without-invalidation',
  pass: 3,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.2 Defer stores: lazy expression evaluation ("Invalidate the lazy entry on every later mutation … Miss one invalidation site and you get silent stale data"; re-entrancy guard for x = f(x))',
  summary: 'Tile writer method of a generator with lazily evaluated tiles that never invalidates the lazy entry.',
  why: 'A deferred tile expression is re-evaluated at each later read, so every writer (clear, fill, copy-into, accumulate) must invalidate or materialize it first; "miss one invalidation site and you get silent stale data" (000 §10.2).',
  messages: {
    stale: 'Generator records lazy (deferred) tile expressions (`{{map}}`) but this writer (`{{cls}}::{{name}}`) does not invalidate them; later reads may use stale values.',
  },
  fix: 'judgment',
  create(ctx) {
    const fns: SyntaxNode[] = [];
    return {
      function_definition(node) {
        fns.push(node);
      },
      'source:exit'() {
        if (!fns.length) return;
        const text = ctx.source.text;
        if (!LAZY_NAME.test(text)) return;
        const lazyNames = new Set<string>();
        for (const mm of text.matchAll(INSERT)) lazyNames.add(mm[1] ?? mm[2]);
        if (!lazyNames.size) return;
        const mentionsLazy = (t: string): string | null => {
          for (const n of lazyNames) if (new RegExp(`\\b${esc(n)}\\b`).test(t)) return n;
          return null;
        };
        // Classes whose methods or body use a lazy map.
        const lazyOfClass = new Map<string, string>();
        const methods: Array<{ fn: SyntaxNode; cls: string | null; name: string; nameNode: SyntaxNode }> = [];
        for (const fn of fns) {
          const mth = methodOf(fn);
          if (!mth) continue;
          methods.push({ fn, ...mth });
          const hit = mth.cls ? mentionsLazy(codeOf(fn)) : null;
          if (hit && mth.cls && !lazyOfClass.has(mth.cls)) lazyOfClass.set(mth.cls, hit);
        }
        for (const spec of ctx.source.root.descendantsOfType(['class_specifier', 'struct_specifier'])) {
          const name = spec.childForFieldName('name')?.text;
          const body = spec.childForFieldName('body');
          if (!name || !body || lazyOfClass.has(name)) continue;
          for (const f of body.namedChildren) {
            if (f.type !== 'field_declaration') continue;
            const hit = mentionsLazy(f.text);
            if (hit) { lazyOfClass.set(name, hit); break; }
          }
        }
        for (const { fn, cls, name, nameNode } of methods) {
          if (!cls || !WRITER.test(name)) continue;
          const map = lazyOfClass.get(cls);
          if (!map) continue;
          const body = fn.childForFieldName('body');
          if (!body) continue;
          // A writer that touches the lazy map (erase, replace, materialize) or calls an invalidation helper is fine.
          const code = codeOf(body);
          if (mentionsLazy(code) || INVALIDATE.test(code)) continue;
          ctx.report({
            node: nameNode,
            messageId: 'stale',
            data: { map, cls, name },
            fix: { description: `Invalidate (erase or materialize) the lazy entry of this tile at the start of \`${cls}::${name}\`, as at every other writer, and keep a re-entrancy guard for self-referential statements x = f(x) (000 §10.2).` },
          });
        }
      },
    };
  },
});

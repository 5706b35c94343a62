import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { lastName, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** Host runtime objects: a function holding one runs on the host, not while a kernel records. */
const HOST_RUNTIME = /\b(Device|Stream|CommandList|Context)\s*[&*]?\s*\w+\s*[=;,){]|\.compile\s*[<(]|\bcreate_(stream|device|buffer|image)\b/;

function enclosing(n: SyntaxNode, types: ReadonlySet<string>): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) if (types.has(p.type)) return p;
  return null;
}
const FUNCTION = new Set(['function_definition']);
const CLASS = new Set(['class_specifier', 'struct_specifier']);
const LAMBDA = new Set(['lambda_expression']);

function functionName(f: SyntaxNode): string | null {
  let d = f.childForFieldName('declarator');
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
  return lastName(d?.childForFieldName('declarator')?.text.replace(/\s/g, '') ?? null);
}

export default defineCheck({
  id: 'luisa/shared-outside-kernel-or-in-branch',
  pass: 5,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §4.7 Correctness & Performance Rules, rule 1 ("Construct inside the kernel body … not inside a divergent $if you later read from outside that $if"); 000 §4.1 API ("Must be constructed inside the kernel/callable body")',
  summary: 'Shared<T> constructed outside a kernel/callable body, or inside a $if it escapes.',
  why: 'Shared<T> registers itself on FunctionBuilder::current() (shared.h:43), which exists only while a kernel or callable records, and a declaration inside a $if ends with that C++ scope, so other threads and later code cannot use it (000 §4.1, §4.7 rule 1).',
  messages: {
    outside: '`{{code}}` is constructed {{where}}: Shared<T> must be constructed directly in the kernel/callable body (not at namespace/class scope, and not inside a $if whose scope it escapes). Move it to the top of the kernel body.',
    branch: '`{{code}}` is declared inside `$if ({{cond}})` {{how}}: Shared<T> must be constructed directly in the kernel/callable body (not at namespace/class scope, and not inside a $if whose scope it escapes). Move it to the top of the kernel body.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (!/\bShared\s*</.test(ctx.source.text)) return;
        const m = ctx.get(luisaModel);
        const text = ctx.source.text;
        const fix = { description: 'Declare the array at the top of the kernel (or callable) body, before any $if, and pass it (by reference or as a `Shared<T> *`) to helpers that need it.' };
        const calledFromDevice = (name: string | null): boolean => !!name && m.callsNamed(name).some((c) => m.inDeviceCode(c.node));
        // A class is built while recording when device code declares, news or constructs one.
        const classBuiltOn = (cls: string): { device: boolean; host: boolean } => {
          const re = new RegExp(`(^|[^\\w:])${cls.replace(/\W/g, '')}\\s*(\\*\\s*)?\\w+\\s*[{(;=]|new\\s+${cls.replace(/\W/g, '')}\\b|\\b${cls.replace(/\W/g, '')}\\s*[{(]`, 'g');
          let device = false;
          let host = false;
          for (const mm of text.matchAll(re)) {
            const n = ctx.source.root.descendantForIndex(mm.index + mm[0].indexOf(cls));
            if (!n || enclosing(n, CLASS)?.childForFieldName('name')?.text === cls) continue;
            if (m.inDeviceCode(n)) device = true;
            else if (enclosing(n, FUNCTION) || enclosing(n, LAMBDA)) host = true;
          }
          return { device, host };
        };
        const hostOnly = (f: SyntaxNode): boolean => functionName(f) === 'main' || HOST_RUNTIME.test(f.text);

        for (const s of m.shared) {
          if (s.body) continue;
          const f = enclosing(s.node, FUNCTION);
          const lam = enclosing(s.node, LAMBDA);
          const cls = enclosing(s.node, CLASS);
          let where: string | null = null;
          if (!f && !lam && !cls) where = 'at namespace scope, where no kernel is recording';
          else if (f && !lam) {
            if (m.generatorOf(s.node) || calledFromDevice(functionName(f))) continue;
            const qualified = f.childForFieldName('declarator')?.childForFieldName('declarator')?.text ?? '';
            const owner = cls?.childForFieldName('name')?.text ?? (/::/.test(qualified) ? qualified.split('::').slice(-2, -1)[0] ?? null : null);
            if (owner) {
              const built = classBuiltOn(owner);
              if (built.device || !built.host) continue;
              where = `in \`${owner}\`, which is only built in host code`;
            } else if (hostOnly(f)) {
              where = `in the host function \`${functionName(f)}\``;
            }
          }
          if (!where) continue;
          ctx.report({ node: s.node, messageId: 'outside', data: { code: quote(s.node), where }, fix });
        }
        // Class members held by value: constructed with their object.
        for (const fd of ctx.source.root.descendantsOfType('field_declaration')) {
          const t = fd.childForFieldName('type');
          if (t?.type !== 'template_type' || lastName(t.childForFieldName('name')?.text ?? '') !== 'Shared') continue;
          if (!fd.namedChildren.some((c) => c.type === 'field_identifier' || (c.type === 'init_declarator' && c.childForFieldName('declarator')?.type === 'field_identifier'))) continue;
          const cls = enclosing(fd, CLASS)?.childForFieldName('name')?.text;
          if (!cls) continue;
          const built = classBuiltOn(cls);
          if (built.device || !built.host) continue;
          ctx.report({ node: fd, messageId: 'outside', data: { code: quote(fd), where: `as a member of \`${cls}\`, which is only built in host code` }, fix });
        }

        // (b) inside a $if whose scope the array escapes.
        for (const s of m.shared) {
          if (!s.body || !s.name) continue;
          const branches = m.deviceBranchesAround(s.node);
          if (!branches.length) continue;
          const hit = escapeOf(m, s.node, s.name, s.body.body, branches);
          if (!hit) continue;
          ctx.report({ node: s.node, messageId: 'branch', data: { code: quote(s.node), cond: hit.cond, how: hit.how }, fix });
        }
      },
    };
  },
});

function escapeOf(m: LuisaModel, decl: SyntaxNode, name: string, body: SyntaxNode, branches: Array<{ stmt: SyntaxNode; condition: SyntaxNode | null }>): { cond: string; how: string } | null {
  const ids = body.descendantsOfType('identifier');
  for (const br of branches) {
    const cond = br.condition?.text ?? '…';
    const end = br.stmt.endIndex;
    // The name (through the same declaration) used after the $if.
    if (ids.some((i) => i.text === name && i.startIndex >= end && m.declOf(name, i)?.node.id === decl.id)) return { cond, how: `and \`${name}\` is used after it` };
    // A pointer declared outside takes its address and is used after the $if.
    for (const a of br.stmt.descendantsOfType('assignment_expression')) {
      const r = a.childForFieldName('right');
      const l = a.childForFieldName('left');
      if (!r || l?.type !== 'identifier' || !new RegExp(`^&\\s*${esc(name)}$`).test(r.text.replace(/\s/g, '').replace(/^&\(?/, '&').replace(/\)$/, ''))) continue;
      const p = m.declOf(l.text, l);
      if (!p || p.node.startIndex >= br.stmt.startIndex) continue;
      if (ids.some((i) => i.text === l.text && i.startIndex >= end)) return { cond, how: `and its address escapes through \`${l.text}\`, used after it` };
    }
    // A thread-dependent $if: the threads that skip it never see the array, and the barrier that
    // would publish it cannot sit inside the branch.
    if (m.laneDependent(br.condition)) return { cond, how: 'whose condition differs between threads, so the rest of the block never sees it' };
  }
  return null;
}

import { cppFlowsTo, hostFunctionOf, onEveryPath, unconditionalWithin } from '../../../src/analysis/flow.js';
import { luisaModel } from '../../../src/analysis/luisa.js';
import { contains, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Methods that make `empty()` false (commands, callbacks, presents); dtor callbacks do not count. */
const FILLS = /^(append|add_range|add_callback|add_present)$/;
const LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);

function chainHead(e: SyntaxNode): SyntaxNode | null {
  let cur: SyntaxNode = e;
  while (cur.type === 'binary_expression' && cur.childForFieldName('operator')?.type === '<<') cur = cur.childForFieldName('left')!;
  return cur.id === e.id ? null : unparen(cur);
}

export default defineCheck({
  id: 'luisa/commandlist-not-committed',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §8.7 Key Rules, rule 3 ("Destructing a non-empty, uncommitted list asserts")',
  summary: 'A local CommandList receives commands but reaches the end of its scope uncommitted on some path.',
  why: '~CommandList asserts that the list is committed or empty (000 §8.7 rule 3, src/runtime/command_list.cpp), so a path that leaves a filled list uncommitted aborts the program instead of running the recorded work.',
  messages: {
    earlyExit: '`{{exit}}` leaves the scope of `{{list}}` after `{{append}}` without committing it: CommandList receives commands but is never committed on some path; destroying a non-empty list asserts. Commit before leaving, or `{{list}}.clear()` first.',
    neverCommitted: '`{{list}}` receives `{{append}}` but is not committed on every path to the end of its scope: CommandList receives commands but is never committed on some path; destroying a non-empty list asserts. Add `stream << {{list}}.commit();` on all paths.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!/CommandList/.test(ctx.source.text)) return;
        for (const d of ctx.source.root.descendantsOfType('declaration')) {
          const type = d.childForFieldName('type')?.text.replace(/\s/g, '') ?? '';
          const dd = d.childForFieldName('declarator');
          if (!dd || (dd.type !== 'identifier' && dd.type !== 'init_declarator')) continue;
          const nameNode = dd.type === 'identifier' ? dd : dd.childForFieldName('declarator');
          if (nameNode?.type !== 'identifier') continue;
          const value = dd.type === 'init_declarator' ? dd.childForFieldName('value') : null;
          const isList = /(^|::)CommandList$/.test(type) || (type === 'auto' && !!value && /^(luisa::compute::)?CommandList::create\s*\(/.test(value.text));
          if (!isList || m.inDeviceCode(d)) continue;
          const scope = d.parent;
          const fn = hostFunctionOf(d);
          if (!scope || scope.type !== 'compound_statement' || !fn) continue;
          const name = nameNode.text;

          const fills: SyntaxNode[] = [];
          const commits: SyntaxNode[] = [];
          let escapes = false;
          for (const id of scope.descendantsOfType('identifier')) {
            if (id.text !== name || id.startIndex < d.endIndex) continue;
            if (m.declOf(name, id)?.node.id !== d.id) continue;
            // Used from a nested lambda: it may be committed (or filled) whenever that runs.
            if (hostFunctionOf(id)?.id !== fn.id) { escapes = true; break; }
            const p = id.parent!;
            if (p.type === 'field_expression' && p.childForFieldName('argument')?.id === id.id) {
              const call = p.parent?.type === 'call_expression' ? p.parent : null;
              const field = p.childForFieldName('field')?.text ?? '';
              if (!call) continue;
              if (FILLS.test(field)) fills.push(call);
              else if (field === 'commit' || field === 'clear') commits.push(call);
              continue;
            }
            if (p.type === 'binary_expression' && p.childForFieldName('left')?.id === id.id && p.childForFieldName('operator')?.type === '<<') {
              let top = p;
              while (top.parent?.type === 'binary_expression' && top.parent.childForFieldName('operator')?.type === '<<') top = top.parent;
              if (chainHead(top)?.id === id.id) { fills.push(top); continue; }
            }
            // Moved out, returned, passed to a function (which may commit it), or its address taken.
            escapes = true;
            break;
          }
          if (escapes || !fills.length) continue;
          // An if/else whose branches both commit covers the paths through it.
          const covers = [...commits];
          for (const c of commits) {
            for (let p = c.parent; p && p.id !== scope.id; p = p.parent) {
              if (p.type !== 'if_statement') continue;
              const alt = p.childForFieldName('alternative');
              const cons = p.childForFieldName('consequence');
              if (alt && cons && commits.some((x) => contains(cons, x)) && commits.some((x) => contains(alt, x))) covers.push(p);
            }
          }
          // A loop whose body commits on every iteration (a render loop: `while (!window.should_close())
          // { cl << …; stream << cl.commit(); }`) flushes what was recorded before it with its first
          // iteration: setup batched into the first frame. Only a loop that never runs leaves it.
          for (const c of commits) {
            if (c.childForFieldName('function')?.childForFieldName('field')?.text !== 'commit') continue;
            for (let p = c.parent; p && p.id !== scope.id; p = p.parent) {
              if (!LOOPS.has(p.type)) continue;
              const body = p.childForFieldName('body');
              const jumps = body ? body.descendantsOfType(['break_statement', 'continue_statement', 'return_statement', 'throw_statement']).some((j) => j.startIndex < c.startIndex) : true;
              if (body && !jumps && unconditionalWithin(c, body)) covers.push(p);
              break;
            }
          }
          const committedBetween = (a: SyntaxNode, b: SyntaxNode): boolean => covers.some((c) => onEveryPath(c, a, b));

          // Early exits that leave the list's scope with commands recorded.
          let reported = false;
          for (const e of scope.descendantsOfType(['return_statement', 'throw_statement', 'break_statement', 'continue_statement'])) {
            if (e.startIndex < d.endIndex || hostFunctionOf(e)?.id !== fn.id) continue;
            if (e.type === 'break_statement' || e.type === 'continue_statement') {
              let loop: SyntaxNode | null = e.parent;
              while (loop && !LOOPS.has(loop.type) && loop.type !== 'switch_statement') loop = loop.parent;
              // The jump stays inside the list's scope when its loop (or switch) does.
              if (!loop || contains(scope, loop)) continue;
            }
            const before = fills.filter((f) => f.endIndex <= e.startIndex && cppFlowsTo(f, e) && !committedBetween(f, e));
            if (!before.length) continue;
            reported = true;
            ctx.report({
              node: e,
              messageId: 'earlyExit',
              data: { exit: quote(e), list: name, append: quote(before[before.length - 1]) },
              fix: { description: `Commit \`${name}\` (\`stream << ${name}.commit();\`) or call \`${name}.clear()\` before this exit.` },
            });
          }
          if (reported) continue;
          // The end of the scope: every fill must be followed by a commit on every path.
          const end = scope.lastChild!;
          const open = fills.filter((f) => !committedBetween(f, end));
          if (!open.length) continue;
          const last = open[open.length - 1];
          ctx.report({
            node: last,
            messageId: 'neverCommitted',
            data: { list: name, append: quote(last) },
            fix: { description: `Submit \`${name}\` with \`stream << ${name}.commit();\` on every path after its last append, or \`${name}.clear()\` it.` },
          });
        }
      },
    };
  },
});

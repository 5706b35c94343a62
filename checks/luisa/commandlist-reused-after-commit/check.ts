import { cppFlowsTo, hostFunctionOf, loopsAround, onEveryPath } from '../../../src/analysis/flow.js';
import { luisaModel } from '../../../src/analysis/luisa.js';
import { contains, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const APPEND_METHODS = /^(append|add_range|add_callback|add_dtor_callback|add_present|commit)$/;

/** Head of an `a << b << c` chain, when `e` is the top of one. */
function chainHead(e: SyntaxNode): SyntaxNode | null {
  if (e.type !== 'binary_expression' || e.childForFieldName('operator')?.type !== '<<') return null;
  if (e.parent?.type === 'binary_expression' && e.parent.childForFieldName('operator')?.type === '<<') return null;
  let cur: SyntaxNode = e;
  while (cur.type === 'binary_expression' && cur.childForFieldName('operator')?.type === '<<') cur = cur.childForFieldName('left')!;
  return unparen(cur);
}

function isCommit(n: SyntaxNode): boolean {
  const f = n.type === 'call_expression' ? n.childForFieldName('function') : null;
  return f?.type === 'field_expression' && f.childForFieldName('field')?.text === 'commit';
}

export default defineCheck({
  id: 'luisa/commandlist-reused-after-commit',
  pass: 2,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §8.7 Key Rules, rule 3 ("Don\'t reuse a committed CommandList")',
  summary: 'A CommandList is committed again with nothing recorded since its last commit(): the second commit submits an empty list.',
  why: 'commit() moves the commands into the returned Commit and leaves the source list empty (000 §8.7 rule 3), so committing the same list again submits nothing: the batch does not run a second time.',
  messages: {
    reused: '`{{code}}` commits `{{list}}` again with nothing recorded since `{{list}}.commit()` (line {{line}}){{loop}}: CommandList used after commit(): commit() moves the commands out and leaves the list empty, so this submits an empty list. Record the batch again before committing (or keep the `Commit`/list you want to resubmit).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const commits = m.callsNamed('commit').filter((c) => c.receiver?.type === 'identifier' && !c.args.length && !m.inDeviceCode(c.node));
        if (!commits.length) return;
        const usesByFn = new Map<number, Array<{ name: string; node: SyntaxNode }>>();
        const resetsByFn = new Map<number, Array<{ name: string; node: SyntaxNode }>>();
        const scan = (fn: SyntaxNode): void => {
          if (usesByFn.has(fn.id)) return;
          const uses: Array<{ name: string; node: SyntaxNode }> = [];
          const resets: Array<{ name: string; node: SyntaxNode }> = [];
          for (const n of fn.descendantsOfType(['binary_expression', 'call_expression', 'assignment_expression'])) {
            if (hostFunctionOf(n)?.id !== fn.id) continue;
            if (n.type === 'binary_expression') {
              const h = chainHead(n);
              if (h?.type === 'identifier') uses.push({ name: h.text, node: n });
            } else if (n.type === 'call_expression') {
              const f = n.childForFieldName('function');
              const r = f?.type === 'field_expression' ? f.childForFieldName('argument') : null;
              const field = f?.childForFieldName('field')?.text ?? '';
              if (r?.type !== 'identifier') continue;
              if (APPEND_METHODS.test(field)) uses.push({ name: r.text, node: n });
              else if (field === 'clear') resets.push({ name: r.text, node: n });
            } else {
              const l = n.childForFieldName('left');
              if (l?.type === 'identifier') resets.push({ name: l.text, node: n });
            }
          }
          usesByFn.set(fn.id, uses);
          resetsByFn.set(fn.id, resets);
        };
        const reported = new Set<number>();
        for (const c of commits) {
          const fn = hostFunctionOf(c.node);
          if (!fn) continue;
          scan(fn);
          const name = c.receiver!.text;
          const decl = m.declOf(name, c.node);
          const resets = resetsByFn.get(fn.id)!.filter((r) => r.name === name);
          // Only the first reuse after each commit: later ones are the same mistake.
          let first: { node: SyntaxNode; viaLoop: boolean } | null = null;
          for (const u of usesByFn.get(fn.id)!) {
            if (u.name !== name || contains(u.node, c.node) || contains(c.node, u.node)) continue;
            if (m.declOf(name, u.node)?.node.id !== decl?.node.id) continue;
            let viaLoop = false;
            if (u.node.startIndex >= c.node.endIndex) {
              if (!cppFlowsTo(c.node, u.node)) continue;
            } else {
              // The back edge: the list outlives the iteration, so the next iteration reuses it.
              const loop = loopsAround(c.node).find((l) => contains(l, u.node) && (!decl || !contains(l, decl.node)));
              if (!loop) continue;
              viaLoop = true;
            }
            if (resets.some((r) => onEveryPath(r.node, c.node, u.node))) continue;
            // Forward uses come before wrapped-around ones in execution order.
            const rank = (x: { node: SyntaxNode; viaLoop: boolean }): number => (x.viaLoop ? 1e12 : 0) + x.node.startIndex;
            if (!first || rank({ node: u.node, viaLoop }) < rank(first)) first = { node: u.node, viaLoop };
          }
          if (!first) {
            // The only use in a loop is this commit: from the second iteration on it commits an empty list.
            const loop = loopsAround(c.node).find((l) => !decl || !contains(l, decl.node));
            const refilled = (x: { name: string; node: SyntaxNode }): boolean => x.name === name && x.node.id !== c.node.id && !!loop && contains(loop, x.node);
            if (loop && !usesByFn.get(fn.id)!.some(refilled) && !resets.some(refilled)) first = { node: c.node, viaLoop: true };
          }
          // Refilling a committed list is fine (upstream empties it and resets its committed flag);
          // only a commit with nothing recorded since the last one is a mistake: it submits nothing.
          if (!first || !isCommit(first.node) || reported.has(first.node.id)) continue;
          reported.add(first.node.id);
          ctx.report({
            node: first.node,
            messageId: 'reused',
            data: { code: quote(first.node), list: name, line: c.node.startPosition.row + 1, loop: first.viaLoop ? ' in the previous iteration' : '' },
            fix: { description: `Record the commands again into \`${name}\` before this commit, or drop the second commit.` },
          });
        }
      },
    };
  },
});

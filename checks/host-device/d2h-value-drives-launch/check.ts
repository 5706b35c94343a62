import { pythonModel, type D2H } from '../../../src/analysis/python.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { READ_STALL } from '../../../src/config/costs.js';

const within = (outer: SyntaxNode, n: SyntaxNode) => outer.startIndex <= n.startIndex && n.endIndex <= outer.endIndex;
const oneLine = (s: string) => {
  const t = s.replace(/\s*\n\s*/g, ' ');
  return t.length > 60 ? t.slice(0, 57) + '...' : t;
};

/** The statement's header as reviewers read it: `if n_hits > 0`, `for k in range(n)`. */
function header(stmt: SyntaxNode, cond: SyntaxNode): string {
  if (stmt.type === 'for_statement') return `for ${stmt.childForFieldName('left')?.text ?? '_'} in ${cond.text}`;
  const kw = stmt.type === 'elif_clause' ? 'elif' : stmt.type === 'while_statement' ? 'while' : 'if';
  return `${kw} ${cond.text}`;
}

/** `if <cond>: return ...`: the branch skips everything after it. */
function exitsEarly(stmt: SyntaxNode): boolean {
  const body = stmt.childForFieldName('consequence');
  const last = body?.namedChildren.filter((c) => c.type !== 'comment').pop();
  return last?.type === 'return_statement';
}

export default defineCheck({
  id: 'host-device/d2h-value-drives-launch',
  pass: 1,
  severity: 'critical',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation:
    '003 §8.2 Host-Device Ping-Pong (detection rule 1: D2H "followed by a decision that feeds back into a kernel launch"); 003 §9 Pass 1 bullet 1',
  summary: 'A value copied from the device decides a later launch: its grid, arguments, kernel, or whether it runs at all.',
  why: 'The read drains the GPU, and the launch that depends on it cannot be queued until the host has the value, so the device idles for a full round trip plus the next launch (' + READ_STALL + ') (003 §8.2 CRITICAL, §3.5).',
  messages: {
    argument: 'A value read back from the device (`{{code}}`) decides what is launched next (D→H→D ping-pong): it feeds `{{use}}` on line {{line}}.',
    decision:
      'A value read back from the device (`{{code}}`) decides what is launched next (D→H→D ping-pong): `{{use}}` on line {{line}} decides whether GPU work runs.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const skip = (n: SyntaxNode) => m.debugGated(n) || m.inCpuFallback(n);
        const lineOf = (n: SyntaxNode) => ctx.source.toFile(n.startPosition.row, n.startPosition.column)?.line ?? n.startPosition.row + 1;
        // An async host↔device copy is a transfer, not a launch decision (`host-device/roundtrip-copy`).
        const work = m.gpuOps.filter((o) => o.kind !== 'async-copy' && !skip(o.node));
        // Both patterns need GPU work and a device read outside loops (inside one it is get-in-loop's).
        if (!work.length || !m.d2h.some((d) => !m.loopOf(d.node) && !skip(d.node))) return;

        const found = new Map<number, { origin: SyntaxNode; at: number; messageId: 'argument' | 'decision'; use: string; line: number }>();
        const consider = (d: D2H, use: SyntaxNode, at: SyntaxNode, messageId: 'argument' | 'decision', text: string) => {
          // Inside a loop the same read is `host-device/get-in-loop`, which takes precedence (catalog).
          if (m.loopOf(d.node) || skip(d.node)) return;
          if (m.scopeOf(d.node).id !== m.scopeOf(use).id) return;
          if (!within(use, d.node) && !m.flowsTo(d.node, use)) return;
          const origin = m.hostValueOf(d);
          const prev = found.get(origin.id);
          if (prev && prev.at <= at.startIndex) return;
          found.set(origin.id, { origin, at: at.startIndex, messageId, use: oneLine(text), line: lineOf(at) });
        };

        // (b) the value is an argument of GPU work: grid, args=(...), scalar operand, or the kernel chosen.
        for (const op of work) {
          const n = op.node;
          const inputs: SyntaxNode[] = [];
          if (n.type === 'call') {
            const args = n.childForFieldName('arguments');
            if (args) inputs.push(args);
            const fn = n.childForFieldName('function');
            if (op.kind === 'kernel-call' && fn) inputs.push(fn);
          } else {
            inputs.push(n);
          }
          const head = n.type === 'call' ? `${n.childForFieldName('function')?.text ?? ''}(...)` : n.text;
          for (const input of inputs) for (const d of m.d2hSourcesOf(input)) consider(d, n, n, 'argument', head);
        }

        // (a) the value decides whether GPU work runs: an if/while/for whose body launches, or an early return before it.
        for (const stmt of ctx.source.root.descendantsOfType(['if_statement', 'elif_clause', 'while_statement', 'for_statement'])) {
          const cond = unparen(stmt.childForFieldName(stmt.type === 'for_statement' ? 'right' : 'condition'));
          if (!cond || skip(stmt)) continue;
          const sources = m.d2hSourcesOf(cond);
          if (!sources.length) continue;
          const scope = m.scopeOf(stmt);
          const guarded = stmt.type === 'elif_clause' ? stmt.parent ?? stmt : stmt;
          const inBody = work.some((o) => within(guarded, o.node) && o.node.startIndex >= cond.endIndex && m.scopeOf(o.node).id === scope.id);
          const after =
            stmt.type === 'if_statement' && exitsEarly(stmt) && work.some((o) => m.scopeOf(o.node).id === scope.id && m.flowsTo(stmt, o.node));
          if (!inBody && !after) continue;
          for (const d of sources) consider(d, cond, cond, 'decision', header(stmt, cond));
        }

        for (const f of [...found.values()].sort((a, b) => a.origin.startIndex - b.origin.startIndex)) {
          ctx.report({
            node: f.origin,
            messageId: f.messageId,
            data: { code: oneLine(f.origin.text), use: f.use, line: f.line },
            fix: {
              description:
                'Keep the decision on the device: launch unconditionally and let the kernel skip rows by a device-side predicate, pass the device scalar instead of its host copy, or restructure as count → ' +
                (ctx.projectVocabulary ? '`exclusive_sum(..., synchronize=False)` → `count_scatter_total(...)` → scatter.' : 'an exclusive prefix sum on the device (`cp.cumsum`) → one read of the total → scatter.'),
            },
          });
        }
      },
    };
  },
});

import { pythonModel } from '../../../src/analysis/python.js';
import { calleePath, contains, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { LAUNCH } from '../../../src/config/costs.js';

// Logger methods whose level is normally enabled. `debug` is left out: with lazy `%s` arguments the
// array is only formatted when debug logging is on (catalog: conservative default).
const LOG_CALL = /(^|\.)(log|logger|logging|_log|_logger|\w+_log(ger)?)\.(info|warning|warn|error|critical|exception)$/i;
const ANY_LOG_CALL = /(^|\.)(log|logger|logging|_log|_logger|\w+_log(ger)?)\.(debug|info|warning|warn|error|critical|exception|log)$/i;
const TRACE_COND = /\b\w*(trac(e|ing)|profil\w*|TRACE|PROFILE)\w*\b/;
const REPR_METHODS = /^__(repr|str|format|rich_repr)__$/;

function statementOf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && cur.parent.type !== 'block' && cur.parent.type !== 'module') cur = cur.parent;
  return cur;
}

/** Code that only runs to report a failure or to run the module as a script: its output is the point. */
function reportingContext(n: SyntaxNode): boolean {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'raise_statement' || p.type === 'assert_statement') return true;
    if (p.type === 'function_definition' && REPR_METHODS.test(p.childForFieldName('name')?.text ?? '')) return true;
    if (p.type === 'if_statement' && /__name__\s*==\s*['"]__main__['"]/.test(p.childForFieldName('condition')?.text ?? '')) return true;
  }
  return false;
}

function traceGated(n: SyntaxNode): boolean {
  for (let p = n.parent; p && p.type !== 'function_definition'; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const cond = p.childForFieldName('condition');
      if (cond && !contains(cond, n) && TRACE_COND.test(cond.text)) return true;
    }
  }
  return false;
}

function deletion(ctx: CheckContext, call: SyntaxNode): FixSpec {
  const description = 'Delete the line, or gate it behind `if DEBUG:` (003 §8.1); to keep a summary, print metadata such as `.shape` or `.dtype`, which needs no transfer.';
  const stmt = statementOf(call);
  if (stmt.type !== 'expression_statement' || unparen(stmt.namedChildren[0])?.id !== call.id) return { description };
  const lines = ctx.linesOf(stmt);
  const first = lines.split('\n')[0];
  const rest = lines.slice(first.slice(0, stmt.startPosition.column).length + stmt.text.length);
  if (!/^\s*$/.test(first.slice(0, stmt.startPosition.column)) || !/^\s*(#.*)?$/.test(rest)) return { description };
  if (stmt.parent?.type === 'block' && stmt.parent.namedChildren.filter((c) => c.type !== 'comment').length < 2) return { description };
  return { description, replace: { from: stmt, text: '' } };
}

export default defineCheck({
  id: 'sync/debug-print-device-array',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §8.1 Implicit Synchronization (row "print(cupy_array) in debug code"); 003 §2.4 (row "print() of a CuPy array"); 003 §9 Pass 2 bullet 2',
  summary: 'print(), logging or string formatting of a device array (hidden D2H copy and sync).',
  why: 'Turning a CuPy array into text copies it to the host after every queued kernel has finished, so the GPU idles and the next launch pays its launch overhead (' + LAUNCH + ') on an empty queue: a silent stall that 003 §8.1 rates HIGH.',
  messages: {
    print: '`{{code}}` prints the device array `{{value}}`: print() of a CuPy array forces a device→host copy and a full sync.',
    log: '`{{code}}` logs the device array `{{value}}`: formatting a CuPy array for the log forces a device→host copy and a full sync.',
    format: '`{{code}}` formats the device array `{{value}}` as text: this forces a device→host copy and a full sync.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const reported = new Set<number>();
        const skip = (n: SyntaxNode) => m.debugGated(n) || traceGated(n) || m.inCpuFallback(n) || reportingContext(n);
        const report = (node: SyntaxNode, messageId: string, value: SyntaxNode, deletable: boolean) => {
          if (reported.has(node.id) || skip(node)) return;
          reported.add(node.id);
          ctx.report({ node, messageId, data: { code: quote(node), value: quote(value) }, fix: deletable ? deletion(ctx, node) : { description: deletion(ctx, node).description } });
        };
        /** The print/log call an f-string or `%`/`.format` expression is handed to, if any. */
        const consumer = (n: SyntaxNode): SyntaxNode | null => {
          let cur = n;
          while (cur.parent && (cur.parent.type === 'argument_list' || cur.parent.type === 'parenthesized_expression' || cur.parent.type === 'binary_operator' || cur.parent.type === 'concatenated_string' || cur.parent.type === 'string')) cur = cur.parent;
          const call = cur.parent?.type === 'call' ? cur.parent : null;
          const p = call ? calleePath(call.childForFieldName('function')) : null;
          return call && (p === 'print' || ANY_LOG_CALL.test(p ?? '')) ? call : null;
        };
        const viaConsumer = (expr: SyntaxNode, value: SyntaxNode) => {
          const call = consumer(expr);
          if (call) report(call, calleePath(call.childForFieldName('function')) === 'print' ? 'print' : 'log', value, true);
          else report(expr, 'format', value, false);
        };

        for (const d of m.d2h) {
          if (d.kind === 'print') report(d.node, 'print', d.target, true);
          else if (d.kind === 'str') {
            // `str(d_x)` / `repr(d_x)` / an f-string interpolation: attribute it to the print or log call that shows it.
            viaConsumer(d.node.type === 'interpolation' ? (d.node.parent ?? d.node) : d.node, d.target);
          }
        }
        const rows = new Set<number>();
        ctx.source.text.split('\n').forEach((l, i) => /\.(info|warning|warn|error|critical|exception|format)\(/.test(l) && rows.add(i));
        for (const call of rows.size ? ctx.source.root.descendantsOfType('call') : []) {
          if (!rows.has(call.startPosition.row)) continue;
          const fn = call.childForFieldName('function');
          const method = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text ?? '' : '';
          if (!/^(info|warning|warn|error|critical|exception|format)$/.test(method)) continue;
          const p = m.callPath(call);
          const { positional } = pyArgs(call);
          if (LOG_CALL.test(p ?? '')) {
            // `logger.info("n=%s", d_x)`: the handler formats the array whenever the level is enabled.
            const dev = positional.slice(1).find((a) => m.isDevice(a)) ?? (positional[0] && m.isDevice(positional[0]) ? positional[0] : undefined);
            if (dev) report(call, 'log', dev, true);
            continue;
          }
          // `"{}".format(d_x)`
          if (fn?.type === 'attribute' && method === 'format' && unparen(fn.childForFieldName('object'))?.type === 'string') {
            const dev = [...positional, ...pyArgs(call).keywords.values()].find((a) => m.isDevice(a));
            if (dev) viaConsumer(call, dev);
          }
        }
        // `"%d hits" % d_count`
        const pctRows = new Set<number>();
        ctx.source.text.split('\n').forEach((l, i) => /["']\s*%/.test(l) && pctRows.add(i));
        for (const op of pctRows.size ? ctx.source.root.descendantsOfType('binary_operator') : []) {
          if (!pctRows.has(op.startPosition.row) && !pctRows.has(op.endPosition.row)) continue;
          if (op.childForFieldName('operator')?.text !== '%' || unparen(op.childForFieldName('left'))?.type !== 'string') continue;
          const right = unparen(op.childForFieldName('right'));
          const dev = right?.type === 'tuple' ? right.namedChildren.find((c) => m.isDevice(c)) : right && m.isDevice(right) ? right : undefined;
          if (dev) viaConsumer(op, dev);
        }
      },
    };
  },
});

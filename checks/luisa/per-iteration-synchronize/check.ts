import { functionName } from '../../../src/analysis/flow.js';
import { luisaModel } from '../../../src/analysis/luisa.js';
import { contains, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Loops and functions that serve an interactive, latency-sensitive path (000 §8.3). */
const INTERACTIVE = /should_close|window|interactive|latency|imgui|gui|pick|hover|cursor|mouse/i;
const SINK = /^(LUISA_\w+|printf|fprintf|print|puts|write\w*|save\w*|dump\w*|store\w*|emit\w*|log\w*|record\w*|stbi_write\w*|push_back|emplace_back|append)$/;
const NOT_BUFFER = new Set(['luisa', 'std', 'span', 'data', 'get', 'size', 'begin', 'this']);

/** The host container a `copy_to(...)` writes into: `host` in `host.data()`, `luisa::span{*out}`, `&x`. */
export function hostTarget(arg: SyntaxNode | null | undefined): string | null {
  let a = unparen(arg ?? null);
  for (let guard = 0; a && guard < 8; guard++) {
    switch (a.type) {
      case 'identifier':
        return NOT_BUFFER.has(a.text) ? null : a.text;
      case 'field_expression': {
        // `host.data()` is handled at the call; `this->h_out` / `state.h_out` name the member.
        return a.childForFieldName('field')?.text ?? null;
      }
      case 'pointer_expression':
      case 'parenthesized_expression':
        a = unparen(a.namedChildren[a.namedChildren.length - 1] ?? null);
        continue;
      case 'subscript_expression':
        a = a.childForFieldName('argument');
        continue;
      case 'call_expression': {
        const fn = a.childForFieldName('function');
        if (fn?.type === 'field_expression' && /^(data|get|begin)$/.test(fn.childForFieldName('field')?.text ?? '')) {
          a = fn.childForFieldName('argument');
          continue;
        }
        a = a.childForFieldName('arguments')?.namedChildren[0] ?? null;
        continue;
      }
      case 'compound_literal_expression':
        a = a.childForFieldName('value')?.namedChildren[0] ?? null;
        continue;
      default:
        return null;
    }
  }
  return null;
}

function identifiersIn(n: SyntaxNode, skip?: (x: SyntaxNode) => boolean): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const stack = [n];
  while (stack.length) {
    const c = stack.pop()!;
    if (skip?.(c)) continue;
    if (c.type === 'identifier') out.push(c);
    else if (c.type === 'lambda_expression' && c.id !== n.id) continue;
    for (const k of c.namedChildren) stack.push(k);
  }
  return out;
}

export default defineCheck({
  id: 'luisa/per-iteration-synchronize',
  pass: 2,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §8.8.2 Avoiding synchronize() Stalls; 000 §8.8.3 The Pipelined Iteration Pattern; 000 §8.8.6 Key Rules 1 and 4',
  summary: 'synchronize() in every loop iteration only to process downloaded results on the host.',
  why: 'Each per-iteration synchronize() stalls the host until the GPU drains; moving the result handling into cmdlist.add_callback() lets iteration N+1 run on the GPU while N is processed, saving one synchronize() stall × (N−1) iterations (000 §8.8.3).',
  messages: {
    perIteration:
      '`{{code}}` synchronizes every iteration only so the host can process `{{host}}`; synchronize() every iteration stalls the host: use `cmdlist.add_callback([{{host}} = …]() noexcept { … })` for per-iteration result handling and synchronize once after the loop.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const syncs: SyntaxNode[] = [];
        for (const s of m.submissions) if (s.targetKind === 'stream' && s.synchronizes) syncs.push(s.stmt);
        for (const c of m.callsNamed('synchronize')) {
          if (!c.receiver || c.args.length || !/stream/i.test(c.receiver.text)) continue;
          if (c.node.parent?.type === 'expression_statement') syncs.push(c.node.parent);
        }
        if (!syncs.length) return;
        const copyTo = m.callsNamed('copy_to');
        const reported = new Set<number>();
        for (const stmt of syncs) {
          if (reported.has(stmt.id) || m.inDeviceCode(stmt) || m.cuda.debugGated(stmt)) continue;
          const loop = m.hostLoopOf(stmt);
          if (!loop) continue;
          const body = loop.childForFieldName('body');
          if (!body) continue;
          const fn = m.cuda.functionOf(stmt);
          const header = loop.text.slice(0, body.startIndex - loop.startIndex);
          if (INTERACTIVE.test(header) || (fn && INTERACTIVE.test(functionName(fn.node)))) continue;

          // Downloads recorded in this iteration up to the sync: the host buffers it waits for.
          const downloads = copyTo.filter((c) => contains(body, c.node) && c.node.startIndex <= stmt.endIndex);
          const hosts = new Set<string>();
          for (const d of downloads) {
            const h = hostTarget(d.args[0]);
            if (h) hosts.add(h);
          }
          if (!hosts.size) continue;
          const inCopyTo = (x: SyntaxNode): boolean => downloads.some((d) => d.node.childForFieldName('arguments')?.id === x.id);

          // After the sync the iteration must actually consume a downloaded buffer on the host.
          const after = identifiersIn(body).filter((i) => i.startIndex >= stmt.endIndex && hosts.has(i.text));
          if (!after.length) continue;

          // True dependency (do-not-flag): host results feed the next iteration's uploads, dispatch
          // arguments, or the loop's exit. Derived values are followed through assignments and calls.
          const tainted = new Set(hosts);
          // The loop counter advances on its own; a sink call taking it does not make it a result.
          const induction = new Set(loop.type === 'for_statement' ? identifiersIn(loop.childForFieldName('initializer') ?? loop).map((i) => i.text) : []);
          const defs = body.descendantsOfType(['init_declarator', 'assignment_expression', 'call_expression']);
          for (let round = 0; round < 3; round++) {
            for (const d of defs) {
              if (d.type === 'call_expression') {
                if (/^(copy_to|dispatch)$/.test(d.childForFieldName('function')?.childForFieldName?.('field')?.text ?? '')) continue;
                const args = d.childForFieldName('arguments')?.namedChildren ?? [];
                if (!args.some((a) => identifiersIn(a).some((i) => tainted.has(i.text)))) continue;
                const fe0 = d.childForFieldName('function');
                const callee = (fe0?.type === 'field_expression' ? fe0.childForFieldName('field') : fe0)?.text ?? '';
                // Output sinks (`write_frame(host, i)`, `LUISA_INFO(...)`) read their arguments only.
                if (SINK.test(callee)) continue;
                // `update(params, host)` / `params.update(host)` may write any argument or the receiver.
                for (const a of args) for (const i of identifiersIn(a)) if (!induction.has(i.text)) tainted.add(i.text);
                const fe = d.childForFieldName('function');
                if (fe?.type === 'field_expression') for (const i of identifiersIn(fe.childForFieldName('argument')!)) tainted.add(i.text);
                continue;
              }
              const lhs = d.type === 'init_declarator' ? d.childForFieldName('declarator') : d.childForFieldName('left');
              const rhs = d.type === 'init_declarator' ? d.childForFieldName('value') : d.childForFieldName('right');
              if (!lhs || !rhs || !identifiersIn(rhs).some((i) => tainted.has(i.text))) continue;
              for (const i of identifiersIn(lhs)) tainted.add(i.text);
            }
          }
          const uses = (n: SyntaxNode | null | undefined): boolean => !!n && identifiersIn(n, inCopyTo).some((i) => tainted.has(i.text));
          if (uses(loop.childForFieldName('condition'))) continue;
          const feedsGpu = m.submissions.some((s) => contains(body, s.stmt) && s.operands.some((o) => uses(o)))
            || m.callsNamed(/^(copy_from|dispatch)$/).some((c) => contains(body, c.node) && (uses(c.node.childForFieldName('arguments')) || uses(c.receiver)));
          if (feedsGpu) continue;
          const exits = body.descendantsOfType(['break_statement', 'return_statement']).some((e) => {
            for (let p = e.parent; p && p.id !== body.id; p = p.parent) if (p.type === 'if_statement' && uses(p.childForFieldName('condition'))) return true;
            return false;
          });
          if (exits) continue;

          reported.add(stmt.id);
          ctx.report({
            node: stmt,
            messageId: 'perIteration',
            data: { code: quote(stmt), host: [...hosts][0] },
            fix: { description: 'Keep the host buffer alive with a shared_ptr, move the processing into `cl.add_callback([buf, i]() noexcept { … });`, submit with `stream << cl.commit();` (no synchronize), and add one `stream << synchronize();` after the loop.' },
          });
        }
      },
    };
  },
});

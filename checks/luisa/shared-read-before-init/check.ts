import { luisaModel, type SharedAccess } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Atomic operations that read the slot's old value (`exchange` overwrites it, so it initializes). */
const RMW = /^(fetch_\w+|compare_exchange)$/;

export default defineCheck({
  id: 'luisa/shared-read-before-init',
  pass: 5,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §0 Zero-initialization note (zero-init applies to locals "excluding shared arrays Shared<T>"); 000 §4.3 Block-Local Atomic Privatization (init pattern: thread 0 writes, then sync_block()); 000 §4.7 rule 2',
  summary: 'Shared<T> slot read or atomically updated before any thread initialized it.',
  why: 'Shared<T> is the one kind of DSL storage that is not zero-initialized, so its first read returns whatever the previous group left in on-chip memory; the guide initializes it (thread 0 writes, then sync_block()) before the first atomic (000 §0, §4.3).',
  messages: {
    uninit: '`{{code}}`: Shared<T> slot is read or atomically updated before any thread initializes it; shared arrays are not zero-initialized. Fill `{{name}}` first: `$if (thread_x() < {{n}}) { {{name}}[thread_x()] = {{identity}}; }; sync_block();`.',
    unsynced: '`{{code}}`: Shared<T> slot is read or atomically updated before any thread initializes it; shared arrays are not zero-initialized. `{{init}}` initializes it, but without a `sync_block()` in between other warps may update the slot before that write lands.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const s of m.shared) {
          if (!s.body || !s.name) continue;
          const name = s.name;
          const body = s.body.body;
          const acc = m.sharedAccesses(s).filter((a) => a.node.startIndex > s.node.endIndex);
          if (!acc.length) continue;
          // Filled by async_copy (commit/wait/barrier), or handed to a helper that may fill it.
          const escaped = bareUses(body, name, s.node).filter((u) => u.startIndex < acc[0].node.startIndex || insideAsyncCopy(u));
          if (escaped.length) continue;
          if (m.callsIn(body, 'async_copy').some((c) => c.args.some((a) => mentions(a, name)))) continue;
          const first = acc[0];
          const firstIsRead = first.kind === 'read' || (first.kind === 'atomic' && RMW.test(first.atomicOp ?? ''));
          if (firstIsRead) {
            const identity = first.kind === 'atomic' && /fetch_min/.test(first.atomicOp ?? '') ? 'max value' : first.kind === 'atomic' && /fetch_max/.test(first.atomicOp ?? '') ? 'lowest value' : first.kind === 'atomic' && /fetch_and/.test(first.atomicOp ?? '') ? '~0u' : /float|half|double/.test(s.elemType) ? '0.f' : '0u';
            const node = first.kind === 'atomic' ? opCall(first) : first.node;
            ctx.report({
              node,
              messageId: 'uninit',
              data: { code: quote(node), name, n: s.countNode?.text ?? 'N', identity },
              fix: { description: `Initialize every slot of \`${name}\` before the first use (each thread writes its slot, or thread 0 writes a single counter), then \`sync_block();\`.` },
            });
            continue;
          }
          // The first write initializes: the first read-modify-write atomic after it needs a barrier
          // in between unless it touches the writing thread's own slot.
          const syncs = m.callsIn(body, 'sync_block').map((c) => c.node.startIndex);
          const atomic = acc.find((a) => a.kind === 'atomic' && RMW.test(a.atomicOp ?? ''));
          if (!atomic) continue;
          const writes = acc.filter((a) => a.kind === 'write' && a.node.startIndex < atomic.node.startIndex);
          if (!writes.length || writes.some((w) => syncs.some((p) => p > w.node.endIndex && p < atomic.node.startIndex))) continue;
          const w = writes[writes.length - 1];
          const wk = m.indexKey(w.index);
          const lane = m.laneDependent(w.index);
          const divergent = m.deviceBranchesAround(w.node).some((b) => m.laneDependent(b.condition));
          if (lane && !divergent && wk === m.indexKey(atomic.index)) continue;
          const node = opCall(atomic);
          ctx.report({
            node,
            messageId: 'unsynced',
            data: { code: quote(node), init: quote(stmtOf(w.node)) },
            fix: { description: 'Insert `sync_block();` after the initialization so every warp sees the initialized slots before the first atomic.' },
          });
        }
      },
    };
  },
});

function opCall(a: SharedAccess): SyntaxNode {
  const p = a.node.parent;
  return p?.type === 'field_expression' && p.parent?.type === 'call_expression' ? p.parent : a.node;
}

function stmtOf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && cur.type !== 'expression_statement' && cur.type !== 'declaration') cur = cur.parent;
  return cur;
}

function mentions(n: SyntaxNode, name: string): boolean {
  return n.descendantsOfType('identifier').some((i) => i.text === name);
}

function insideAsyncCopy(n: SyntaxNode): boolean {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'call_expression' && /async_copy$/.test(p.childForFieldName('function')?.text ?? '')) return true;
    if (p.type === 'expression_statement' || p.type === 'compound_statement') return false;
  }
  return false;
}

/** Uses of the array's name other than `s[i]`, `s.read/write/atomic/size(...)`: passed or aliased. */
function bareUses(body: SyntaxNode, name: string, decl: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (const id of body.descendantsOfType('identifier')) {
    if (id.text !== name || (id.startIndex >= decl.startIndex && id.endIndex <= decl.endIndex)) continue;
    let cur: SyntaxNode = id;
    while (cur.parent && (cur.parent.type === 'parenthesized_expression' || (cur.parent.type === 'pointer_expression' && cur.parent.child(0)?.type === '*'))) cur = cur.parent;
    const p = cur.parent;
    if (p?.type === 'subscript_expression' && p.childForFieldName('argument')?.id === cur.id) continue;
    if (p?.type === 'field_expression' && p.childForFieldName('argument')?.id === cur.id) continue;
    out.push(id);
  }
  return out;
}

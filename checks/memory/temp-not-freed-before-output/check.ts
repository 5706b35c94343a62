import { hostFunctionOf, pyStatement, unconditionalWithin } from '../../../src/analysis/flow.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { contains, lastName, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { POOL } from '../../../src/config/costs.js';

// CuPy returns views for these: the "temporary" shares another array's memory, releasing it frees nothing.
const NO_ALLOC_METHODS = /^(view|reshape|ravel|transpose|swapaxes|squeeze|get|item|tolist|tobytes)$/;
const STORE_METHODS = /^(append|extend|insert|add|put|put_nowait|appendleft|setdefault|update|push|submit)$/;

/**
 * A use that makes another reference to the array (bound to a name or attribute, including views, stored in
 * a container, returned, yielded): the buffer then outlives its name, and `del T` would not release it.
 */
function escapes(use: SyntaxNode): boolean {
  let cur = use;
  let p = use.parent;
  while (p && (['parenthesized_expression', 'tuple', 'list', 'expression_list', 'pair', 'dictionary', 'set'].includes(p.type) || (p.type === 'subscript' && p.childForFieldName('value')?.id === cur.id))) {
    cur = p;
    p = p.parent;
  }
  if (!p) return false;
  if (p.type === 'assignment') return p.childForFieldName('right')?.id === cur.id;
  if (p.type === 'return_statement' || p.type === 'yield' || p.type === 'named_expression' || p.type === 'lambda') return true;
  if (p.type === 'argument_list') {
    const fn = p.parent?.childForFieldName('function');
    if (fn?.type === 'attribute' && STORE_METHODS.test(fn.childForFieldName('attribute')?.text ?? '')) return true;
    // `cp.asarray(d)` / `cp.ascontiguousarray(d)` return `d` itself when it is already a (contiguous) device array.
    return /(^|\.)(asarray|ascontiguousarray|asfortranarray|atleast_[123]d)$/.test(fn?.text ?? '');
  }
  return false;
}

/** The value allocates a new device buffer from the pool (not a view, not a 0-d reduction, not a raw pointer). */
function allocates(ctx: CheckContext, m: PyModel, value: SyntaxNode): boolean {
  const v = unparen(value);
  if (!v || !m.isDevice(v)) return false;
  if (v.type === 'binary_operator' || v.type === 'comparison_operator') return true;
  if (v.type !== 'call') return false;
  const fn = v.childForFieldName('function');
  if (fn?.type === 'attribute' && NO_ALLOC_METHODS.test(fn.childForFieldName('attribute')?.text ?? '')) return false;
  return !ctx.config.vocab.scalar_reduction_calls.includes(lastName(m.callPath(v)) ?? '');
}

const isTarget = (id: SyntaxNode) => {
  const p = id.parent;
  if ((p?.type === 'assignment' || p?.type === 'augmented_assignment') && p.childForFieldName('left')?.id === id.id) return p.type === 'assignment';
  return (p?.type === 'pattern_list' || p?.type === 'tuple_pattern') && p.parent?.type === 'assignment' && p.parent.childForFieldName('left')?.id === p.id;
};
const isDel = (id: SyntaxNode) => id.parent?.type === 'delete_statement' || (id.parent?.type === 'expression_list' && id.parent.parent?.type === 'delete_statement');
/** Attribute names and keyword names are not references to the local. */
const isReference = (id: SyntaxNode) => {
  const p = id.parent;
  if (p?.type === 'attribute' && p.childForFieldName('attribute')?.id === id.id) return false;
  if (p?.type === 'keyword_argument' && p.childForFieldName('name')?.id === id.id) return false;
  return true;
};

/** Names a function returns: identifiers in its `return` expressions (not callees, attributes or keywords). */
function returnedNames(m: PyModel, fn: SyntaxNode): Set<string> {
  const out = new Set<string>();
  for (const r of fn.descendantsOfType('return_statement')) {
    if (m.scopeOf(r).id !== fn.id) continue;
    for (const id of r.descendantsOfType('identifier')) {
      const p = id.parent;
      if (p?.type === 'call' && p.childForFieldName('function')?.id === id.id) continue;
      if (isReference(id)) out.add(id.text);
    }
  }
  return out;
}

function lca(a: SyntaxNode, b: SyntaxNode): SyntaxNode | null {
  for (let p: SyntaxNode | null = a; p; p = p.parent) if (contains(p, b)) return p;
  return null;
}

interface Temp {
  name: string;
  lastUse: SyntaxNode;
}

function tempsAt(ctx: CheckContext, m: PyModel, fn: SyntaxNode, out: SyntaxNode, outName: string, index: Map<string, SyntaxNode[]>, excluded: Set<string>): Temp[] {
  const temps: Temp[] = [];
  for (const [name, binds] of m.assignmentsIn(fn)) {
    if (name.includes('.') || name === outName || excluded.has(name)) continue;
    let last: { node: SyntaxNode; value: SyntaxNode } | null = null;
    let next: SyntaxNode | null = null;
    for (const b of binds) {
      if (b.node.endIndex <= out.startIndex) last = b;
      else if (!next && b.node.startIndex >= out.endIndex) next = b.node;
    }
    if (!last || last.node.type !== 'assignment' || last.value.type === 'assignment' || !allocates(ctx, m, last.value)) continue;
    const bindStmt = pyStatement(last.node);
    const top = lca(bindStmt, out);
    // `del T` before O must find T bound on every path: the binding runs whenever O does, in the same loop iteration.
    if (!top || !unconditionalWithin(bindStmt, top) || m.loopOf(bindStmt)?.id !== m.loopOf(out)?.id || !m.flowsTo(last.node, out)) continue;
    const occ = (index.get(name) ?? []).filter(isReference);
    // A closure that reads T keeps it alive, and `del T` would break it.
    if (occ.some((id) => hostFunctionOf(id)?.id !== fn.id)) continue;
    const live = occ.filter((id) => id.startIndex >= last!.node.endIndex);
    if (live.some((id) => id.endIndex <= out.startIndex && (isDel(id) || escapes(id)))) continue;
    const cutoff = next?.endIndex ?? Number.MAX_SAFE_INTEGER;
    // T used after O (before it is rebound): it really is needed across the output allocation.
    if (live.some((id) => id.startIndex >= out.startIndex && id.startIndex < cutoff && !isTarget(id) && !isDel(id))) continue;
    const before = live.filter((id) => id.endIndex <= out.startIndex && !isTarget(id));
    if (!before.length) continue;
    temps.push({ name, lastUse: before[before.length - 1] });
  }
  return temps;
}

function insertDel(ctx: CheckContext, fn: SyntaxNode, stmt: SyntaxNode, temps: Temp[]): FixSpec['replace'] | undefined {
  // CuPy returns a freed block to the pool of the *current* stream: if kernels on another stream may still
  // read the temporary, an earlier `del` lets the output reuse it before they finish. Prose only then.
  if (/stream/i.test(fn.text)) return undefined;
  const lines = ctx.linesOf(stmt);
  const indent = lines.slice(0, stmt.startPosition.column);
  if (!/^[ \t]*$/.test(indent) || temps.some((t) => t.lastUse.endPosition.row >= stmt.startPosition.row)) return undefined;
  return { from: stmt, text: `${indent}del ${temps.map((t) => t.name).join(', ')}\n${lines}` };
}

export default defineCheck({
  id: 'memory/temp-not-freed-before-output',
  pass: 5,
  severity: 'low',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['python'],
  citation: '003 §1.6 Fragmentation Avoidance ("Temporary buffers freed before output allocation when possible"; "No interleaving of long-lived and short-lived allocations on same pool")',
  summary: 'A device temporary that is no longer used stays alive across the allocation of the function\'s returned output.',
  why: 'A dead temporary still held when the long-lived output is allocated forces the output around it in the pool, so releasing the temporary later leaves a hole next to a long-lived block (fragmentation; pool sub-allocation stays at about 1 µs (' + POOL + ') only while the pool is unfragmented) (003 §1.1, §1.6).',
  messages: {
    temp: 'Large temporary `{{temps}}` stays alive across the output allocation `{{output}}` although it is not used afterwards; release it first to reduce pool fragmentation.',
    temps: 'Large temporaries {{temps}} stay alive across the output allocation `{{output}}` although they are not used afterwards; release them first to reduce pool fragmentation.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        // Candidate outputs, by function: `name = <allocation>` statements.
        const byFn = new Map<number, { fn: SyntaxNode; outs: Array<{ stmt: SyntaxNode; assign: SyntaxNode; name: string }> }>();
        for (const a of m.allocs) {
          const assign = a.parent;
          if (assign?.type !== 'assignment' || assign.childForFieldName('right')?.id !== a.id || assign.parent?.type !== 'expression_statement') continue;
          const left = assign.childForFieldName('left');
          if (left?.type !== 'identifier' || !m.isDevice(a)) continue;
          const fn = m.scopeOf(a);
          if (fn.type !== 'function_definition' || m.debugGated(a) || m.inCpuFallback(a)) continue;
          const entry = byFn.get(fn.id) ?? { fn, outs: [] };
          entry.outs.push({ stmt: assign.parent, assign, name: left.text });
          byFn.set(fn.id, entry);
        }
        for (const { fn, outs } of byFn.values()) {
          const returned = returnedNames(m, fn);
          const outputs = outs.filter((o) => returned.has(o.name)).sort((a, b) => a.stmt.startIndex - b.stmt.startIndex);
          if (!outputs.length) continue;
          // Parameters belong to the caller; globals and nonlocals outlive the call; returned names are outputs.
          const excluded = new Set(returned);
          for (const p of fn.childForFieldName('parameters')?.descendantsOfType('identifier') ?? []) excluded.add(p.text);
          for (const g of fn.descendantsOfType(['global_statement', 'nonlocal_statement'])) for (const id of g.namedChildren) excluded.add(id.text);
          const index = new Map<string, SyntaxNode[]>();
          for (const id of fn.childForFieldName('body')?.descendantsOfType('identifier') ?? []) {
            const list = index.get(id.text) ?? [];
            list.push(id);
            index.set(id.text, list);
          }
          for (const o of outputs) {
            const temps = tempsAt(ctx, m, fn, o.stmt, o.name, index, excluded);
            if (!temps.length) continue;
            // A temporary is reported at the first output it outlives.
            for (const t of temps) excluded.add(t.name);
            const names = temps.map((t) => t.name);
            ctx.report({
              node: o.assign,
              messageId: temps.length === 1 ? 'temp' : 'temps',
              data: { temps: temps.length === 1 ? names[0] : names.map((n) => `\`${n}\``).join(', '), output: quote(o.assign) },
              fix: { description: `Insert \`del ${names.join(', ')}\` before allocating \`${o.name}\`.`, replace: insertDel(ctx, fn, o.stmt, temps) },
            });
          }
        }
      },
    };
  },
});

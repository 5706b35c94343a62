import type { SyntaxNode } from '../core/types.js';

/**
 * Dotted path of a callee: `cp.cuda.runtime.malloc`, `cp.cuda.Device.synchronize` for
 * `cp.cuda.Device(0).synchronize`, `cub::DeviceReduce::Sum`, `stream.synchronize`. Calls inside the
 * chain are dropped (their arguments do not name the API); anything else yields null.
 */
const calleeMemo = new WeakMap<object, Map<number, string | null>>();

export function calleePath(n: SyntaxNode | null | undefined): string | null {
  if (!n) return null;
  // Every check asks for the callee of the same calls: compute each once per tree.
  let memo = calleeMemo.get(n.tree);
  if (!memo) calleeMemo.set(n.tree, (memo = new Map()));
  const id = n.id;
  const hit = memo.get(id);
  if (hit !== undefined) return hit;
  const r = computeCalleePath(n);
  memo.set(id, r);
  return r;
}

function computeCalleePath(n: SyntaxNode): string | null {
  switch (n.type) {
    case 'identifier':
    case 'field_identifier':
    case 'namespace_identifier':
    case 'type_identifier':
      return n.text;
    case 'attribute': {
      const o = calleePath(n.childForFieldName('object'));
      const a = n.childForFieldName('attribute')?.text;
      return o && a ? `${o}.${a}` : null;
    }
    case 'call': {
      return calleePath(n.childForFieldName('function'));
    }
    case 'call_expression':
      return calleePath(n.childForFieldName('function'));
    case 'field_expression': {
      const o = calleePath(n.childForFieldName('argument'));
      const f = n.childForFieldName('field')?.text;
      return o && f ? `${o}.${f}` : f ?? null;
    }
    case 'qualified_identifier': {
      const s = n.childForFieldName('scope');
      const name = n.childForFieldName('name');
      const sp = s ? calleePath(s) ?? s.text : '';
      const np = calleePath(name) ?? name?.text ?? '';
      return sp ? `${sp}::${np}` : np;
    }
    case 'template_function':
      return calleePath(n.childForFieldName('name'));
    case 'parenthesized_expression':
      return calleePath(n.namedChildren[0]);
    default:
      return null;
  }
}

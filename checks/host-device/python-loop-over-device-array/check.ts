import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { calleePath, lastName, pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import type { Vocabularies } from '../../../src/config/vocabularies.js';
import { CUPY_READS, LAUNCH } from '../../../src/config/costs.js';

// Python builtins that hand the value to the host: `float(v)` / `print(v)` copy the element out.
const TO_HOST_BUILTINS = new Set(['int', 'float', 'bool', 'complex', 'str', 'repr', 'format', 'print', 'range', 'hash']);
// Builtins that only look at the object itself (`len` of a CuPy array is its shape[0]).
const NEUTRAL_BUILTINS = new Set(['len', 'isinstance', 'type', 'id', 'hasattr', 'getattr', 'callable']);
// Builtins that walk their argument element by element in Python.
const ITERATING_BUILTINS = new Set(['map', 'filter', 'list', 'tuple', 'set', 'frozenset', 'sorted', 'sum', 'min', 'max', 'any', 'all', 'iter']);
const D2H_METHODS = new Set(['get', 'item', 'tolist', 'tobytes']);
const COMPREHENSIONS = ['list_comprehension', 'set_comprehension', 'dictionary_comprehension', 'generator_expression'];

const within = (outer: SyntaxNode, n: SyntaxNode) => outer.startIndex <= n.startIndex && n.endIndex <= outer.endIndex;
const oneLine = (s: string) => {
  const t = s.replace(/\s*\n\s*/g, ' ');
  return t.length > 60 ? t.slice(0, 57) + '...' : t;
};

interface Ctx {
  m: PyModel;
  vocab: Vocabularies;
}

/**
 * Does the value at `start` (a device element: a loop variable or `X[i]`) reach Python code? Iterating
 * or indexing a CuPy array only creates a view; the synchronizing copy happens when the element is
 * converted, compared, branched on, printed, or handed to a non-GPU function.
 */
function reachesHost(c: Ctx, start: SyntaxNode, region: SyntaxNode, depth = 0): boolean {
  const { m, vocab } = c;
  let cur = start;
  let arith = false;
  for (;;) {
    const p = cur.parent;
    if (!p) return false;
    switch (p.type) {
      case 'parenthesized_expression':
      case 'tuple':
      case 'list':
      case 'expression_list':
      case 'keyword_argument':
        cur = p;
        continue;
      case 'subscript':
        if (p.childForFieldName('value')?.id === cur.id) {
          cur = p;
          continue;
        }
        // `d_y[v]`: a device index makes CuPy gather on the device.
        return false;
      case 'slice':
        // `d_x[v:w]` converts the bounds with __index__, one sync per bound.
        return true;
      case 'attribute': {
        const attr = p.childForFieldName('attribute')?.text ?? '';
        if (p.childForFieldName('object')?.id !== cur.id) return false;
        if (vocab.metadata_attributes.includes(attr)) return false;
        const call = p.parent;
        if (call?.type === 'call' && call.childForFieldName('function')?.id === p.id) {
          if (D2H_METHODS.has(attr)) return true;
          // `(labels == v).nonzero()`: the output size depends on the data, so CuPy reads the count back
          // to the host to allocate it, one blocking copy per element.
          if (vocab.data_sized_calls.includes(attr) && m.isDevice(p.childForFieldName('object'))) return true;
          // `v.astype(...)`, `v.sum()`: the result is still a device array.
          arith = false;
          cur = call;
          continue;
        }
        cur = p;
        continue;
      }
      case 'argument_list': {
        const call = p.parent;
        if (!call || call.type !== 'call') return false;
        const fn = call.childForFieldName('function');
        const name = fn?.type === 'identifier' ? fn.text : null;
        if (name && TO_HOST_BUILTINS.has(name)) return true;
        if (name && NEUTRAL_BUILTINS.has(name)) return false;
        if (m.isCall(call, vocab.d2h_calls)) return true;
        if (m.isDevice(call)) {
          // `cp.nonzero(d_lab == v)`, `cp.unique(d_x[d_lab == v])`: a data-sized result, read back to size it.
          if (vocab.data_sized_calls.includes(lastName(m.callPath(call)) ?? '') && !!m.callPath(call)?.includes('.')) return true;
          // `cp.sum(v)`, `np.abs(v)` dispatched to CuPy: the result stays on the device.
          arith = false;
          cur = call;
          continue;
        }
        // A launch, kernel call or CCCL primitive takes the view as a device argument.
        if (m.isGpuOpNode(call) || m.isCall(call, vocab.launch_calls) || m.kernelNames.has(fn?.text ?? '')) return false;
        return true;
      }
      case 'comparison_operator':
        // `v is None`: a Python identity test, the element never leaves the device.
        if (p.children.some((t) => !t.isNamed && /^is/.test(t.type))) return false;
        arith = true;
        cur = p;
        continue;
      case 'binary_operator':
      case 'unary_operator':
      case 'boolean_operator':
      case 'not_operator':
        arith = true;
        cur = p;
        continue;
      case 'conditional_expression':
        if (p.namedChildren[1]?.id === cur.id) return true;
        cur = p;
        continue;
      case 'if_statement':
      case 'elif_clause':
      case 'while_statement':
        return p.childForFieldName('condition')?.id === cur.id;
      case 'if_clause':
      case 'assert_statement':
      case 'interpolation':
        return true;
      case 'augmented_assignment':
        if (p.childForFieldName('right')?.id !== cur.id) return false;
        // `total += v` accumulates on the host; `d_acc += v` stays on the device.
        return !m.isDevice(p.childForFieldName('left'));
      case 'assignment': {
        if (p.childForFieldName('right')?.id !== cur.id) return false;
        const left = p.childForFieldName('left');
        if (!left) return false;
        if (left.type === 'subscript') return !m.isDevice(left.childForFieldName('value'));
        if (left.type === 'pattern_list' || left.type === 'tuple_pattern') return true;
        if (left.type !== 'identifier') return false;
        if (arith) return true;
        if (depth >= 3) return false;
        return m
          .usesOf(left.text, m.scopeOf(p))
          .some((u) => u.startIndex > p.endIndex && within(region, u) && reachesHost(c, u, region, depth + 1));
      }
      default:
        if (COMPREHENSIONS.includes(p.type)) {
          // `[v for v in d_x]` builds a host list of the elements, like list(d_x).
          return p.childForFieldName('body')?.id === cur.id || p.namedChildren[0]?.id === cur.id;
        }
        return false;
    }
  }
}

/** Names bound by a loop target, and the element expression each one holds. */
function elementTargets(left: SyntaxNode, right: SyntaxNode): Array<{ target: SyntaxNode; iterable: SyntaxNode }> {
  const parts = left.type === 'pattern_list' || left.type === 'tuple_pattern' ? left.namedChildren : [left];
  if (right.type === 'call') {
    const fn = right.childForFieldName('function')?.text;
    const args = pyArgs(right).positional;
    if (fn === 'enumerate') return parts.length === 2 && args[0] ? [{ target: parts[1], iterable: args[0] }] : [];
    if (fn === 'reversed') return args[0] ? [{ target: left, iterable: args[0] }] : [];
    if (fn === 'zip') return parts.length === args.length ? parts.map((t, i) => ({ target: t, iterable: args[i] })) : [];
  }
  return [{ target: left, iterable: right }];
}

/** `cp.array_split(d_x, 4)`, `cp.nonzero(m)`: a list/tuple of device arrays, so the loop walks arrays. */
function returnsArraySequence(c: Ctx, iterable: SyntaxNode): boolean {
  const u = unparen(iterable);
  if (u?.type !== 'call') return false;
  const path = calleePath(u.childForFieldName('function'));
  if (!path || !c.vocab.device_modules.some((mod) => path.startsWith(mod + '.'))) return false;
  return c.vocab.device_sequence_calls.includes(lastName(path) ?? '');
}

/** The loop variable is itself an array (a host list of device arrays, or rows used as arrays). */
function elementIsArray(names: string[], uses: SyntaxNode[]): boolean {
  // 003's convention: `d_` names a device *array*; a `d_` loop variable walks a container of arrays.
  if (names.some((n) => /^d_/.test(n))) return true;
  // Nobody asks a 0-d element for its shape: an element used this way is an array of its own.
  return uses.some((u) => {
    const p = u.parent;
    if (p?.type === 'attribute' && p.childForFieldName('object')?.id === u.id) {
      return ['shape', 'size', 'ndim', 'nbytes', 'strides'].includes(p.childForFieldName('attribute')?.text ?? '');
    }
    return p?.type === 'argument_list' && p.parent?.childForFieldName('function')?.text === 'len';
  });
}

export default defineCheck({
  id: 'host-device/python-loop-over-device-array',
  pass: 1,
  severity: 'critical',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation:
    '003 §8.2 Host-Device Ping-Pong (detection rule 2: "Any Python for loop over device array elements"); 003 §9 Pass 1 bullet 3; 004 §H3.6 PyTorch Considerations (no explicit Python loops with per-element conditionals)',
  summary: 'Python loop (or map/list/sum) over the elements of a device array, using each element on the host.',
  why: 'Each element used on the host is its own synchronizing device→host copy, and any arithmetic on it is a separate kernel launch (' + LAUNCH + '; 003 §2.4, §3.5), so a loop over n elements costs n round trips where one vectorised operation costs one (' + CUPY_READS + '; 003 §8.2, CRITICAL).',
  messages: {
    loop: 'Python loop over the elements of a device array (`{{code}}`): every element access is a separate device→host transfer.',
    builtin: '`{{code}}` walks a device array element by element in Python: every element access is a separate device→host transfer.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const c: Ctx = { m, vocab: ctx.config.vocab };
        const skip = (n: SyntaxNode) => m.debugGated(n) || m.inCpuFallback(n);
        const fix = {
          description:
            'Express the per-element logic as one vectorised CuPy expression (`cp.where`, boolean masks, `cp.sum`), a custom NVRTC kernel, or a CCCL primitive; read back only the final result.',
        };
        const reported = new Set<number>();
        const report = (node: SyntaxNode, messageId: 'loop' | 'builtin', code: string) => {
          if (reported.has(node.id)) return;
          reported.add(node.id);
          ctx.report({ node, messageId, data: { code: oneLine(code) }, fix });
        };

        for (const loop of ctx.source.root.descendantsOfType(['for_statement', 'for_in_clause'])) {
          const left = loop.childForFieldName('left');
          const right = unparen(loop.childForFieldName('right'));
          if (!left || !right || skip(loop)) continue;
          const scope = m.scopeOf(loop);
          // Where the loop variable is live: the body of a `for`, the whole comprehension otherwise.
          const region = loop.type === 'for_statement' ? loop.childForFieldName('body') : loop.parent;
          if (!region) continue;
          const header = loop.type === 'for_statement' ? `for ${left.text} in ${right.text}` : loop.text;
          const inRegion = (u: SyntaxNode) => within(region, u) && !within(left, u) && !within(right, u);

          // for v in d_x / for i, v in enumerate(d_x) / [f(v) for v in d_x]
          for (const { target, iterable } of elementTargets(left, right)) {
            if (!m.isDevice(iterable) || returnsArraySequence(c, iterable)) continue;
            const names = (target.type === 'identifier' ? [target] : target.descendantsOfType('identifier')).map((t) => t.text);
            const uses = names.flatMap((n) => m.usesOf(n, scope).filter(inRegion));
            if (elementIsArray(names, uses)) continue;
            if (uses.some((u) => reachesHost(c, u, region))) report(right, 'loop', header);
          }

          // for i in range(len(d_x)) / range(d_x.shape[0]): ... float(d_x[i]) ...
          if (loop.type !== 'for_statement' || left.type !== 'identifier') continue;
          if (right.type !== 'call' || right.childForFieldName('function')?.text !== 'range') continue;
          if (!pyArgs(right).positional.some((a) => boundedByDeviceLength(m, a, loop))) continue;
          const i = left.text;
          const elementReads = region.descendantsOfType('subscript').filter((s) => {
            if (!m.isDevice(s.childForFieldName('value'))) return false;
            const index = s.namedChildren.slice(1);
            if (index.some((x) => x.type === 'slice' || x.descendantsOfType('slice').length)) return false;
            return index.some((x) => (x.type === 'identifier' ? [x] : x.descendantsOfType('identifier')).some((id) => id.text === i));
          });
          if (elementReads.some((s) => !skip(s) && reachesHost(c, s, region))) report(right, 'loop', header);
        }

        // map(f, d_x), list(d_x), sum(d_x), max(d_x) ...
        const shadowed = m.assignmentsIn(ctx.source.root);
        for (const call of ctx.source.root.descendantsOfType('call')) {
          const fn = call.childForFieldName('function');
          if (fn?.type !== 'identifier' || !ITERATING_BUILTINS.has(fn.text) || shadowed.has(fn.text) || skip(call)) continue;
          const args = pyArgs(call).positional;
          // max(a, b) compares two values; only the one-argument form walks an iterable.
          if ((fn.text === 'min' || fn.text === 'max') && args.length !== 1) continue;
          const iterables = fn.text === 'map' ? args.slice(1) : fn.text === 'filter' ? args.slice(1, 2) : args.slice(0, 1);
          if (!iterables.some((a) => m.isDevice(a))) continue;
          report(call, 'builtin', call.text);
        }
      },
    };
  },
});

/** A `range` argument that is (derived from) the length of a device array: `len(d_x)`, `d_x.shape[0]`, `n = d_x.size`. */
function boundedByDeviceLength(m: PyModel, arg: SyntaxNode, loop: SyntaxNode, depth = 0): boolean {
  const nodes = [arg, ...arg.descendantsOfType(['call', 'attribute', 'identifier'])];
  for (const n of nodes) {
    if (n.type === 'call' && n.childForFieldName('function')?.text === 'len') {
      const x = pyArgs(n).positional[0];
      if (x && m.isDevice(x)) return true;
    }
    if (n.type === 'attribute' && ['shape', 'size'].includes(n.childForFieldName('attribute')?.text ?? '')) {
      if (m.isDevice(n.childForFieldName('object'))) return true;
    }
    if (n.type === 'identifier' && depth < 2) {
      const binds = m.assignmentsIn(m.scopeOf(loop)).get(n.text) ?? [];
      const last = binds.filter((b) => b.node.endIndex <= loop.startIndex).pop();
      if (last && last.value.type !== 'assignment' && boundedByDeviceLength(m, last.value, loop, depth + 1)) return true;
    }
  }
  return false;
}

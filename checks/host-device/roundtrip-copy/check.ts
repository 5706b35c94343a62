import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { lastName, pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** D2H kinds that hand back a host copy of the array (not a Python scalar or text). */
const COPY_KINDS = new Set(['get', 'asnumpy', 'copy-to-host', 'tolist']);
/** ndarray methods that change the host buffer in place. */
const MUTATING_METHODS = new Set(['sort', 'fill', 'resize', 'put', 'itemset', 'partition', 'byteswap', 'setfield', 'setflags', '__setitem__', '__iadd__']);
/** numpy functions that write into one of their arguments. */
const NUMPY_MUTATORS = /(^|\.)(copyto|put|place|putmask|put_along_axis|fill_diagonal|shuffle|add\.at|subtract\.at|multiply\.at)$/;
/** Calls that only read their arguments. */
const READ_ONLY_CALLS = /^(print|len|str|repr|isinstance|type|id|hash|format|bool|hex)$|^(log|logger|logging|LOG|_log|_logger|LOGGER)\.|^warnings\.warn$/;
/** Switching the current device between the read and the upload makes it a cross-device copy. */
const DEVICE_SWITCH = /Device\.use$|(^|\.)(setDevice|set_device|select_device|cuCtxSetCurrent|cuCtxPushCurrent|cudaSetDevice)$/;
const VIEW_ATTRIBUTES = new Set(['T', 'real', 'imag', 'flat', 'mT']);
/** numpy methods that return a view of the same host bytes. */
const VIEW_METHODS = new Set(['reshape', 'ravel', 'view', 'squeeze', 'transpose', 'swapaxes']);
const DEVICE_CONTEXT = /\b(Device|device|use_device|set_device)\s*\(/;

const quote = (n: SyntaxNode) => (n.text.length > 60 ? n.text.slice(0, 57) + '...' : n.text).replace(/\s*\n\s*/g, ' ');
const inside = (outer: SyntaxNode, n: SyntaxNode) => outer.startIndex <= n.startIndex && n.endIndex <= outer.endIndex;

function statementOf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && cur.parent.type !== 'block' && cur.parent.type !== 'module') cur = cur.parent;
  return cur;
}

/** `with cp.cuda.Device(1):` blocks around a node, as text. */
function deviceContext(n: SyntaxNode): string {
  const out: string[] = [];
  for (let p = n.parent; p && p.type !== 'function_definition'; p = p.parent) {
    if (p.type === 'with_statement') {
      const clause = p.namedChildren.find((c) => c.type === 'with_clause');
      if (clause && DEVICE_CONTEXT.test(clause.text)) out.push(`${p.id}`);
    }
  }
  return out.join('/');
}

/**
 * The host buffer an upload argument names: `h`, a view of it (`h[:n]`, `h.reshape(-1, 2)`, `h.T`: same
 * bytes, still a round trip), or `h.ctypes.data` (its raw address, for cuda-python memcpy).
 */
function hostBufferName(arg: SyntaxNode): SyntaxNode | null {
  let u = unparen(arg);
  if (u && /\.ctypes\b/.test(u.text)) {
    while (u && (u.type === 'attribute' || u.type === 'call')) u = u.type === 'call' ? u.childForFieldName('function') : u.childForFieldName('object');
    return u?.type === 'identifier' ? u : null;
  }
  while (u && u.type !== 'identifier') {
    if (u.type === 'subscript' && u.childrenForFieldName('subscript').every((i) => i.type === 'slice' || i.type === 'ellipsis')) u = u.childForFieldName('value');
    else if (u.type === 'attribute' && VIEW_ATTRIBUTES.has(u.childForFieldName('attribute')?.text ?? '')) u = u.childForFieldName('object');
    else if (u.type === 'call' && u.childForFieldName('function')?.type === 'attribute' && VIEW_METHODS.has(u.childForFieldName('function')?.childForFieldName('attribute')?.text ?? '')) u = u.childForFieldName('function')?.childForFieldName('object') ?? null;
    else return null;
    u = unparen(u);
  }
  return u;
}

/** Does this use of the host buffer (possibly) change it? Unknown callees count as changes. */
function modifies(m: PyModel, use: SyntaxNode, upload: SyntaxNode): boolean {
  let n = use;
  // Still the buffer itself or a view of it (`h[:, 0]`, `h.T`), rather than a value computed from it (`h.shape[0]`).
  let view = true;
  // `h[0] = …`, `h.flags.x = …`, `h += …`
  while (n.parent && ((n.parent.type === 'subscript' && n.parent.childForFieldName('value')?.id === n.id) || (n.parent.type === 'attribute' && n.parent.childForFieldName('object')?.id === n.id))) {
    n = n.parent;
    if (n.type === 'attribute' && !VIEW_ATTRIBUTES.has(n.childForFieldName('attribute')?.text ?? '')) view = false;
    if (n.type === 'subscript' && !n.childrenForFieldName('subscript').some((i) => i.type === 'slice' || i.type === 'ellipsis')) view = false;
  }
  const par = n.parent;
  if (!par) return false;
  if ((par.type === 'assignment' || par.type === 'augmented_assignment') && par.childForFieldName('left')?.id === n.id) return true;
  if (par.type === 'delete_statement') return true;
  // `alias = h` / `col = h[:, 0]`: a view that may be written through later.
  if (par.type === 'assignment' && par.childForFieldName('right')?.id === n.id) return view;
  if (n.type === 'attribute' && par.type === 'call' && par.childForFieldName('function')?.id === n.id) {
    return MUTATING_METHODS.has(n.childForFieldName('attribute')?.text ?? '');
  }
  let arg: SyntaxNode = n;
  if (par.type === 'keyword_argument') {
    if (par.childForFieldName('name')?.text === 'out') return true;
    arg = par;
  }
  const list = arg.parent;
  if (list?.type !== 'argument_list' || list.parent?.type !== 'call') return false;
  const call = list.parent;
  if (call.id === upload.id || m.isUpload(call)) return false;
  const path = m.callPath(call) ?? '';
  if (READ_ONLY_CALLS.test(path)) return false;
  if (m.isNumpyPath(path)) return NUMPY_MUTATORS.test(path);
  return true;
}

interface Pair {
  /** The device→host copy (a D2H node or an async copy call). */
  read: SyntaxNode;
  /** The device array that was read. */
  array: SyntaxNode;
  upload: SyntaxNode;
  /** The host name in between, when there is one. */
  host?: SyntaxNode;
}

function fixFor(ctx: CheckContext, m: PyModel, p: Pair): FixSpec {
  const path = m.callPath(p.upload) ?? '';
  const name = lastName(path);
  const x = p.array.text;
  const judgment = (description: string): FixSpec => ({ description });
  if (name !== 'from_host') {
    if (m.isCall(p.upload, ctx.config.vocab.memcpy_calls) || /HtoD/.test(path)) {
      return judgment(`Copy device-to-device (\`cudaMemcpyDeviceToDevice\` / \`cuMemcpyDtoD\`) from \`${x}\`, or pass \`${x}\`'s device pointer (\`${x}.data.ptr\`) instead of staging through the host.`);
    }
    if (name === 'set') return judgment(`Copy on the device instead: \`${p.upload.childForFieldName('function')?.childForFieldName('object')?.text ?? 'dst'}[...] = ${x}\`.`);
    return judgment(`Use \`${x}\` directly (cp.asarray of a CuPy array is a no-op), or \`${x}.copy()\` when an independent device buffer is needed.`);
  }
  const pointer = `${path.slice(0, -'from_host'.length)}pointer(${x})`;
  const description = `Pass the device pointer: \`${pointer}\` (zero-copy). The kernel then works on \`${x}\`'s memory directly; use \`${x}.copy()\` if it writes to the buffer and \`${x}\` must stay unchanged.`;

  // Safe only for the exact pair of the catalog: `h = X.get()` / `p = runtime.from_host(h)`.
  const read = m.d2hAt(p.read);
  const args = pyArgs(p.upload);
  const simpleArray = p.array.type === 'identifier' || (p.array.type === 'attribute' && p.array.descendantsOfType(['call', 'subscript']).length === 0);
  const getCall = read?.kind === 'get' && pyArgs(read.node).positional.length === 0 && pyArgs(read.node).keywords.size === 0;
  const assign = p.upload.parent;
  const uploadStmt = statementOf(p.upload);
  const plainUpload =
    args.positional.length === 1 && args.keywords.size === 0 && assign?.type === 'assignment' && unparen(assign.childForFieldName('right'))?.id === p.upload.id && assign.parent?.id === uploadStmt.id;
  const arg = unparen(args.positional[0]);
  const exactArg = p.host ? arg?.type === 'identifier' : arg?.id === p.read.id;
  if (!read || !simpleArray || !getCall || !plainUpload || !exactArg || uploadStmt.startPosition.row !== uploadStmt.endPosition.row) return judgment(description);
  // A `.get()` copies into a C-contiguous host array; a pointer to a strided view would not match it.
  const scope = m.scopeOf(p.upload);
  const bindings = (m.assignmentsIn(scope).get(x) ?? []).filter((a) => a.node.startIndex < p.read.startIndex);
  const last = bindings[bindings.length - 1];
  if (last && /\.T\b|\.transpose\(|\.swapaxes\(|asfortranarray|::|\[\s*:\s*,/.test(last.value.text)) return judgment(description);
  // `runtime.pointer` yields a raw device address, not an array: only a result that is merely handed to
  // kernel launches (the cuda-python interop case of 003 §8.3) can take it unchanged.
  const target = assign.childForFieldName('left');
  if (target?.type !== 'identifier') return judgment(description);
  const launches = m.gpuOps.filter((o) => o.kind === 'launch' || o.kind === 'kernel-call').map((o) => o.node);
  const laterUses = m.usesOf(target.text, scope).filter((u) => u.startIndex > uploadStmt.endIndex);
  if (!laterUses.every((u) => launches.some((c) => inside(c.childForFieldName('arguments') ?? c, u)))) return judgment(description);

  const line = ctx.linesOf(uploadStmt);
  const col0 = uploadStmt.startPosition.column;
  const rewritten = line.slice(0, p.upload.startPosition.column) + pointer + line.slice(p.upload.endPosition.column);
  if (!p.host) return { description, replace: { from: uploadStmt, text: rewritten } };

  const readStmt = statementOf(p.read);
  const h = p.host.text;
  const onlyUse = m.usesOf(h, scope).length === 1 && (m.assignmentsIn(scope).get(h) ?? []).length === 1;
  let next = readStmt.nextNamedSibling;
  while (next && next.type === 'comment' && next.startPosition.row === readStmt.endPosition.row) next = next.nextNamedSibling;
  const between: SyntaxNode[] = [];
  while (next && next.type === 'comment') {
    between.push(next);
    next = next.nextNamedSibling;
  }
  if (!onlyUse || next?.id !== uploadStmt.id || readStmt.startPosition.row !== readStmt.endPosition.row || col0 !== readStmt.startPosition.column) return judgment(description);
  // The now-dead `h = X.get()` still syncs and copies: the suggestion removes it together with the upload,
  // keeping any comment lines in between.
  const middle = ctx.linesOf(readStmt, uploadStmt).split('\n').slice(1, -1);
  return { description, replace: { from: readStmt, to: uploadStmt, text: [...middle, rewritten].join('\n') } };
}

export default defineCheck({
  id: 'host-device/roundtrip-copy',
  pass: 1,
  severity: 'critical',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §8.3 Unnecessary Copies Between CuPy and cuda-python; 003 §8.2 (D→H→D round-trip)',
  summary: 'Device data copied to the host and straight back to the device (use runtime.pointer / zero-copy interop).',
  why: 'The round trip pays two PCIe copies and an implicit sync for data that is already in device memory, while runtime.pointer(), __cuda_array_interface__ or DLPack hand over the same memory with zero copies (003 §8.3), and a D→H→D round trip is the ping-pong 003 §8.2 rates CRITICAL.',
  messages: {
    roundtrip:
      'Device data is copied to the host (`{{source}}`) and straight back to the device (`{{code}}`); pass the device pointer instead (zero-copy).',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const calls = ctx.source.root.descendantsOfType('call');
        const pairs: Pair[] = [];

        for (const upload of calls) {
          if (!m.isUpload(upload)) continue;
          const scope = m.scopeOf(upload);
          const { positional } = pyArgs(upload);
          for (const arg of positional) {
            const u = unparen(arg);
            const direct = u ? m.d2hAt(u) : undefined;
            if (direct) {
              if (COPY_KINDS.has(direct.kind)) pairs.push({ read: direct.node, array: unparen(direct.target) ?? direct.target, upload });
              continue;
            }
            const h = hostBufferName(arg);
            if (!h) continue;
            const binds = (m.assignmentsIn(scope).get(h.text) ?? []).filter((a) => a.node.endIndex <= upload.startIndex);
            const last = binds[binds.length - 1];
            const lastValue = last && last.value.type !== 'assignment' ? unparen(last.value) : null;
            const fromRead = lastValue ? m.d2hAt(lastValue) : undefined;
            // `runtime.copy_device_to_host_async(d_x, stream, h_buf)` and `d_x.get(out=h_buf)` fill an existing
            // (typically pinned) host buffer instead of returning a new one.
            const fills = calls.filter((c) => {
              if (c.endIndex > upload.startIndex || m.scopeOf(c).id !== scope.id || (last && c.startIndex < last.node.endIndex)) return false;
              if (m.isCall(c, vocab.d2h_async_calls)) return pyArgs(c).positional.slice(1).some((a) => hostBufferName(a)?.text === h.text);
              const out = pyArgs(c).keywords.get('out');
              return m.d2hAt(c)?.kind === 'get' && !!out && hostBufferName(out)?.text === h.text;
            });
            const fill = fills[fills.length - 1];
            if (fill) {
              const src = m.d2hAt(fill)?.target ?? pyArgs(fill).positional[0];
              if (src && m.isDevice(src)) pairs.push({ read: fill, array: unparen(src) ?? src, upload, host: h });
            } else if (fromRead && COPY_KINDS.has(fromRead.kind) && last.node.childForFieldName('left')?.type === 'identifier') {
              pairs.push({ read: fromRead.node, array: unparen(fromRead.target) ?? fromRead.target, upload, host: h });
            }
          }
        }

        const reported = new Set<number>();
        for (const p of pairs) {
          if (reported.has(p.read.id) || m.debugGated(p.read) || m.debugGated(p.upload)) continue;
          const scope = m.scopeOf(p.upload);
          if (p.host) {
            // The read must happen on every path to the upload, and the buffer must arrive unchanged.
            const readStmt = statementOf(p.read);
            if (!readStmt.parent || !inside(readStmt.parent, p.upload) || !m.flowsTo(p.read, p.upload)) continue;
            const uses = m.usesOf(p.host.text, scope).filter((u) => u.startIndex > readStmt.endIndex && u.endIndex <= p.upload.startIndex);
            if (uses.some((u) => modifies(m, u, p.upload))) continue;
          }
          // Multi-GPU: staging through the host to reach another device is not a round trip.
          if (deviceContext(p.read) !== deviceContext(p.upload)) continue;
          if (pyArgs(p.upload).keywords.has('device') || pyArgs(p.upload).keywords.has('device_id')) continue;
          const switched = calls.some((c) => c.startIndex > p.read.endIndex && c.endIndex < p.upload.startIndex && m.scopeOf(c).id === scope.id && DEVICE_SWITCH.test(m.callPath(c) ?? ''));
          if (switched) continue;
          reported.add(p.read.id);
          ctx.report({ node: p.read, messageId: 'roundtrip', data: { source: quote(p.read), code: quote(p.upload) }, fix: fixFor(ctx, m, p) });
        }
      },
    };
  },
});

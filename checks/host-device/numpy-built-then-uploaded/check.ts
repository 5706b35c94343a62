import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { ancestor, calleePath, lastName, pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { Vocabularies } from '../../../src/config/vocabularies.js';
import type { FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Catalog: tiny constant tables (length given by a literal ≤ 32) uploaded once at module scope are fine. */
const TINY_TABLE = 32;

const short = (s: string) => {
  const one = s.replace(/\s*\n\s*/g, ' ');
  return one.length > 60 ? one.slice(0, 57) + '...' : one;
};

function intLiteral(n: SyntaxNode | null | undefined): number | null {
  const u = unparen(n);
  if (u?.type === 'integer' && /^\d[\d_]*$/.test(u.text)) return Number(u.text.replace(/_/g, ''));
  return null;
}

/** Element count of a creator call whose size is spelled with integer literals, else null. */
function literalLength(call: SyntaxNode, name: string): number | null {
  const { positional, keywords } = pyArgs(call);
  if (name === 'arange') {
    const v = positional.map(intLiteral);
    if (!v.length || v.some((x) => x === null)) return null;
    const [start, stop, step] = v.length === 1 ? [0, v[0]!, 1] : [v[0]!, v[1]!, v[2] ?? 1];
    return step > 0 ? Math.max(0, Math.ceil((stop - start) / step)) : null;
  }
  if (['zeros', 'ones', 'empty', 'full'].includes(name)) {
    const shape = unparen(positional[0] ?? keywords.get('shape'));
    if (!shape) return null;
    const dims = shape.type === 'tuple' || shape.type === 'list' ? shape.namedChildren.map(intLiteral) : [intLiteral(shape)];
    return dims.some((d) => d === null) ? null : dims.reduce((a, b) => a! * b!, 1);
  }
  if (['linspace', 'logspace', 'geomspace'].includes(name)) {
    const num = positional[2] ?? keywords.get('num');
    return num ? intLiteral(num) : 50;
  }
  if (name === 'eye' || name === 'identity') {
    const n = intLiteral(positional[0]);
    const mm = positional[1] ? intLiteral(positional[1]) : n;
    return n === null || mm === null ? null : n * mm;
  }
  return null;
}

function makeAnalysis(m: PyModel, vocab: Vocabularies) {
  /** `np.<creator>` / `np.<transform>` by the configurable vocabularies. */
  const builderKind = (call: SyntaxNode): 'creator' | 'transform' | null => {
    const p = calleePath(call.childForFieldName('function'));
    if (!m.isNumpyPath(p) || p!.split('.').length !== 2) return null;
    const name = lastName(p) ?? '';
    if (vocab.numpy_array_creators.includes(name)) return 'creator';
    if (vocab.numpy_array_transforms.includes(name)) return 'transform';
    return null;
  };

  const lastAssignment = (name: string, at: SyntaxNode) => {
    const list = m.assignmentsIn(m.scopeOf(at)).get(name) ?? [];
    let last: { node: SyntaxNode; value: SyntaxNode } | undefined;
    for (const a of list) if (a.node.endIndex <= at.startIndex) last = a;
    return last;
  };

  /**
   * Contents made on the host from sizes and constants only: literals, numpy creators, transforms
   * of constructed data, and names bound to those. Parameters, file reads and unknown calls are
   * data that genuinely originates on the host (the upload is unavoidable there).
   */
  const constructed = (e: SyntaxNode | null | undefined, depth = 0): boolean => {
    const u = unparen(e);
    if (!u || depth > 8) return false;
    switch (u.type) {
      case 'integer':
      case 'float':
      case 'true':
      case 'false':
        return true;
      case 'unary_operator':
        return constructed(u.namedChildren[0], depth + 1);
      case 'binary_operator':
        return u.namedChildren.every((c) => constructed(c, depth + 1));
      case 'list':
      case 'tuple':
        return u.namedChildren.length > 0 && u.namedChildren.every((c) => constructed(c, depth + 1));
      case 'identifier': {
        const a = lastAssignment(u.text, u);
        return !!a && a.value.type !== 'assignment' && constructed(a.value, depth + 1);
      }
      case 'call': {
        const kind = builderKind(u);
        if (kind === 'creator') return true;
        if (kind === 'transform') return constructed(pyArgs(u).positional[0], depth + 1);
        return false;
      }
      default:
        return false;
    }
  };

  /** A constructed expression that actually builds an array with numpy (not a bare scalar). */
  const built = (e: SyntaxNode | null | undefined): boolean => {
    const u = unparen(e);
    if (!u || (u.type !== 'call' && u.type !== 'binary_operator')) return false;
    const calls = u.type === 'call' ? [u, ...u.descendantsOfType('call')] : u.descendantsOfType('call');
    return calls.some((c) => builderKind(c) !== null) && constructed(u);
  };

  /** The upload call a use of a host name feeds (`cp.asarray(h)`, `memcpy(..., h.ctypes.data, h.nbytes, HostToDevice)`), else null. */
  const uploadOf = (use: SyntaxNode): SyntaxNode | null => {
    let c = use;
    // `h.ctypes.data`, `h.nbytes`, `h.view(np.float64)`, `h.astype(np.int32)` still carry only `h` to the upload.
    const through = (p: SyntaxNode) =>
      (p.type === 'attribute' && p.childForFieldName('object')?.id === c.id) ||
      (p.type === 'call' && p.childForFieldName('function')?.id === c.id && c.type === 'attribute') ||
      p.type === 'parenthesized_expression';
    while (c.parent && through(c.parent)) c = c.parent;
    const list = c.parent;
    if (list?.type !== 'argument_list' || !list.parent) return null;
    return m.isUpload(list.parent) ? list.parent : null;
  };

  return { builderKind, constructed, built, uploadOf };
}

/** The statement holding `n`, provided it is alone on its single line (nothing but a comment after it). */
function loneStatementLine(ctx: CheckContext, n: SyntaxNode): SyntaxNode | null {
  let s: SyntaxNode | null = n;
  while (s && s.type !== 'expression_statement') s = s.parent;
  if (!s || s.startPosition.row !== s.endPosition.row) return null;
  const line = ctx.linesOf(s).trim();
  if (!line.startsWith(s.text)) return null;
  const rest = line.slice(s.text.length).trim();
  return rest === '' || rest.startsWith('#') ? s : null;
}

export default defineCheck({
  id: 'host-device/numpy-built-then-uploaded',
  pass: 1,
  severity: 'critical',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation: '003 §8.2 Host-Device Ping-Pong ("numpy in GPU dispatch paths = BLOCKING", case 2, precursor data)',
  summary: 'Array built with numpy only to be uploaded to the GPU.',
  why: '003 §8.2 rates precursor arrays built with np.* and then uploaded BLOCKING within its CRITICAL ping-pong pattern: building them with cp.* writes them at the 936–3,350 GB/s device bandwidth of the target GPUs (003 §0) and avoids the H→D transfer entirely.',
  messages: {
    builtThenUploaded: 'Array `{{code}}` built with numpy only to be uploaded to the GPU; build it on the device with cp.* instead.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const a = makeAnalysis(m, vocab);
        const cupy = m.aliasFor('cupy');
        const root = m.source.root;
        const reported = new Set<number>();

        /** A CuPy upload `cp.asarray(x)` / `cp.array(x)` with nothing but the data argument. */
        const plainCupyUpload = (up: SyntaxNode): boolean => {
          const p = calleePath(up.childForFieldName('function'));
          const head = p?.split('.')[0] ?? '';
          const mod = m.moduleOf(head);
          const isCupy = mod !== undefined ? mod === 'cupy' : vocab.device_modules.includes(head);
          const { positional, keywords } = pyArgs(up);
          return isCupy && p!.split('.').length === 2 && vocab.numpy_conversions.includes(lastName(p) ?? '') && positional.length === 1 && keywords.size === 0;
        };
        /** `np.arange(n)` → `cp.arange(n)`: a creator with an identical CuPy counterpart, taking sizes and scalars only. */
        const cupyCreatorText = (np: SyntaxNode): string | null => {
          if (!cupy || np.type !== 'call' || a.builderKind(np) !== 'creator') return null;
          const fn = np.childForFieldName('function')!;
          const name = lastName(calleePath(fn)) ?? '';
          if (!vocab.cupy_same_signature.includes(name) || np.startPosition.row !== np.endPosition.row) return null;
          const { positional, keywords } = pyArgs(np);
          // NumPy-only keywords (`like=`, `device=`) have no CuPy counterpart.
          if (keywords.has('like') || keywords.has('device')) return null;
          // CuPy has no structured dtypes (`dtype=[("x", "f8"), ("y", "f8")]`).
          const spelledOut = (n: SyntaxNode | undefined) => !!n && ['list', 'dictionary', 'list_comprehension'].includes(unparen(n)?.type ?? '');
          if (spelledOut(keywords.get('dtype')) || positional.slice(1).some(spelledOut)) return null;
          // An argument that is itself a host array would reach CuPy as a numpy array.
          const nested = np.descendantsOfType('call').filter((c) => c.id !== np.id);
          if (nested.some((c) => m.isNumpyPath(calleePath(c.childForFieldName('function'))) && !vocab.numpy_metadata_calls.includes(lastName(calleePath(c.childForFieldName('function'))) ?? ''))) return null;
          return `${cupy}.${name}` + np.text.slice(fn.text.length);
        };
        /** The line of `up` with the upload call replaced by `text`. */
        const lineWith = (up: SyntaxNode, text: string): string => {
          const lineStart = m.source.text.lastIndexOf('\n', up.startIndex - 1) + 1;
          const line = ctx.linesOf(up);
          const at = up.startIndex - lineStart;
          return line.slice(0, at) + text + line.slice(at + up.text.length);
        };

        const skip = (n: SyntaxNode) => m.debugGated(n) || m.inCpuFallback(n);
        /** Module-scope tables of ≤ 32 literal elements uploaded once at import time are fine. */
        const tinyModuleTable = (np: SyntaxNode, uploads: SyntaxNode[]) => {
          if (m.scopeOf(np) !== root || uploads.some((u) => m.scopeOf(u) !== root)) return false;
          const u = unparen(np);
          if (u?.type !== 'call' || a.builderKind(u) !== 'creator') return false;
          const len = literalLength(u, lastName(calleePath(u.childForFieldName('function'))) ?? '');
          return len !== null && len <= TINY_TABLE;
        };
        const report = (np: SyntaxNode, fix: FixSpec) => {
          if (reported.has(np.id)) return;
          reported.add(np.id);
          ctx.report({ node: np, messageId: 'builtThenUploaded', data: { code: short(np.text) }, fix });
        };
        const judgment = (np: SyntaxNode, up?: SyntaxNode): FixSpec => {
          const fn = up?.childForFieldName('function');
          if (fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'set') {
            return { description: `Write the values on the device in place (\`${fn.childForFieldName('object')?.text}.fill(...)\`, a slice assignment, or a kernel) instead of uploading a host array into it.` };
          }
          const u = unparen(np);
          const name = u?.type === 'call' ? lastName(calleePath(u.childForFieldName('function'))) : null;
          return {
            description:
              name && u?.type === 'call' && a.builderKind(u) === 'creator' && vocab.cupy_same_signature.includes(name)
                ? `Build it with \`${cupy ?? 'cp'}.${name}(...)\` on the device and drop the upload.`
                : 'Build the array on the device with cp.* (or a custom NVRTC kernel / CCCL primitive) and drop the upload.',
          };
        };

        // (1) A host name bound to a numpy-built array whose only later uses are uploads.
        const scopes = [root, ...root.descendantsOfType('function_definition')];
        for (const scope of scopes) {
          for (const [name, list] of m.assignmentsIn(scope)) {
            if (!/^[A-Za-z_]\w*$/.test(name)) continue;
            list.forEach((asg, i) => {
              const value = unparen(asg.value);
              if (!value || asg.node.type !== 'assignment' || !a.built(value) || skip(value)) return;
              const next = list[i + 1]?.node;
              const uses = m.usesOf(name, scope).filter((u) => {
                const own = m.scopeOf(u);
                if (own.id === scope.id) return u.startIndex >= asg.node.endIndex && !(next && u.startIndex >= next.startIndex);
                // A nested function runs later, wherever it is defined; one that binds the same name locally uses its own variable.
                const params = own.childForFieldName('parameters')?.descendantsOfType('identifier') ?? [];
                return !m.assignmentsIn(own).has(name) && !params.some((p) => p.text === name);
              });
              if (!uses.length) return;
              const uploads = uses.map((u) => a.uploadOf(u));
              if (uploads.some((u) => u === null)) return; // a host use: the data has a life on the host
              const ups = uploads as SyntaxNode[];
              if (tinyModuleTable(value, ups)) return;
              let fix: FixSpec = judgment(value, ups[0]);
              if (scope === root && ups.some((u) => m.scopeOf(u) !== root)) {
                fix = { description: 'This module-level host table is uploaded again on every call: build it on the device once (with cp.*, cached on first use) and reuse the device array.' };
              }
              // Safe: `h = np.arange(n)` directly followed by `... cp.asarray(h) ...` becomes `... cp.arange(n) ...`.
              const cpText = value === unparen(asg.node.childForFieldName('right')) ? cupyCreatorText(value) : null;
              const up = ups[0];
              const use = unparen(pyArgs(up).positional[0]);
              const first = loneStatementLine(ctx, asg.node);
              // The upload's statement must be the next statement of the same block, so merging the two lines keeps the control flow.
              const upStmt = ancestor(up, ['expression_statement', 'return_statement']);
              const adjacent = !!first && !!upStmt && upStmt.parent?.id === first.parent?.id && upStmt.startPosition.row === upStmt.endPosition.row && upStmt.startPosition.row === first.endPosition.row + 1;
              if (cpText && ups.length === 1 && use?.type === 'identifier' && use.text === name && plainCupyUpload(up) && adjacent) {
                fix = { description: `Build it on the device with \`${cpText.slice(0, cpText.indexOf('('))}\` and drop the upload.`, replace: { from: first, to: up, text: lineWith(up, cpText) } };
              }
              report(value, fix);
            });
          }
        }

        // (2) The array is built inline as the upload's argument: `cp.asarray(np.arange(n))`.
        for (const call of root.descendantsOfType('call')) {
          if (!m.isUpload(call)) continue;
          const arg = unparen(pyArgs(call).positional.find((p) => a.built(p)));
          if (!arg || skip(arg) || tinyModuleTable(arg, [call])) continue;
          const cpText = cupyCreatorText(arg);
          const single = call.startPosition.row === call.endPosition.row;
          report(
            arg,
            cpText && single && plainCupyUpload(call)
              ? { description: `Build it on the device with \`${cpText.slice(0, cpText.indexOf('('))}\`; no upload needed.`, replace: { from: call, text: lineWith(call, cpText) } }
              : judgment(arg, call),
          );
        }
      },
    };
  },
});

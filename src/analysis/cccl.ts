import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { memoized } from './python.js';
import { calleePath, matchesVocab, pyArgs, unparen } from './syntax.js';
import { escapeRe as esc } from '../core/regex.js';

/**
 * CCCL reduction determinism (003 §11, CCCL 3.1+): where a file asks for a determinism level, and
 * whether it runs on several GPUs. Shared by the `precision/cccl-*` rules, in Python and CUDA.
 */

export type DeterminismLevel = 'not_guaranteed' | 'run_to_run' | 'gpu_to_gpu';

export interface DeterminismArg {
  /** The node naming the level: the string, attribute or `determinism::x` identifier. */
  node: SyntaxNode;
  level: DeterminismLevel;
  /** Python: the `determinism=` keyword argument holding it, if any. */
  keyword: SyntaxNode | null;
  /** The innermost call whose arguments hold it (Python `call`, C++ `call_expression`), if any. */
  call: SyntaxNode | null;
}

export interface DeviceSelection {
  node: SyntaxNode;
  /** A loop over devices: `for d in range(n_dev)` whose body selects device `d`. */
  loop: SyntaxNode | null;
}

export interface CcclModel {
  determinism: DeterminismArg[];
  /** Calls that enumerate or select among several GPUs (`multi_device_calls`, `cp.cuda.Device(d)` with a non-literal d). */
  deviceSelections: DeviceSelection[];
  multiDevice: boolean;
  /** Reduction calls: `reduce*`, `segmented_reduce`, `cub::DeviceReduce::*`, `cub::DeviceSegmentedReduce::*`. */
  reductions: SyntaxNode[];
}

const LEVEL = /^(?:.*[.:])?(not_guaranteed|run_to_run|gpu_to_gpu)$/i;
// vibeSpatial wraps CCCL reductions (`reduce_sum`, `reduce_into`); cub spells them DeviceReduce::Sum etc.
export const REDUCTION_PATH = /(^|[._:])(reduce\w*|\w*_reduce|DeviceReduce::\w+|DeviceSegmentedReduce::\w+)$/;

function levelOf(text: string): DeterminismLevel | null {
  const m = LEVEL.exec(text.replace(/^['"]|['"]$/g, '').trim());
  return m ? (m[1].toLowerCase() as DeterminismLevel) : null;
}

function enclosingCall(n: SyntaxNode): SyntaxNode | null {
  let p = n.parent;
  while (p && p.type !== 'call' && p.type !== 'call_expression') {
    if (['function_definition', 'block', 'compound_statement', 'module', 'translation_unit'].includes(p.type)) return null;
    p = p.parent;
  }
  return p;
}

function deviceLiteral(arg: SyntaxNode | undefined): boolean {
  const u = unparen(arg ?? null);
  return !u || u.type === 'integer' || u.type === 'number_literal';
}

function build(source: Source, config: ResolvedConfig): CcclModel {
  const root = source.root;
  const py = source.language === 'python';
  const determinism: DeterminismArg[] = [];
  const deviceSelections: DeviceSelection[] = [];
  const reductions: SyntaxNode[] = [];
  const vocab = config.vocab;

  if (py) {
    for (const s of root.descendantsOfType(['string', 'attribute'])) {
      if (s.type === 'attribute' && s.parent?.type === 'attribute') continue;
      const text = s.type === 'string' ? s.text.replace(/^[rbuf]*("""|'''|"|')|("""|'''|"|')$/g, '') : s.text;
      const level = levelOf(text);
      if (!level) continue;
      const kw = s.parent?.type === 'keyword_argument' && s.parent.childForFieldName('value')?.id === s.id ? s.parent : null;
      // A bare string is only a determinism level where it is passed as one: `determinism=` or a `require(...)`-style argument.
      if (s.type === 'string' && !kw && s.parent?.type !== 'argument_list') continue;
      if (kw && !/determinism/i.test(kw.childForFieldName('name')?.text ?? '')) continue;
      determinism.push({ node: s, level, keyword: kw, call: enclosingCall(s) });
    }
    for (const c of root.descendantsOfType('call')) {
      const p = calleePath(c.childForFieldName('function'));
      if (!p) continue;
      if (REDUCTION_PATH.test(p)) reductions.push(c);
      if (matchesVocab(p, vocab.multi_device_calls)) deviceSelections.push({ node: c, loop: null });
      else if (/(^|\.)(cp|cupy)\.cuda\.Device$/.test(p) && !deviceLiteral(pyArgs(c).positional[0])) deviceSelections.push({ node: c, loop: null });
      else if (/(^|\.)(cuda\.Device)\.use$/.test(p)) {
        const inner = c.childForFieldName('function')?.childForFieldName('object');
        if (inner?.type === 'call' && !deviceLiteral(pyArgs(inner).positional[0])) deviceSelections.push({ node: c, loop: null });
      }
    }
  } else {
    for (const q of root.descendantsOfType(['qualified_identifier', 'identifier'])) {
      if (q.parent?.type === 'qualified_identifier') continue;
      if (!/determinism/.test(q.text) && q.type === 'qualified_identifier') continue;
      // A bare `gpu_to_gpu` (after `using namespace ...::determinism`) only counts where it is passed as an argument.
      if (q.type === 'identifier' && (!/^(not_guaranteed|gpu_to_gpu|run_to_run)$/.test(q.text) || q.parent?.type !== 'argument_list')) continue;
      const level = levelOf(q.text);
      if (!level) continue;
      determinism.push({ node: q, level, keyword: null, call: enclosingCall(q) });
    }
    for (const c of root.descendantsOfType('call_expression')) {
      const p = calleePath(c.childForFieldName('function'));
      if (!p) continue;
      if (REDUCTION_PATH.test(p)) reductions.push(c);
      if (matchesVocab(p, vocab.multi_device_calls)) deviceSelections.push({ node: c, loop: null });
    }
  }
  for (const d of deviceSelections) d.loop = deviceLoopOf(d.node, py);
  return { determinism, deviceSelections, multiDevice: deviceSelections.length > 0, reductions };
}

/** The loop enclosing a device selection whose variable picks the device (`for d in ...: with Device(d):`). */
function deviceLoopOf(sel: SyntaxNode, py: boolean): SyntaxNode | null {
  let p = sel.parent;
  const argText = sel.childForFieldName('arguments')?.text ?? '';
  while (p && p.type !== 'function_definition') {
    if (py && p.type === 'for_statement') {
      const left = p.childForFieldName('left');
      const names = left ? left.descendantsOfType('identifier').map((i) => i.text) : [];
      if (names.some((n) => new RegExp(`\\b${esc(n)}\\b`).test(argText))) return p;
    }
    if (!py && p.type === 'for_statement') {
      const init = p.childForFieldName('initializer');
      const names = init ? init.descendantsOfType('identifier').map((i) => i.text) : [];
      if (names.some((n) => new RegExp(`\\b${esc(n)}\\b`).test(argText))) return p;
    }
    p = p.parent;
  }
  return null;
}

const ccclMemo = new WeakMap<Source, { config: ResolvedConfig; value: CcclModel }>();
export const ccclModel: Analysis<CcclModel> = {
  name: 'cccl-determinism',
  compute: (source, config) => memoized(ccclMemo, source, config, build),
};

/** Integer element types (003 §6.3: counting and indexing are exact in any summation order). */
export const INTEGER_TYPE = /^(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|long\s+long|short|char|size_t|ptrdiff_t|u?int(?:8|16|32|64)_t|unsigned|bool)\b/;
export const INTEGER_DTYPE = /\b(?:cp|cupy|np|numpy)\.(?:u?int(?:8|16|32|64)?|intp|bool_?)\b|['"]u?int(?:8|16|32|64)['"]|\bdtype\s*=\s*(?:int|bool)\b/;
/** Names of arrays that hold counts, indices, offsets or flags by convention. */
export const INTEGER_NAME = /(^|_)(counts?|cnt|num|n|idx|index|indices|offsets?|flags?|mask|ids?|hits)(_|$)/i;

/** C++: the declared type text of `name` among a function's parameters and local declarations (and the file's globals). */
export function declaredTypeOf(scope: SyntaxNode, name: string): string | null {
  for (const d of scope.descendantsOfType(['parameter_declaration', 'declaration', 'field_declaration'])) {
    const decl = d.childForFieldName('declarator');
    if (!decl) continue;
    const ids = decl.type === 'identifier' ? [decl] : decl.descendantsOfType(['identifier', 'field_identifier']);
    if (ids.some((i) => i.text === name)) return d.childForFieldName('type')?.text ?? null;
  }
  return null;
}

/** The reduced input of a reduction call: its first argument that is not temp storage, a size or a null pointer. */
export function reductionInput(call: SyntaxNode): SyntaxNode | null {
  const args = call.childForFieldName('arguments')?.namedChildren.filter((a) => a.type !== 'comment' && a.type !== 'keyword_argument') ?? [];
  return args.find((a) => !/temp|tmp|scratch|^nullptr$|^NULL$|^0$|bytes|^stream$/i.test(a.text)) ?? null;
}

/** Base identifier of `d_area[dev]`, `parts.d_x`, `&d_out[0]`. */
export function baseName(n: SyntaxNode | null): string | null {
  let cur = unparen(n);
  while (cur && ['subscript', 'subscript_expression', 'attribute', 'field_expression', 'pointer_expression', 'parenthesized_expression', 'call', 'call_expression'].includes(cur.type)) {
    cur = cur.type === 'call' || cur.type === 'call_expression' ? null : cur.namedChildren[0] ?? null;
  }
  return cur && cur.type === 'identifier' ? cur.text : null;
}

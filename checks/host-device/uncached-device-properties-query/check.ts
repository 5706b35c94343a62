import { cudaModel } from '../../../src/analysis/cuda.js';
import type { CudaFunction, CudaModel } from '../../../src/analysis/cuda.js';
import { onceGuarded } from '../../../src/analysis/once.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { contains, lastName, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const ID = 'host-device/uncached-device-properties-query';
const CPP_QUERY = /^(cudaGetDeviceProperties(_v2)?|hipGetDeviceProperties)$/;
const PY_QUERY = /^(getDeviceProperties|cudaGetDeviceProperties)$/;
/** `cudaDeviceProp` fields that no `cudaDeviceAttr` gives: only the full query returns them. */
const NO_ATTRIBUTE = /^(name|uuid|luid|luidDeviceNodeMask)$/;

/** The variable a `cudaGetDeviceProperties(&props, dev)` fills, or null (a member, an array slot, a pointer held elsewhere). */
function filledLocal(call: SyntaxNode): string | null {
  const a = call.childForFieldName('arguments')?.namedChildren[0];
  if (!a) return null;
  if (a.type === 'pointer_expression' && a.child(0)?.type === '&') {
    const arg = a.childForFieldName('argument');
    return arg?.type === 'identifier' ? arg.text : null;
  }
  return null;
}

/** Is `name` declared in `fn` as a plain (non-static) local `cudaDeviceProp`? */
function plainLocal(fn: CudaFunction, name: string): boolean {
  for (const d of fn.body!.descendantsOfType('declaration')) {
    const declared = d.namedChildren.some((c) => (c.type === 'identifier' && c.text === name) || (c.type === 'init_declarator' && c.childForFieldName('declarator')?.text === name));
    if (!declared) continue;
    if (d.namedChildren.some((c) => c.type === 'storage_class_specifier' && /static|thread_local/.test(c.text))) return false;
    return /DeviceProp/.test(d.childForFieldName('type')?.text ?? '');
  }
  return false;
}

/**
 * A per-call property getter: every use of the filled local reads a field (`props.major`) that an attribute
 * query also gives, at least one read is returned, and the struct is not stored or handed on (a cache).
 */
function attributeGetter(fn: CudaFunction, name: string, call: SyntaxNode): boolean {
  let returned = false;
  for (const id of fn.body!.descendantsOfType('identifier')) {
    if (id.text !== name || contains(call, id)) continue;
    const p = id.parent;
    if (p?.type === 'init_declarator' || p?.type === 'declaration') continue;
    if (p?.type !== 'field_expression' || p.childForFieldName('argument')?.id !== id.id) return false;
    const field = p.childForFieldName('field')?.text ?? '';
    if (NO_ATTRIBUTE.test(field)) return false;
    // Assigned to: the struct is being edited, not read.
    if (p.parent?.type === 'assignment_expression' && p.parent.childForFieldName('left')?.id === p.id) return false;
    for (let up: SyntaxNode | null = p; up && up.id !== fn.body!.id; up = up.parent) if (up.type === 'return_statement') returned = true;
  }
  return returned;
}

function checkCuda(ctx: CheckContext): void {
  const m: CudaModel = ctx.get(cudaModel);
  if (m.testOrBench) return;
  for (const c of m.calls) {
    if (!CPP_QUERY.test(c.name)) continue;
    const fn = m.functionOf(c.node);
    if (!fn || !fn.isHost || !fn.body || fn.name === 'main' || ctx.config.setupFunctions.test(fn.name)) continue;
    if (m.debugGated(c.node) || onceGuarded(c.node)) continue;
    const local = filledLocal(c.node);
    const getter = !!local && plainLocal(fn, local) && attributeGetter(fn, local, c.node);
    const hot = m.hotPath(c.node, { contract: false });
    if (!getter && !hot) continue;
    ctx.report({
      node: c.node,
      messageId: getter ? 'getter' : 'hot',
      data: { call: oneLine(c.node.text), fn: fn.name },
      fix: { description: 'Read the one field with `cudaDeviceGetAttribute(&v, cudaDevAttr..., device)`, or fill a per-device cache of `cudaDeviceProp` once and read from it.' },
    });
  }
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  if (m.testOrBench) return;
  for (const call of ctx.source.root.descendantsOfType('call')) {
    const path = m.callPath(call);
    if (!path || !PY_QUERY.test(lastName(path) ?? '')) continue;
    if (!m.hotPath(call) || m.debugGated(call) || onceGuarded(call)) continue;
    ctx.report({
      node: call,
      messageId: 'hot',
      data: { call: oneLine(call.text), fn: '' },
      fix: { description: 'Query the one value with `cupy.cuda.runtime.deviceGetAttribute(attr, device)` (or `cupy.cuda.Device(d).attributes` once), or cache the properties per device (`functools.cache`, a module-level dict) outside the hot path.' },
    });
  }
}

export default defineCheck({
  id: ID,
  pass: 2,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  status: 'preview',
  citation: 'derived from real fixes (corpus tcnn-07, tcnn-08); measured on an NVIDIA H200 (CuPy getDeviceProperties 1.22 ms per call, deviceGetAttribute 0.15 µs)',
  summary: 'Full device-properties query (cudaGetDeviceProperties / CuPy runtime.getDeviceProperties) on every call of a hot path or of a property getter, where one attribute query or a per-device cache would do.',
  why: '`cudaGetDeviceProperties` fills the whole `cudaDeviceProp` struct, dozens of fields, some of which need driver round trips (clock rates, PCI data, memory sizes): it costs milliseconds, not microseconds (CuPy\'s `runtime.getDeviceProperties` measured 1.22 ms per call on an H200, `runtime.deviceGetAttribute` 0.15 µs, about 8,000× less). A getter that re-queries it for one field (`props.major`, `props.sharedMemPerBlockOptin`), called before every launch, puts that cost on every launch.',
  messages: {
    getter:
      '`{{call}}` fills the whole cudaDeviceProp on every call of `{{fn}}` to read fields that `cudaDeviceGetAttribute` gives in well under a microsecond (the full query takes milliseconds): query the attribute, or cache the properties per device.',
    hot:
      '`{{call}}` queries every device property (about a millisecond per call) on a hot path: query the one attribute you need (`deviceGetAttribute`, ~0.15 µs) or cache the properties per device outside the loop.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'cuda') checkCuda(ctx);
        else if (ctx.source.language === 'python') checkPython(ctx);
      },
    };
  },
});

import { describe, expect, it } from 'vitest';
import { onEveryPath } from '../../src/analysis/flow.js';
import { pythonModel } from '../../src/analysis/python.js';
import { cppHostAccess, pyHostAccess, streamFacts, streamText, type StreamFacts } from '../../src/analysis/streams.js';
import { buildSources } from '../../src/sources/build.js';
import type { Source } from '../../src/sources/types.js';
import type { SyntaxNode } from '../../src/core/types.js';
import { config } from '../helpers.js';

function source(text: string, lang: 'python' | 'cuda'): Source {
  return buildSources(lang === 'python' ? 'pkg/mod.py' : 'src/mod.cu', lang, { text, firstLine: 1, label: 'file', wholeFile: true }, 5000)[0];
}
function facts(text: string, lang: 'python' | 'cuda'): StreamFacts {
  return streamFacts.compute(source(text, lang), config());
}
const line = (n: SyntaxNode) => n.startPosition.row + 1;

describe('stream facts: streams, events, async D2H', () => {
  it('keeps cudaStreamPerThread apart from the legacy default stream', () => {
    expect(streamText({ text: 'cudaStreamPerThread' } as SyntaxNode)).toBe('cudaStreamPerThread');
    expect(streamText({ text: '0' } as SyntaxNode)).toBeNull();
    expect(streamText({ text: 'cudaStreamLegacy' } as SyntaxNode)).toBeNull();
  });

  it('reads the stream argument of C++ async copies at its position (omitted = legacy stream)', () => {
    const f = facts(
      ['void f(float* d, float* h, int n, cudaStream_t s) {', '  cudaMemsetAsync(d, 0, n);', '  cudaMemcpy2DAsync(h, 4, d, 4, 4, n, cudaMemcpyDeviceToHost, s);', '  cuMemcpyDtoHAsync(h, d, n, s);', '}'].join('\n'),
      'cuda',
    );
    expect(f.uses.map((u) => [line(u.node), u.kind, u.stream])).toEqual([
      [2, 'memset', null],
      [3, 'copy', 's'],
      [4, 'copy', 's'],
    ]);
    expect(f.asyncD2H.map((c) => [line(c.node), c.host, c.stream])).toEqual([
      [3, 'h', 's'],
      [4, 'h', 's'],
    ]);
  });

  it('finds Python async D2H copies, their host buffers and streams', () => {
    const f = facts(
      [
        'import cupy as cp',
        'from cuda.bindings import runtime as cudart',
        'def f(d_x, h, stream):',
        '    runtime.copy_device_to_host_async(d_x, stream, h)',
        '    h2 = d_x.get(stream=stream, blocking=False)',
        '    cudart.cudaMemcpyAsync(h.ctypes.data, d_x.data.ptr, 8, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream)',
        '    h3 = d_x.get(stream=stream)',
      ].join('\n'),
      'python',
    );
    expect(f.asyncD2H.map((c) => [line(c.node), c.host, c.stream])).toEqual([
      [4, 'h', 'stream'],
      [5, 'h2', 'stream'],
      [6, 'h', 'stream'],
    ]);
  });

  it('binds `err, s = cudart.cudaStreamCreate()` and `e = s.record()`, and tells event syncs from stream syncs', () => {
    const f = facts(
      [
        'import cupy as cp',
        'from cuda.bindings import runtime as cudart',
        'def f():',
        '    err, s = cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking)',
        '    s2 = cp.cuda.Stream(non_blocking=True)',
        '    e = s2.record()',
        '    e.synchronize()',
        '    s2.wait_event(e)',
        '    with s2:',
        '        ev = cp.cuda.Event()',
        '        ev.record()',
      ].join('\n'),
      'python',
    );
    expect(f.streams.map((d) => [d.name, d.nonBlocking])).toEqual([
      ['s', true],
      ['s2', true],
    ]);
    expect(f.eventRecords.map((r) => [line(r.node), r.event, r.stream])).toEqual([
      [6, 'e', 's2'],
      [11, 'ev', 's2'],
    ]);
    expect(f.syncs.map((s) => [line(s.node), s.scope, s.target])).toEqual([[7, 'event', 'e']]);
  });

  it('records host spin-waits on a stream or event as polls', () => {
    const f = facts(['void f(cudaStream_t s) {', '  while (cudaStreamQuery(s) == cudaErrorNotReady) {}', '  cudaStreamQuery(s);', '}'].join('\n'), 'cuda');
    expect(f.polls.map((p) => [line(p.node), p.scope, p.target])).toEqual([[2, 'stream', 's']]);
  });
});

describe('HOST_READ of a host buffer', () => {
  it('classifies Python uses', () => {
    const s = source(
      ['import numpy as np', 'def f(h, out, pending):', '    a = h[0]', '    h[1] = 2', '    n = h.shape[0]', '    pending.append((1, h))', '    np.sum(h)', '    return h'].join('\n'),
      'python',
    );
    const m = pythonModel.compute(s, config());
    const uses = s.root.descendantsOfType('identifier').filter((i) => i.text === 'h' && i.parent?.type !== 'parameters');
    expect(uses.map((u) => pyHostAccess(u, m, config().vocab))).toEqual(['read', 'write', 'none', 'none', 'read', 'none']);
  });

  it('classifies C++ uses', () => {
    const s = source(['void f(float* h, float* d, cudaStream_t s) {', '  float a = h[0];', '  h[1] = 2.f;', '  cudaMemcpyAsync(d, h, 4, cudaMemcpyHostToDevice, s);', '  printf("%f", *h);', '  if (h) {}', '}'].join('\n'), 'cuda');
    const uses = s.root.descendantsOfType('identifier').filter((i) => i.text === 'h' && i.parent?.type !== 'pointer_declarator');
    expect(uses.map((u) => cppHostAccess(u))).toEqual(['read', 'write', 'device', 'read', 'none']);
  });
});

describe('flow: a sync on every path', () => {
  it('does not count a sync inside an if, counts one in a loop condition and round a loop', () => {
    const s = source(
      [
        'void f(bool c, cudaStream_t s) {',
        '  a();',
        '  if (c) { cudaStreamSynchronize(s); }',
        '  b();',
        '  while (cudaStreamQuery(s) != cudaSuccess) {}',
        '  d();',
        '  for (int i = 0; i < 4; ++i) { e(); cudaStreamSynchronize(s); g(); }',
        '}',
      ].join('\n'),
      'cuda',
    );
    const calls = s.root.descendantsOfType('call_expression');
    const at = (name: string) => calls.find((c) => c.childForFieldName('function')?.text === name)!;
    const syncs = calls.filter((c) => c.childForFieldName('function')?.text === 'cudaStreamSynchronize');
    expect(onEveryPath(syncs[0], at('a'), at('b'))).toBe(false);
    expect(onEveryPath(at('cudaStreamQuery'), at('b'), at('d'))).toBe(true);
    // g() of one iteration, then e() of the next: the sync after e() does not lie between them...
    expect(onEveryPath(syncs[1], at('g'), at('e'))).toBe(false);
    // ...but between e() and g() of the same iteration it does.
    expect(onEveryPath(syncs[1], at('e'), at('g'))).toBe(true);
  });
});

describe('Python model: in-place updates', () => {
  it('counts `d *= k` and `d[m] = v` on device arrays as GPU work, and keeps the array DEVICE after them', () => {
    const s = source(
      ['import cupy as cp', 'class U:', '    def a(self):', '        self.d_stage /= cp.float64(2.0)', '    def b(self, m):', '        cp.clip(self.d_stage, 0, 1)', '        self.d_stage[m] = 0', '        self.d_stage *= 2.0', '        total = 0', '        total += 1'].join('\n'),
      'python',
    );
    const m = pythonModel.compute(s, config());
    expect(m.gpuOps.map((o) => [line(o.node), o.kind])).toEqual([
      [4, 'operator'],
      [6, 'cupy'],
      [7, 'operator'],
      [8, 'operator'],
    ]);
  });
});

/**
 * Shared pieces of the benchmark corpus generator: a seeded PRNG (no Math.random anywhere, so
 * the corpus is byte-identical from run to run) and identifier vocabularies.
 */

/** sfc32: small, fast, good enough statistical quality for generating source text. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number | string) {
    const h = typeof seed === 'number' ? [seed >>> 0, 0x9e3779b9, 0x243f6a88, 0xb7e15162] : hashString(seed);
    this.a = h[0];
    this.b = h[1];
    this.c = h[2];
    this.d = h[3];
    for (let i = 0; i < 15; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)];
  }

  /** Pick by weight: [[weight, value], ...]. */
  weighted<T>(xs: ReadonlyArray<readonly [number, T]>): T {
    const total = xs.reduce((a, [w]) => a + w, 0);
    let r = this.next() * total;
    for (const [w, v] of xs) {
      r -= w;
      if (r < 0) return v;
    }
    return xs[xs.length - 1][1];
  }

  /** k distinct elements. */
  sample<T>(xs: readonly T[], k: number): T[] {
    const copy = [...xs];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy.slice(0, Math.min(k, copy.length));
  }

  pow2(lo: number, hi: number): number {
    return 1 << this.int(lo, hi);
  }

  /** A child generator whose stream does not depend on how much of this one is consumed later. */
  fork(label: string): Rng {
    return new Rng(`${this.u32()}:${label}`);
  }
}

/** 128 bits of a string (cyrb128). */
export function hashString(s: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < s.length; i++) {
    const k = s.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

export const NOUNS = [
  'ring', 'poly', 'segment', 'point', 'edge', 'vertex', 'bbox', 'cell', 'tile', 'morton', 'hilbert', 'feature',
  'geom', 'part', 'hole', 'coord', 'span', 'bucket', 'bin', 'key', 'pair', 'node', 'leaf', 'ray', 'hit', 'voxel',
  'pixel', 'sample', 'photon', 'lane', 'row', 'block', 'chunk', 'batch', 'offset', 'mask', 'flag', 'weight',
  'score', 'dist', 'area', 'centroid', 'winding', 'crossing', 'bound', 'extent', 'grid', 'cluster', 'frontier',
  'triangle', 'quad', 'patch', 'particle', 'neighbor', 'candidate', 'match', 'label', 'component', 'splat',
  'texel', 'histogram', 'prefix', 'run', 'interval', 'envelope', 'polyline', 'multipoint', 'linestring',
];

export const VERBS = [
  'count', 'scatter', 'gather', 'reduce', 'scan', 'compact', 'sort', 'filter', 'transform', 'build', 'refine',
  'classify', 'clip', 'merge', 'split', 'pack', 'unpack', 'accumulate', 'normalize', 'project', 'rasterize',
  'splat', 'label', 'mark', 'select', 'partition', 'encode', 'decode', 'resolve', 'expand', 'dedupe', 'snap',
  'measure', 'traverse', 'intersect', 'fill', 'shade', 'blend', 'integrate', 'relax', 'propagate', 'collect',
  'emit', 'stitch', 'simplify', 'densify', 'orient', 'validate',
];

export const ADJS = [
  'fast', 'fused', 'tiled', 'warp', 'segmented', 'batched', 'strided', 'coalesced', 'packed', 'sparse', 'dense',
  'local', 'global', 'cached', 'lazy', 'staged', 'blocked', 'persistent', 'two_pass', 'single_pass', 'naive',
  'exact', 'approx', 'robust',
];

export const LICENSES = [
  'SPDX-License-Identifier: Apache-2.0',
  'SPDX-License-Identifier: MIT',
  'SPDX-License-Identifier: BSD-3-Clause',
  'Copyright (c) the vibeSpatial authors. All rights reserved.',
  'Part of the spatial kernels library. See LICENSE for terms.',
];

export const COMMENT_PHRASES = [
  'one thread per item; the tail block is masked',
  'offsets come from an exclusive scan of the per-item counts',
  'keep the accumulator in registers until the block reduction',
  'the stride keeps consecutive threads on consecutive addresses',
  'padding the tile by one column avoids shared-memory bank conflicts',
  'results are written back as fp64 regardless of the compute precision',
  'TODO: fuse this with the previous pass once the layout settles',
  'NOTE: the caller guarantees the buffers do not alias',
  'the count pass and the scatter pass must agree on this predicate',
  'degenerate rings (fewer than three vertices) contribute nothing',
  'coordinates are centered before the cast to compute precision',
  'Kahan compensation keeps the fp32 sum within a few ulps',
  'this path is only taken for very small inputs',
  'block size is a multiple of the warp size',
  'early out: nothing to do for empty partitions',
  'see ADR-0002 for the precision dispatch policy',
  'the last partial tile is handled by the guarded loop below',
  'counts are int32; totals above 2^31 are rejected upstream',
  'stream-ordered: no synchronization is needed between these launches',
  'FIXME: this reads back to the host, measure before shipping',
  'mirror of the CPU reference implementation in the tests',
  'bounds were validated on the host before the launch',
  'a warp cooperates on one ring; lanes stride over its edges',
  'winding number: +1 for upward crossings, -1 for downward ones',
];

export function snake(...parts: string[]): string {
  return parts.filter(Boolean).join('_');
}

export function camel(...parts: string[]): string {
  const ps = parts.filter(Boolean).flatMap((p) => p.split('_'));
  return ps.map((p, i) => (i === 0 ? p : p[0].toUpperCase() + p.slice(1))).join('');
}

export function pascal(...parts: string[]): string {
  const c = camel(...parts);
  return c[0].toUpperCase() + c.slice(1);
}

export function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((l) => (l.trim() ? pad + l : l))
    .join('\n');
}

/** Unique names within one file. */
export class Names {
  private used = new Set<string>();
  constructor(private rng: Rng) {}

  unique(make: () => string): string {
    for (let i = 0; i < 8; i++) {
      const n = make();
      if (!this.used.has(n)) {
        this.used.add(n);
        return n;
      }
    }
    let k = 2;
    const base = make();
    while (this.used.has(`${base}${k}`)) k++;
    this.used.add(`${base}${k}`);
    return `${base}${k}`;
  }

  snake(): string {
    const r = this.rng;
    return this.unique(() => (r.chance(0.3) ? snake(r.pick(ADJS), r.pick(VERBS), r.pick(NOUNS)) : snake(r.pick(VERBS), r.pick(NOUNS) + (r.chance(0.4) ? 's' : ''))));
  }

  camel(): string {
    const r = this.rng;
    return this.unique(() => (r.chance(0.3) ? camel(r.pick(ADJS), r.pick(VERBS), r.pick(NOUNS)) : camel(r.pick(VERBS), r.pick(NOUNS) + (r.chance(0.4) ? 's' : ''))));
  }

  pascal(suffix = ''): string {
    const r = this.rng;
    return this.unique(() => pascal(r.pick(NOUNS), r.chance(0.5) ? r.pick(VERBS) : r.pick(ADJS)) + suffix);
  }

  noun(): string {
    return this.rng.pick(NOUNS);
  }
}

export function comment(rng: Rng): string {
  return rng.pick(COMMENT_PHRASES);
}

/** Line builder with indentation, so nested generated code stays well-formed. */
export class Code {
  private lines: string[] = [];
  private depth = 0;
  private chars = 0;
  constructor(private unit = 4) {}

  line(s = ''): this {
    const l = s ? ' '.repeat(this.depth * this.unit) + s : '';
    this.lines.push(l);
    this.chars += l.length + 1;
    return this;
  }

  /** Several lines (a pre-rendered block), each indented to the current depth. */
  raw(text: string): this {
    for (const l of text.replace(/\n+$/, '').split('\n')) this.line(l);
    return this;
  }

  /** `head {` then indent (C-like); `head` then indent (Python, when brace is false). */
  open(head: string, brace = true): this {
    this.line(brace ? (head ? `${head} {` : '{') : head);
    this.depth++;
    return this;
  }

  close(tail = '}'): this {
    this.depth = Math.max(0, this.depth - 1);
    if (tail) this.line(tail);
    return this;
  }

  /** `} else {` style: dedent, emit, indent. */
  mid(s: string): this {
    this.depth = Math.max(0, this.depth - 1);
    this.line(s);
    this.depth++;
    return this;
  }

  get level(): number {
    return this.depth;
  }

  /** Characters so far (the text is ASCII, so also bytes). */
  get length(): number {
    return this.chars;
  }

  toString(): string {
    return this.lines.join('\n') + '\n';
  }
}

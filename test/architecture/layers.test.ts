import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The import layers of docs/architecture.md ("Layers"): every relative import in src/ and checks/
 * (static `import`/`export … from`, `import type`, dynamic `import()` and inline `import('…').T`
 * types alike) must point to the same layer or a lower one, and no two modules may import each
 * other, directly or round a longer loop.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Low → high. A module belongs to the layer of the longest prefix of its path that is listed; a
 * prefix is a folder (ends in /) or one file.
 */
export const LAYERS: ReadonlyArray<{ layer: string; paths: readonly string[] }> = [
  { layer: 'core', paths: ['src/core/'] },
  { layer: 'config', paths: ['src/config/'] },
  { layer: 'diff', paths: ['src/diff/'] },
  { layer: 'sources', paths: ['src/sources/'] },
  { layer: 'engine', paths: ['src/engine/'] },
  { layer: 'analysis', paths: ['src/analysis/'] },
  { layer: 'compile', paths: ['src/compile/'] },
  // The generated registry; src/engine/registry.generated.ts is its alias for the App harness.
  { layer: 'checks', paths: ['checks/', 'src/engine/registry.generated.ts'] },
  { layer: 'rewrite', paths: ['src/rewrite/'] },
  { layer: 'review', paths: ['src/review/'] },
  { layer: 'adopt', paths: ['src/adopt/'] },
  { layer: 'reporters', paths: ['src/reporters/'] },
  { layer: 'github', paths: ['src/github/'] },
  { layer: 'app', paths: ['src/app.ts'] },
  { layer: 'service', paths: ['src/service/'] },
  { layer: 'entry', paths: ['src/cli.ts', 'src/action.ts', 'src/server.ts', 'src/github/main.ts'] },
];

function layerOf(rel: string): { layer: string; rank: number } | null {
  let best: { layer: string; rank: number; len: number } | null = null;
  LAYERS.forEach(({ layer, paths }, rank) => {
    for (const p of paths) {
      const hit = p.endsWith('/') ? rel.startsWith(p) : rel === p;
      if (hit && (!best || p.length > best.len)) best = { layer, rank, len: p.length };
    }
  });
  return best;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return n === 'fixtures' ? [] : tsFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** Every relative import of one file, as repository paths of .ts files. */
function importsOf(file: string): string[] {
  // Comments may name modules (`see ../x.js`); drop them first.
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  return [...text.matchAll(IMPORT)].map((m) => relative(root, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'));
}

const files = [...tsFiles(join(root, 'src')), ...tsFiles(join(root, 'checks'))].map((f) => relative(root, f)).sort();
const graph = new Map(files.map((f) => [f, importsOf(join(root, f))]));

describe('import layers (docs/architecture.md)', () => {
  it('reads a real import graph', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(graph.get('src/review/pipeline.ts')).toContain('src/engine/runner.ts');
  });

  it('every module belongs to a layer', () => {
    expect(files.filter((f) => !layerOf(f))).toEqual([]);
  });

  it('every import resolves to a module of src/ or checks/', () => {
    const known = new Set(files);
    const missing = [...graph].flatMap(([f, deps]) => deps.filter((d) => !known.has(d)).map((d) => `${f} -> ${d}`));
    expect(missing).toEqual([]);
  });

  it('no import from a lower layer to a higher one', () => {
    const upward: string[] = [];
    for (const [f, deps] of graph) {
      const from = layerOf(f)!;
      for (const d of deps) {
        const to = layerOf(d);
        if (to && to.rank > from.rank) upward.push(`${f} (${from.layer}) -> ${d} (${to.layer})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('no import cycle', () => {
    // Tarjan's strongly connected components: any component of more than one module is a cycle.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    let next = 0;
    const visit = (v: string): void => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!graph.has(w)) continue;
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) === index.get(v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(comp.sort());
      }
    };
    for (const f of files) if (!index.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });
});

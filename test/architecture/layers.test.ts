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
  // The project index's data model (plain data, no imports) sits with the core types.
  { layer: 'core', paths: ['src/core/', 'src/index/types.ts'] },
  { layer: 'config', paths: ['src/config/'] },
  { layer: 'sources', paths: ['src/sources/'] },
  // Reading the project index's facts (src/index/): what the models and the runner's messages ask.
  { layer: 'index-facts', paths: ['src/index/lookup.ts', 'src/index/explain.ts', 'src/index/note.ts'] },
  { layer: 'engine', paths: ['src/engine/'] },
  // The diff model is plain data; its filter re-anchors grouped findings with the engine's wording.
  { layer: 'diff', paths: ['src/diff/'] },
  { layer: 'analysis', paths: ['src/analysis/'] },
  { layer: 'compile', paths: ['src/compile/'] },
  // Building the project index: reads files, builds their facts with the shared models.
  { layer: 'index', paths: ['src/index/'] },
  // The generated registry; src/engine/registry.generated.ts is its alias for the App harness.
  { layer: 'checks', paths: ['checks/', 'src/engine/registry.generated.ts'] },
  // One file's review (sources → checks → suppression/precedence → diff filter), which pass 7 re-runs.
  { layer: 'file-review', paths: ['src/review/file.ts'] },
  { layer: 'rewrite', paths: ['src/rewrite/'] },
  { layer: 'review', paths: ['src/review/'] },
  { layer: 'adopt', paths: ['src/adopt/'] },
  { layer: 'reporters', paths: ['src/reporters/'] },
  { layer: 'github', paths: ['src/github/'] },
  { layer: 'app', paths: ['src/app.ts'] },
  { layer: 'service', paths: ['src/service/'] },
  { layer: 'entry', paths: ['src/cli.ts', 'src/action.ts', 'src/server.ts', 'src/github/main.ts'] },
];

/**
 * Upward references that are types only, erased at run time, where a lower layer's data model
 * carries a field a higher layer fills in. Each is named here with its reason; the follow-up is to
 * move those data types down (docs/architecture.md, "Known exceptions"). They count for nothing else.
 */
export const TYPE_ONLY_UPWARD: ReadonlyArray<{ from: string; to: string; why: string }> = [
  { from: 'src/core/types.ts', to: 'src/rewrite/index.ts', why: 'Finding.rewrite: the outcome pass 7 attaches' },
  { from: 'src/core/types.ts', to: 'src/compile/evidence.ts', why: 'ReviewResult.compile: the nvcc report of --compile' },
  { from: 'src/config/schema.ts', to: 'src/compile/evidence.ts', why: 'ResolvedConfig.compileEvidence: compiler figures handed to the checks' },
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

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"](\s*\)\s*\.)?/gm;

/** Every relative import of one file, as repository paths of .ts files; `typeRef`: an inline `import('…').T`. */
function importsOf(file: string): Array<{ to: string; typeRef: boolean }> {
  // Comments may name modules (`see ../x.js`); drop them first.
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  return [...text.matchAll(IMPORT)].map((m) => ({ to: relative(root, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'), typeRef: m[2] !== undefined }));
}

const allowed = (from: string, d: { to: string; typeRef: boolean }) => d.typeRef && TYPE_ONLY_UPWARD.some((a) => a.from === from && a.to === d.to);

const files = [...tsFiles(join(root, 'src')), ...tsFiles(join(root, 'checks'))].map((f) => relative(root, f)).sort();
const imports = new Map(files.map((f) => [f, importsOf(join(root, f))]));
/** The graph the cycle check walks: every import but the listed type-only exceptions. */
const graph = new Map([...imports].map(([f, deps]) => [f, deps.filter((d) => !allowed(f, d)).map((d) => d.to)]));

describe('import layers (docs/architecture.md)', () => {
  it('reads a real import graph', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(graph.get('src/review/file.ts')).toContain('src/engine/runner.ts');
    expect(graph.get('src/review/pipeline.ts')).toContain('src/review/pool.ts');
  });

  it('every module belongs to a layer', () => {
    expect(files.filter((f) => !layerOf(f))).toEqual([]);
  });

  it('every import resolves to a module of src/ or checks/', () => {
    const known = new Set(files);
    const missing = [...imports].flatMap(([f, deps]) => deps.filter((d) => !known.has(d.to)).map((d) => `${f} -> ${d.to}`));
    expect(missing).toEqual([]);
  });

  it('no import from a lower layer to a higher one', () => {
    const upward: string[] = [];
    for (const [f, deps] of imports) {
      const from = layerOf(f)!;
      for (const dep of deps) {
        if (allowed(f, dep)) continue;
        const d = dep.to;
        const to = layerOf(d);
        if (to && to.rank > from.rank) upward.push(`${f} (${from.layer}) -> ${d} (${to.layer})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('each listed exception is still a type-only reference (else the list is stale)', () => {
    for (const a of TYPE_ONLY_UPWARD) expect(imports.get(a.from)?.some((d) => d.to === a.to && d.typeRef), `${a.from} -> ${a.to}`).toBe(true);
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

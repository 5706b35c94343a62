import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FORBIDDEN, familyOf, loadCorpus, summarize, summaryLine, type CleanResult, type RowResult } from '../../corpus/runner.js';

/** The labels are data the whole accuracy claim rests on: they must parse, and stay inside the rules. */
describe('development corpus labels', () => {
  const corpus = loadCorpus();

  it('parse without problems (ids unique, commits 40-hex, rules known or new:<family>/<slug>, halves assigned)', () => {
    expect(corpus.problems).toEqual([]);
  });

  it('name none of the repositories kept for the independent evaluation', () => {
    const repos = [...corpus.real, ...corpus.clean].map((r) => r.repo.toLowerCase());
    for (const f of FORBIDDEN) expect(repos).not.toContain(f);
    // Copies of ggml's CUDA backend live under these names too.
    expect(repos.filter((r) => /llama\.cpp|whisper\.cpp|ggml/.test(r))).toEqual([]);
  });

  it('is split by repository: no repository in both halves, both halves non-empty', () => {
    const halves = new Set(corpus.real.map((r) => corpus.halves.get(r.repo.toLowerCase())));
    expect(halves).toEqual(new Set(['tune', 'check']));
  });

  it('has no judgement for a row or clean file that does not exist', () => {
    const ids = new Set([...corpus.real.map((r) => r.id), ...corpus.clean.map((r) => r.id)]);
    expect(corpus.judgements.filter((j) => !ids.has(j.id))).toEqual([]);
  });
});

describe('corpus runner', () => {
  it('rejects malformed rows and forbidden repositories, naming the row', () => {
    const dir = mkdtempSync(join(tmpdir(), 'corpus-'));
    mkdirSync(join(dir, 'real'));
    mkdirSync(join(dir, 'clean'));
    const sha = 'a'.repeat(40);
    writeFileSync(
      join(dir, 'real', 'x.tsv'),
      [
        'id\trepo\tfix\tparent\tpath\tlines\trule\tnote',
        `a-1\tsome/repo\t${sha}\t${'b'.repeat(40)}\tk.cu\t10-12\tsync/redundant-stream-sync\tok`,
        `a-1\tsome/repo\t${sha}\t${'b'.repeat(40)}\tk.cu\t10\tsync/redundant-stream-sync\tduplicate id`,
        `a-2\tcupy/cupy\t${sha}\t${'b'.repeat(40)}\tk.py\t3\thost-device/get-in-loop\tforbidden`,
        `a-3\tsome/repo\tabc\t${'b'.repeat(40)}\tk.cu\tx\tnot/a-rule\tbad`,
        `a-4\tsome/repo\t${sha}\t${'b'.repeat(40)}\tk.cu\t5\tnew:sync/host-wait\tnew hazard`,
        `a-5\tsome/repo\t${sha}\t${'b'.repeat(40)}\tk.cu\t5\tnew:bogus/thing\tbad family`,
      ].join('\n'),
    );
    writeFileSync(join(dir, 'halves.tsv'), 'repo\thalf\nsome/repo\ttune\n');
    const c = loadCorpus(dir, new Set(['sync/redundant-stream-sync', 'host-device/get-in-loop']));
    expect(c.real.map((r) => r.id)).toEqual(['a-1', 'a-4']);
    expect(c.real[0]).toMatchObject({ start: 10, end: 12, family: 'sync' });
    expect(c.real[1].family).toBe('sync');
    expect(c.problems).toHaveLength(4);
    expect(c.problems[0]).toMatch(/x\.tsv:3: duplicate id a-1/);
    expect(c.problems[1]).toMatch(/cupy\/cupy is kept out/);
    expect(c.problems[2]).toMatch(/fix is not a 40-hex commit.*bad lines "x".*unknown rule "not\/a-rule"/);
    expect(c.problems[3]).toMatch(/bad new rule "new:bogus\/thing"/);
  });

  it('summarises recall, fix-diff findings and clean false positives per 1,000 lines', () => {
    expect(familyOf('new:kernel/x')).toBe('kernel');
    const row = (hitFamily: boolean, hitExact: boolean, fix = 0): RowResult => ({
      id: 'r', repo: 'a/b', half: 'check', rule: 'sync/x', family: 'sync', status: 'ok', hitFamily, hitExact, intro: [],
      fix: Array.from({ length: fix }, () => ({ rule: 'sync/x', line: 1, endLine: 1, severity: 'high', message: '' })),
    });
    const f = (verdict: 'TP' | 'FP' | 'debatable' | 'unjudged') => ({ rule: 'k/x', line: 1, endLine: 1, severity: 'low', message: '', verdict });
    const clean: CleanResult = { id: 'c', repo: 'a/b', half: 'check', path: 'k.cu', lines: 2000, status: 'ok', findings: [f('TP'), f('FP'), f('unjudged'), f('debatable')] };
    const s = summarize([row(true, true), row(true, false, 1), row(false, false), { ...row(true, true), status: 'error' }], [clean]);
    expect(s.rows).toBe(3);
    expect(s.recallFamily).toBeCloseTo(2 / 3);
    expect(s.recallExact).toBeCloseTo(1 / 3);
    expect(s.fixSameFamily).toBeCloseTo(1 / 3);
    // An unjudged finding counts as a false positive until a person judges it.
    expect(s.cleanFpPerKloc).toBeCloseTo(1);
    expect(s.cleanJudgedFpPerKloc).toBeCloseTo(0.5);
    expect(summaryLine(s)).toBe('recall_family=0.667 recall_exact=0.333 fix_same_family=0.333 clean_fp_per_kloc=1.00');
  });
});

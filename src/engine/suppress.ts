/**
 * `gpu-review: ignore[rule-id, other-id] reason` in a `#`, `//` or `/*` comment. After code on the
 * same line (trailing) it silences that line only; alone on its line it silences the next line of
 * code (comment-only lines in between, such as a stack of suppressions, are passed over).
 * `gpu-review: ignore-file[rule-id]` silences them in the whole file; `*` stands for every rule.
 * Each suppression records which of its ids silenced something, for `--report-unused-suppressions`.
 */
export interface Suppression {
  /** 1-based line and column of the comment. */
  line: number;
  column: number;
  /** The line it silences, or 'file'. */
  target: number | 'file';
  ids: string[];
  /** The ids that silenced at least one finding. */
  used: Set<string>;
}

export interface Suppressions {
  all: Suppression[];
  file: Suppression[];
  /** 1-based line -> the suppressions that silence it. */
  lines: Map<number, Suppression[]>;
}

const MARK = /(?:#|\/\/|\/\*)\s*gpu-review:\s*ignore(-file)?\[([^\]]*)\]/g;
const COMMENT_ONLY = /^\s*(?:#|\/\/|\/\*|\*)/;

export function scanSuppressions(lines: ReadonlyArray<string | undefined>): Suppressions {
  const s: Suppressions = { all: [], file: [], lines: new Map() };
  lines.forEach((text, i) => {
    if (!text || !text.includes('gpu-review:')) return;
    for (const m of text.matchAll(MARK)) {
      const ids = m[2].split(',').map((x) => x.trim()).filter(Boolean);
      const at = { line: i + 1, column: (m.index ?? 0) + 1, ids, used: new Set<string>() };
      if (m[1]) {
        const sup: Suppression = { ...at, target: 'file' };
        s.all.push(sup);
        s.file.push(sup);
        continue;
      }
      const trailing = text.slice(0, m.index).trim() !== '';
      let target = i + 1;
      if (!trailing) {
        // The next line of code; lines the review never saw (diff-only mode) end the search.
        let j = i + 1;
        while (j < lines.length && lines[j] !== undefined && COMMENT_ONLY.test(lines[j]!)) j++;
        target = j + 1;
      }
      const sup: Suppression = { ...at, target };
      s.all.push(sup);
      s.lines.set(target, [...(s.lines.get(target) ?? []), sup]);
    }
  });
  return s;
}

/** True when a suppression silences `ruleId` on `line`; the suppression is marked used. */
export function isSuppressed(s: Suppressions, ruleId: string, line: number): boolean {
  let hit = false;
  for (const sup of [...s.file, ...(s.lines.get(line) ?? [])]) {
    const id = sup.ids.includes(ruleId) ? ruleId : sup.ids.includes('*') ? '*' : null;
    if (id) {
      sup.used.add(id);
      hit = true;
    }
  }
  return hit;
}

/** Ids in suppressions that name no rule: `{ line, column, id }` for each. */
export function unknownSuppressionIds(s: Suppressions, known: ReadonlySet<string>): Array<{ line: number; column: number; id: string }> {
  return s.all.flatMap((sup) => sup.ids.filter((id) => id !== '*' && !known.has(id)).map((id) => ({ line: sup.line, column: sup.column, id })));
}

/** Ids of suppressions that silenced nothing in this review. */
export function unusedSuppressions(s: Suppressions): Array<{ line: number; column: number; id: string }> {
  return s.all.flatMap((sup) => sup.ids.filter((id) => !sup.used.has(id)).map((id) => ({ line: sup.line, column: sup.column, id })));
}

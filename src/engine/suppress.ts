/**
 * `gpu-review: ignore[rule-id, other-id] reason` in a `#` or `//` comment silences those rules on
 * the same line and the line below; `gpu-review: ignore-file[rule-id]` silences them in the file.
 * `*` stands for every rule.
 */
export interface Suppressions {
  file: Set<string>;
  /** 1-based line -> rule ids silenced there. */
  lines: Map<number, Set<string>>;
}

const MARK = /(?:#|\/\/|\/\*)\s*gpu-review:\s*ignore(-file)?\[([^\]]*)\]/g;

export function scanSuppressions(lines: ReadonlyArray<string | undefined>): Suppressions {
  const s: Suppressions = { file: new Set(), lines: new Map() };
  lines.forEach((text, i) => {
    if (!text || !text.includes('gpu-review:')) return;
    for (const m of text.matchAll(MARK)) {
      const ids = m[2].split(',').map((x) => x.trim()).filter(Boolean);
      if (m[1]) ids.forEach((id) => s.file.add(id));
      else {
        for (const line of [i + 1, i + 2]) {
          const set = s.lines.get(line) ?? new Set<string>();
          ids.forEach((id) => set.add(id));
          s.lines.set(line, set);
        }
      }
    }
  });
  return s;
}

export function isSuppressed(s: Suppressions, ruleId: string, line: number): boolean {
  if (s.file.has(ruleId) || s.file.has('*')) return true;
  const set = s.lines.get(line);
  return !!set && (set.has(ruleId) || set.has('*'));
}

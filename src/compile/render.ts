import type { CompileReport } from './evidence.js';

/**
 * The compiler-evidence part of a review, as lines: one per changed kernel (the figures only), the
 * units that were skipped with their reason, and the findings the figures withdrew. Shared by the
 * review body the App posts and the terminal report.
 */
export function compileLines(report: CompileReport, style: 'markdown' | 'text'): string[] {
  const bullet = style === 'markdown' ? '- ' : '  ';
  const code = (s: string) => (style === 'markdown' ? `\`${s}\`` : s);
  const plain = (s: string) => (style === 'markdown' ? s : s.replace(/`/g, ''));
  const out: string[] = [];
  if (report.unavailable) return [`${bullet}compilation unavailable: ${report.unavailable}`];
  const compiled = report.units.filter((u) => !u.skipped);
  out.push(`${bullet}nvcc ${report.nvcc} for ${report.arches.join(', ')}: ${compiled.length} unit compile${compiled.length === 1 ? '' : 's'} in ${(report.ms / 1000).toFixed(1)} s`);
  for (const k of report.kernels) {
    const where = k.path && k.line ? ` (${code(`${k.path}:${k.line}`)})` : ` (unit ${code(k.unit)})`;
    out.push(`${bullet}${plain(k.text)}${where}`);
  }
  if (!report.kernels.length) out.push(`${bullet}no kernel of the change compiles differently`);
  for (const u of report.units.filter((x) => x.skipped)) out.push(`${bullet}skipped ${code(u.unit)} (${u.side}): ${u.skipped}`);
  for (const s of report.silenced) out.push(`${bullet}withdrawn ${code(s.ruleId)} at ${code(`${s.path}:${s.line}`)}: ${s.reason}`);
  return out;
}

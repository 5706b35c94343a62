import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { ResolvedConfig } from '../config/schema.js';
import type { Finding } from '../core/types.js';
import type { Pass7Options } from './index.js';
import type { Proposal } from './types.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = existsSync(join(here, '..', '..', 'prompts')) ? join(here, '..', '..') : join(here, '..', '..', '..');

export interface LlmSettings {
  baseURL: string;
  model: string;
  apiKey: string;
  /** Prompt bytes sent per review, all requests together. */
  maxBytes: number;
  /** Wall-clock budget per review for all requests. */
  timeoutMs: number;
}

/** Drafting is on only when a base URL and a model are set (GPU_REVIEW_LLM_BASE_URL, GPU_REVIEW_LLM_MODEL). */
export function llmSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): LlmSettings | null {
  const baseURL = env.GPU_REVIEW_LLM_BASE_URL?.trim();
  const model = env.GPU_REVIEW_LLM_MODEL?.trim();
  if (!baseURL || !model) return null;
  const num = (v: string | undefined, d: number) => (v && /^\d+$/.test(v) ? Number(v) : d);
  return { baseURL, model, apiKey: env.GPU_REVIEW_LLM_API_KEY ?? 'none', maxBytes: num(env.GPU_REVIEW_LLM_MAX_BYTES, 200_000), timeoutMs: num(env.GPU_REVIEW_LLM_TIMEOUT_MS, 120_000) };
}

const KIND: Record<string, string> = { 'host-device': 'host-transfer', sync: 'stream-order', kernel: 'kernel', luisa: 'kernel', precision: 'precision', memory: 'memory', nvrtc: 'compile' };

export function promptFor(f: Finding, fields: Record<string, string>): { system: string; user: string } | null {
  const kind = KIND[f.ruleId.split('/')[0]];
  const file = kind ? join(root, 'prompts', `${kind}.md`) : '';
  if (!kind || !existsSync(file)) return null;
  const [system, user] = readFileSync(file, 'utf8').split(/^---user---$/m);
  const fill = (t: string) => t.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, k: string) => fields[k] ?? '');
  return { system: fill(system).trim(), user: fill(user ?? '').trim() };
}

function howToFix(rule: string): string {
  const p = join(root, 'checks', rule, 'README.md');
  if (!existsSync(p)) return '';
  const m = /^## How to fix\s*\n([\s\S]*?)(?=^## |$(?![\s\S]))/m.exec(readFileSync(p, 'utf8'));
  return (m?.[1] ?? '').trim().slice(0, 4000);
}

/** The one fenced block of a reply, or why the reply is unusable. */
export function parseDraft(reply: string, unitText: string): string | { decline: string } {
  const blocks = [...reply.matchAll(/^(`{3,})[^\n`]*\n([\s\S]*?)^\1[ \t]*$/gm)].map((m) => m[2].replace(/\n$/, ''));
  if (blocks.length !== 1) return { decline: `the draft has ${blocks.length} code blocks, not one` };
  const code = blocks[0];
  if (!code.trim()) return { decline: 'the draft is empty' };
  if (code.length > unitText.length * 4 + 2000) return { decline: 'the draft is far larger than the unit it replaces' };
  if (code.trim() === unitText.trim()) return { decline: 'the draft changes nothing' };
  return code;
}

/** A drafter for runPass7: one chat-completions request per finding, within the review's byte and time budget. */
export function llmDrafter(settings: LlmSettings, config: ResolvedConfig): NonNullable<Pass7Options['draft']> {
  const client = new OpenAI({ baseURL: settings.baseURL, apiKey: settings.apiKey, maxRetries: 1 });
  const deadline = Date.now() + settings.timeoutMs;
  let bytes = 0;
  return async (f, ctx) => {
    const vocab = Object.values(config.vocab).flat().filter((n) => n.length > 2 && ctx.text.includes(n.split('.').pop()!));
    const prompt = promptFor(f, {
      rule: f.ruleId,
      message: f.message,
      citation: f.citation,
      how_to_fix: howToFix(f.ruleId),
      language: ctx.language === 'python' || ctx.language === 'nvrtc-in-python' ? 'python' : 'cuda',
      path: ctx.path,
      unit: `(line ${ctx.unit.startLine})\n${ctx.unit.text}`,
      vocabulary: [...new Set(vocab)].slice(0, 40).join(', ') || '(none)',
    });
    if (!prompt) return { decline: 'no prompt template for this rule family' };
    const size = Buffer.byteLength(prompt.system) + Buffer.byteLength(prompt.user);
    if (bytes + size > settings.maxBytes) return { decline: `the review's drafting budget (${settings.maxBytes} bytes) is spent` };
    const left = deadline - Date.now();
    if (left <= 0) return { decline: "the review's drafting time budget is spent" };
    bytes += size;
    const res = await client.chat.completions.create(
      { model: settings.model, messages: [{ role: 'system', content: prompt.system }, { role: 'user', content: prompt.user }], temperature: 0 },
      { timeout: left },
    );
    const reply = res.choices?.[0]?.message?.content;
    if (typeof reply !== 'string') return { decline: 'the reply has no message content' };
    const code = parseDraft(reply, ctx.unit.text);
    if (typeof code !== 'string') return code;
    return { description: 'Rewrite drafted by a language model from the finding and the rule\'s "How to fix".', edits: [{ startLine: ctx.unit.startLine, endLine: ctx.unit.endLine, text: code }], behaviourPreserving: false } satisfies Proposal;
  };
}

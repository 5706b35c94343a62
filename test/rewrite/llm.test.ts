import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { review } from '../../src/review/pipeline.js';
import { isRewrite } from '../../src/rewrite/apply.js';
import { runPass7 } from '../../src/rewrite/index.js';
import { llmDrafter, llmSettingsFromEnv, parseDraft } from '../../src/rewrite/llm.js';
import { addedFileDiff, config } from '../helpers.js';

/** The chat-completions request shape (OpenAI API reference: model, messages of role + content). */
const request = z.object({
  model: z.string().min(1),
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant', 'developer']), content: z.string().min(1) })).min(1),
  temperature: z.number().min(0).max(2).optional(),
}).passthrough();

const GOOD = [
  'Here is the rewrite:',
  '```cuda',
  '__global__ void add_one(float* v, int count) {',
  '  for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < count; t += blockDim.x * gridDim.x) v[t] += 1.0f;',
  '}',
  '```',
].join('\n');

let server: Server;
let base = '';
const seen: unknown[] = [];
let script: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const parsed = request.safeParse(JSON.parse(body || 'null'));
      const okPath = req.method === 'POST' && req.url === '/v1/chat/completions' && /^Bearer /.test(req.headers.authorization ?? '');
      seen.push(parsed.success ? parsed.data : { invalid: parsed.error.message });
      if (!parsed.success || !okPath) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'bad request shape' } }));
        return;
      }
      const content = script.shift() ?? 'no more drafts';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: parsed.data.model, choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => server.close());

const text = readFileSync(join(import.meta.dirname, 'fixtures', 'launch-on-stream', 'library.cu'), 'utf8');
const path = 'src/library.cu';

async function draftRun(replies: string[], maxBytes = 100_000) {
  script = [...replies];
  seen.length = 0;
  const cfg = config({ enable_preview: true });
  const out = await review({ diff: addedFileDiff(path, text), config: cfg, scope: 'file', readFile: async (p) => (p === path ? text : null) });
  const settings = llmSettingsFromEnv({ GPU_REVIEW_LLM_BASE_URL: base, GPU_REVIEW_LLM_MODEL: 'stand-in', GPU_REVIEW_LLM_API_KEY: 'k', GPU_REVIEW_LLM_MAX_BYTES: String(maxBytes) })!;
  await runPass7(out, { config: cfg, compile: false, draft: llmDrafter(settings, cfg) });
  return out.result.findings.find((f) => f.ruleId === 'kernel/prefer-grid-stride-loop')!;
}

describe('LLM drafting', () => {
  it('is off unless a base URL and a model are configured', () => {
    expect(llmSettingsFromEnv({})).toBeNull();
    expect(llmSettingsFromEnv({ GPU_REVIEW_LLM_BASE_URL: 'http://x' })).toBeNull();
  });

  it('sends a well-formed chat-completions request and verifies the draft', async () => {
    const f = await draftRun([GOOD]);
    expect(seen).toHaveLength(1);
    const req = seen[0] as z.infer<typeof request>;
    expect(req.model).toBe('stand-in');
    expect(req.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(req.messages[1].content).toContain('kernel/prefer-grid-stride-loop');
    expect(req.messages[1].content).toContain('__global__ void add_one');
    // The draft is reviewed again like any rewrite: the grid-stride loop clears the rule, but the
    // re-review finds the fixed-size grid's wave-quantization hazard it now exposes, so it is not shown.
    expect(isRewrite(f.rewrite)).toBe(false);
    expect(f.rewrite && 'declined' in f.rewrite && f.rewrite.declined).toBe('llm: verification failed (new finding(s): kernel/wave-quantization)');
  });

  it('discards malformed drafts: no code block, or code that does not parse', async () => {
    const none = await draftRun(['I would use a grid-stride loop.']);
    expect(none.rewrite && 'declined' in none.rewrite && none.rewrite.declined).toMatch(/0 code blocks/);
    const broken = await draftRun(['```\n__global__ void add_one(float* v, int count) {\n  for (int t = 0; t < count; t +=) {\n}\n```']);
    expect(isRewrite(broken.rewrite)).toBe(false);
    expect(broken.rewrite && 'declined' in broken.rewrite && broken.rewrite.declined).toMatch(/llm: verification failed/);
  });

  it('keeps to the byte budget: nothing is sent past it', async () => {
    const f = await draftRun([GOOD], 10);
    expect(seen).toHaveLength(0);
    expect(f.rewrite && 'declined' in f.rewrite && f.rewrite.declined).toMatch(/budget/);
  });

  it('parseDraft takes exactly one fenced block', () => {
    expect(parseDraft('```\na\n```\n```\nb\n```', 'x')).toEqual({ decline: 'the draft has 2 code blocks, not one' });
    expect(parseDraft('```py\ny = 1\n```', 'x = 1')).toBe('y = 1');
  });
});

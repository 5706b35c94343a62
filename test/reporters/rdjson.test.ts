import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { rdSeverity, renderRdjson } from '../../src/reporters/rdjson.js';
import { ALL, COPY_IN_LOOP, DIVERGENT_SYNC, GET_IN_LOOP, OUTSIDE, makeInput } from './fixtures.js';

/**
 * reviewdog's rdjson (DiagnosticResult of proto/rdf/reviewdog.proto), written out from the proto
 * as a closed schema: the published one allows any extra property, so a misspelt field name
 * would pass it and be silently ignored by reviewdog.
 */
const position = {
  type: 'object',
  additionalProperties: false,
  required: ['line'],
  properties: { line: { type: 'integer', minimum: 1 }, column: { type: 'integer', minimum: 1 } },
};
const range = {
  type: 'object',
  additionalProperties: false,
  required: ['start'],
  properties: { start: position, end: position },
};
const source = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: { type: 'string' }, url: { type: 'string' } },
};
const severity = { enum: ['UNKNOWN_SEVERITY', 'ERROR', 'WARNING', 'INFO'] };
const RDJSON_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['diagnostics'],
  properties: {
    source,
    severity,
    diagnostics: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['message', 'location'],
        properties: {
          message: { type: 'string' },
          location: {
            type: 'object',
            additionalProperties: false,
            required: ['path'],
            properties: { path: { type: 'string' }, range },
          },
          severity,
          source,
          code: {
            type: 'object',
            additionalProperties: false,
            required: ['value'],
            properties: { value: { type: 'string' }, url: { type: 'string' } },
          },
          suggestions: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['range', 'text'],
              properties: { range, text: { type: 'string' } },
            },
          },
          original_output: { type: 'string' },
        },
      },
    },
  },
};

const validate = new Ajv({ allErrors: true }).compile(RDJSON_SCHEMA);

describe('renderRdjson', () => {
  it('matches the rdf DiagnosticResult shape', () => {
    const out = renderRdjson(makeInput());
    expect(out.endsWith('}\n')).toBe(true);
    const doc = JSON.parse(out);
    expect(validate(doc)).toBe(true);
    expect(validate.errors ?? []).toEqual([]);
    expect(Object.keys(doc)).toEqual(['source', 'severity', 'diagnostics']);
    expect(doc.source).toEqual({ name: 'gpu-review', url: 'https://github.com/gpu-review/gpu-review' });
    expect(doc.severity).toBe('ERROR');
    expect(doc.diagnostics).toHaveLength(ALL.length);
  });

  it('writes location, severity, source and rule code of each diagnostic', () => {
    const doc = JSON.parse(renderRdjson(makeInput({ findings: [DIVERGENT_SYNC] }), { sourceUrl: 'https://example.test/gpu-review' }));
    expect(doc.diagnostics[0]).toEqual({
      message: `${DIVERGENT_SYNC.message}\nSource: ${DIVERGENT_SYNC.citation}\n${DIVERGENT_SYNC.why}`,
      location: { path: 'src/kernels/reduce.cu', range: { start: { line: 13, column: 7 }, end: { line: 13, column: 23 } } },
      severity: 'ERROR',
      source: { name: 'gpu-review', url: 'https://example.test/gpu-review' },
      code: { value: 'sync/syncthreads-in-branch', url: DIVERGENT_SYNC.docUrl },
    });
  });

  it('adds line-wise suggestions for safe fixes only', () => {
    const doc = JSON.parse(renderRdjson(makeInput()));
    const by = (id: string) => doc.diagnostics.find((d: { code: { value: string } }) => d.code.value === id);
    expect(by(COPY_IN_LOOP.ruleId).suggestions).toEqual([
      { range: { start: { line: 24 }, end: { line: 24 } }, text: '    cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, 0);' },
    ]);
    expect(by(GET_IN_LOOP.ruleId).suggestions).toEqual([
      { range: { start: { line: 6 }, end: { line: 7 } }, text: '    for x in xs:\n        acc += float(cp.sum(x))' },
    ]);
    expect(by(DIVERGENT_SYNC.ruleId)).not.toHaveProperty('suggestions');
    expect(by(OUTSIDE.ruleId)).not.toHaveProperty('suggestions');
    const low = JSON.parse(renderRdjson(makeInput({ findings: [{ ...COPY_IN_LOOP, confidence: 'low' }] })));
    expect(low.diagnostics[0]).not.toHaveProperty('suggestions');
  });

  it('maps severities onto ERROR, WARNING and INFO', () => {
    expect(['critical', 'high', 'medium-high', 'medium', 'low-medium', 'low'].map((s) => rdSeverity(s as never))).toEqual([
      'ERROR', 'ERROR', 'WARNING', 'WARNING', 'INFO', 'INFO',
    ]);
    const doc = JSON.parse(renderRdjson(makeInput({ findings: [OUTSIDE] })));
    expect(doc.severity).toBe('WARNING');
  });

  it('omits the overall severity when there is nothing to report', () => {
    const doc = JSON.parse(renderRdjson(makeInput({ findings: [] })));
    expect(validate(doc)).toBe(true);
    expect(doc).toEqual({ source: { name: 'gpu-review', url: 'https://github.com/gpu-review/gpu-review' }, diagnostics: [] });
  });

  it('the closed schema rejects a misspelt field', () => {
    const doc = JSON.parse(renderRdjson(makeInput()));
    doc.diagnostics[0].location.range.start.col = 3;
    expect(validate(doc)).toBe(false);
  });
});

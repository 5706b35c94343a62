import { validate as validateGraphql } from '@octokit/graphql-schema';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Every request the app sends is checked against GitHub's own description of its API: the REST
 * OpenAPI document of @octokit/openapi (method, templated path, query parameters, JSON body) and
 * the GraphQL schema of @octokit/graphql-schema (the query must validate, its variables given).
 */

interface Operation {
  method: string;
  template: string;
  regex: RegExp;
  literal: number;
  op: {
    operationId: string;
    parameters?: Array<{ $ref?: string; name?: string; in?: string; schema?: unknown; required?: boolean }>;
    requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
  };
}

const require = createRequire(import.meta.url);
const spec = JSON.parse(readFileSync(require.resolve('@octokit/openapi/generated/api.github.com.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation['op']>>;
  components: Record<string, Record<string, unknown>>;
};

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
ajv.addSchema({ $id: 'gh', components: spec.components }, 'gh');
const queryAjv = new Ajv({ strict: false, coerceTypes: true, allErrors: true });

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const operations: Operation[] = [];
for (const [template, item] of Object.entries(spec.paths)) {
  for (const method of METHODS) {
    const op = item[method];
    if (!op) continue;
    const pattern = template
      .split(/(\{[^}]+\})/)
      .map((part, i, all) => (part.startsWith('{') ? (i === all.length - 2 && part === '{path}' ? '(.+)' : '([^/]+)') : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    operations.push({ method: method.toUpperCase(), template, regex: new RegExp(`^${pattern}$`), literal: template.replace(/\{[^}]+\}/g, '').length, op });
  }
}

function deref<T>(x: T & { $ref?: string }): T {
  if (!x.$ref) return x;
  const [, kind, name] = /^#\/components\/([^/]+)\/(.+)$/.exec(x.$ref) ?? [];
  return spec.components[kind]?.[name] as T;
}

const bodyValidators = new Map<string, ValidateFunction>();
function bodyValidator(o: Operation): ValidateFunction | null {
  const schema = o.op.requestBody?.content?.['application/json']?.schema;
  if (!schema) return null;
  const key = `${o.method} ${o.template}`;
  let v = bodyValidators.get(key);
  if (!v) {
    v = ajv.compile(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"gh#/components/')));
    bodyValidators.set(key, v);
  }
  return v;
}

function graphqlProblems(body: unknown): string[] {
  const b = body as { query?: unknown; variables?: Record<string, unknown> };
  if (typeof b?.query !== 'string') return ['GraphQL request without a query string'];
  const problems = validateGraphql(b.query).map((e: { message: string }) => `GraphQL: ${e.message}`);
  // Every declared non-null variable must be supplied.
  for (const m of b.query.matchAll(/\$(\w+)\s*:\s*[\w[\]]+!/g)) {
    if (b.variables?.[m[1]] === undefined || b.variables?.[m[1]] === null) problems.push(`GraphQL: variable $${m[1]} not supplied`);
  }
  return problems;
}

/** Problems with one request (empty when GitHub's description allows it). */
export function checkRequest(method: string, url: string, body: unknown): string[] {
  const u = new URL(url, 'https://api.github.com');
  const path = u.pathname.replace(/^\/api\/v3/, '').replace(/^\/api\/graphql$/, '/graphql');
  if (method === 'POST' && path === '/graphql') return graphqlProblems(body);
  const matches = operations.filter((o) => o.method === method && o.regex.test(path)).sort((a, b) => b.literal - a.literal);
  const o = matches[0];
  if (!o) return [`${method} ${path}: no such operation in GitHub's REST API description`];
  const where = `${method} ${o.template} (${o.op.operationId})`;
  const problems: string[] = [];
  const params = (o.op.parameters ?? []).map((p) => deref(p));
  const query = params.filter((p) => p.in === 'query');
  for (const [name, value] of u.searchParams) {
    const p = query.find((q) => q.name === name);
    if (!p) {
      problems.push(`${where}: query parameter "${name}" is not in the description`);
      continue;
    }
    const holder = { v: value };
    const ok = queryAjv.validate({ type: 'object', properties: { v: p.schema ?? {} } }, holder);
    if (!ok) problems.push(`${where}: query ${name}=${value}: ${queryAjv.errorsText()}`);
  }
  for (const p of query.filter((q) => q.required)) {
    if (!u.searchParams.has(p.name!)) problems.push(`${where}: required query parameter "${p.name}" missing`);
  }
  const v = bodyValidator(o);
  const hasBody = body !== undefined && body !== '' && body !== null;
  if (v) {
    if (!hasBody && o.op.requestBody?.required) problems.push(`${where}: request body required`);
    if (hasBody && !v(body)) problems.push(`${where}: body ${ajv.errorsText(v.errors, { separator: '; ' })}`);
  } else if (hasBody && method !== 'GET' && method !== 'DELETE') {
    problems.push(`${where}: sends a body but the operation takes none`);
  }
  return problems;
}

/** The operation id a request maps to (for counting calls in tests). */
export function operationOf(method: string, url: string): string {
  const u = new URL(url, 'https://api.github.com');
  const path = u.pathname.replace(/^\/api\/v3/, '').replace(/^\/api\/graphql$/, '/graphql');
  if (method === 'POST' && path === '/graphql') return 'graphql';
  const o = operations.filter((x) => x.method === method && x.regex.test(path)).sort((a, b) => b.literal - a.literal)[0];
  return o?.op.operationId ?? `unknown ${method} ${path}`;
}

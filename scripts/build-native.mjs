#!/usr/bin/env node
/**
 * Compiles native/ (the tree mirror's walker, native/mirror.c) with node-gyp. Runs as the package's
 * `install` script, so `npm ci` builds it. It is optional: without a C compiler, Python or node-gyp
 * the review uses the JS walk (same findings, slower), so a failed build prints one line and exits
 * 0 unless --strict is given. The compiler output goes to native/build.log.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'native');
const strict = process.argv.includes('--strict');
const log = path.join(dir, 'build.log');

function fail(why) {
  const msg = `gpu-review: native tree walker not built (${why}); the review uses the JS walk`;
  if (strict) {
    console.error(msg);
    process.exit(1);
  }
  console.warn(msg);
  process.exit(0);
}

if (process.env.GPU_REVIEW_NATIVE === '0') fail('GPU_REVIEW_NATIVE=0');
if (!existsSync(path.join(dir, 'binding.gyp'))) fail('native/binding.gyp missing');

// node-gyp: the one npm runs scripts with, else the one bundled with npm next to this node.
const prefix = path.resolve(path.dirname(process.execPath), '..');
const candidates = [
  process.env.npm_config_node_gyp,
  path.join(prefix, 'lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
  path.join(path.dirname(process.execPath), 'node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
].filter(Boolean);
const gyp = candidates.find((p) => existsSync(p));
if (!gyp) fail('node-gyp not found');

// Headers: the node installation's own when it ships them (no download; the registry may be all the
// network there is), else whatever node-gyp is configured with.
const args = [gyp, 'rebuild'];
if (!process.env.npm_config_nodedir && existsSync(path.join(prefix, 'include/node/node_api.h'))) args.push(`--nodedir=${prefix}`);

mkdirSync(dir, { recursive: true });
const r = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8', timeout: 300_000, env: { ...process.env, JOBS: process.env.JOBS ?? '2' } });
writeFileSync(log, `$ node ${args.join(' ')}\n${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) + '\n' : ''}`);
if (r.error || r.status !== 0) fail(`node-gyp ${r.error ? r.error.message : `exited with ${r.status}`}; see native/build.log`);
if (!existsSync(path.join(dir, 'build/Release/gpu_review_native.node'))) fail('no addon produced; see native/build.log');
console.log('gpu-review: native tree walker built');

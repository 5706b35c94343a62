#!/usr/bin/env node
// Prints the server stack (package.json's optional peerDependencies) as `name@range` arguments for
// `npm install`: the CLI package does not install them, the service image does (Dockerfile).
import { readFileSync } from 'node:fs';
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
process.stdout.write(Object.entries(pkg.peerDependencies ?? {}).map(([n, v]) => `${n}@${v}`).join(' ') + '\n');

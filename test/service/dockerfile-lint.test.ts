import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate, ValidationSeverity, type ValidatorSettings } from 'dockerfile-utils';
import { expect, test } from 'vitest';

/**
 * The Dockerfile through a maintained linter from npm: dockerfile-utils (the validator of the
 * Dockerfile language server), which reports what the Docker builder would reject, plus its
 * optional checks, all raised to errors here. (hadolint is on neither npm nor Debian.)
 */
const all: ValidatorSettings = {
  deprecatedMaintainer: ValidationSeverity.ERROR,
  directiveCasing: ValidationSeverity.ERROR,
  emptyContinuationLine: ValidationSeverity.ERROR,
  instructionCasing: ValidationSeverity.ERROR,
  instructionCmdMultiple: ValidationSeverity.ERROR,
  instructionEntrypointMultiple: ValidationSeverity.ERROR,
  instructionHealthcheckMultiple: ValidationSeverity.ERROR,
  instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
  instructionWorkdirRelative: ValidationSeverity.ERROR,
};

const lint = (text: string) => validate(text, all).map((d) => `${d.range.start.line + 1}: ${d.message}`);

test('the Dockerfile passes dockerfile-utils with every check on', () => {
  expect(lint(readFileSync(join(import.meta.dirname, '..', '..', 'Dockerfile'), 'utf8'))).toEqual([]);
});

test('and the linter does catch mistakes (so the check above is not empty)', () => {
  const bad = ['FROM node:20-bookworm-slim', 'workdir app', "CMD ['node', 'x.js']", 'HEALTHCHECK --interva=30s CMD true', 'CMD ["node"]'].join('\n');
  expect(lint(bad).length).toBeGreaterThanOrEqual(4);
});

/**
 * Turn the event loop over after every test.
 *
 * Many tests run the CLI with spawnSync. Between two synchronous tests vitest only awaits promises
 * that are already settled, so the worker never reaches the event loop: the answer to its own RPC
 * ("onTaskUpdate") waits in the IPC pipe while the RPC's 60 s timer runs, and a test file made of
 * synchronous tests that together pass a minute fails the run with "Timeout calling onTaskUpdate"
 * (seen on CI). One macrotask turn after each test reads the answer in time.
 */
import { afterEach } from 'vitest';

afterEach(() => new Promise<void>((resolve) => setImmediate(resolve)));

#!/usr/bin/env node
/**
 * The self-hosted service: `node dist/src/server.js` (`npm start`, the Docker image). Settings
 * from the environment only (README "Self-hosted service"); webhooks are verified, de-duplicated
 * and queued, the answer goes back at once; SIGTERM drains the queue and exits 0.
 */
import { ConfigError, loadConfig, type ServiceConfig } from './service/config.js';
import { createService } from './service/service.js';

let config: ServiceConfig;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`gpu-review: ${err.message}\n`);
  process.exit(1);
}

const service = await createService({ config });
let exiting = false;
const shutdown = (signal: string) => {
  if (exiting) return;
  exiting = true;
  service.log.info({ signal }, 'signal received');
  void service.stop().then(
    () => setImmediate(() => process.exit(0)),
    (err) => {
      service.log.error({ err }, 'shutdown failed');
      setImmediate(() => process.exit(1));
    },
  );
};
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

try {
  await service.listen();
} catch (err) {
  process.stderr.write(`gpu-review: cannot listen on ${config.host}:${config.port}: ${(err as Error).message}\n`);
  process.exit(1);
}

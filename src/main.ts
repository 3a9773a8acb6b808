import 'reflect-metadata';
import { buildApp } from './app';
import { ConfigError, loadConfig } from './config';

/** The only module that touches the process: configuration, listening, signals. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  const app = await buildApp(config, { waitForDatabase: false });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: draining');
    app.lifecycle.draining = true;
    const force = setTimeout(() => {
      app.log.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    // Stop accepting after the delay; close() lets requests in flight finish, then closes the pools.
    const delay = new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
    delay.then(() => app.close()).then(
      () => {
        app.log.info('shut down');
        process.exit(0);
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  if (config.sandbox) app.log.info(`GraphQL Sandbox: http://localhost:${config.port}/graphql`);
}

main().catch((error: unknown) => {
  process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

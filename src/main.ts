import 'reflect-metadata';
// First: with tracing on, the SDK must patch modules before the app requires them.
import { telemetry } from './telemetry/start';
import cluster from 'node:cluster';
import { buildApp } from './app';
import { ConfigError, loadConfig } from './config';
import { settingsOrExit } from './cli';

/** The only module that touches the process: configuration, listening, signals. */
async function main(): Promise<void> {
  const config = settingsOrExit(() => loadConfig(process.env));

  if (config.workers > 1 && cluster.isPrimary) {
    runPrimary(config.workers);
    return;
  }
  // One listener per signal for the whole life of the process: removing a listener closes
  // libuv's signal handle, and a signal that arrived but was not yet dispatched to JavaScript is
  // then lost (a worker that got SIGTERM at the end of its start-up kept serving; seen under load).
  // During start-up (before the app exists) a signal is only noted; the app then closes at once.
  let signalled: string | undefined;
  let onSignal: (signal: string) => void = (signal) => {
    signalled ??= signal;
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const app = await buildApp(config, { waitForDatabase: false });
  if (signalled) {
    // Closing waits for a connection attempt under way (an SQLite lock, a MySQL connect): bounded like any shutdown.
    setTimeout(() => process.exit(1), 10_000).unref();
    await app.close();
    await telemetry.shutdown().catch(() => undefined);
    process.exit(0);
  }
  let stopping = false;
  onSignal = (signal: string) => {
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
    // Whatever is still open 8.5 s in (a client trickling its body) is cut, so the exit stays clean.
    setTimeout(() => app.server.closeAllConnections(), 8_500).unref();
    delay
      .then(() => app.close())
      // The spans still buffered are sent before the exit (within the 10 s bound above).
      .then(() => telemetry.shutdown().catch((error: unknown) => app.log.warn({ err: error }, 'traces not exported at shutdown')))
      .then(
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

  await app.listen({ port: config.port, host: config.host });
  if (config.sandbox) app.log.info(`GraphQL Sandbox: http://localhost:${config.port}/graphql`);
}

/**
 * WORKERS > 1: this process only forks the workers (each a whole app on the shared port, the
 * kernel spreading connections) and passes SIGTERM/SIGINT on; it exits when they all have.
 * Login counters are per process unless REDIS_URL is set.
 */
function runPrimary(workers: number): void {
  for (let i = 0; i < workers; i += 1) cluster.fork();
  let stopping = false;
  let failed = false;
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  cluster.on('exit', (worker, code, signal) => {
    // A worker ended by the signal passed on (before it could handle it) stopped as asked.
    if (code !== 0 && !(stopping && signal)) failed = true;
    if (!stopping) {
      process.stderr.write(`worker ${worker.process.pid} exited (${code}); starting another\n`);
      cluster.fork();
      return;
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
  });
}

main().catch((error: unknown) => {
  // Configuration found wrong while building the app (a trusted document that does not validate) reads as any other.
  const message =
    error instanceof ConfigError ? error.message : `Failed to start: ${error instanceof Error ? error.message : String(error)}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
});

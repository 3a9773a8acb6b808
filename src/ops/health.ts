import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import type { DataSource } from 'typeorm';
import { PING } from '../db/data-source.queries';
import { AppError } from '../errors';

const PING_TIMEOUT_MS = 2000;

async function ping(dataSource: DataSource): Promise<boolean> {
  if (!dataSource.isInitialized) return false;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS);
  });
  try {
    return await Promise.race([dataSource.query(PING).then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether the process is shutting down: readiness fails at once, so load balancers stop sending. */
interface Lifecycle {
  draining: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    lifecycle: Lifecycle;
  }
}

/** Seconds a client is told to wait (Retry-After) while the database is not connected or migrated. */
const GATE_RETRY_AFTER_S = 2;

/**
 * An onRequest hook for the API's scopes (REST, GraphQL): until the database is connected and
 * migrated, they answer SERVICE_UNAVAILABLE at once.
 */
export function databaseGate(database: { ready: boolean; schemaBehind: boolean }): onRequestAsyncHookHandler {
  return async () => {
    if (database.ready) return;
    if (database.schemaBehind) {
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        'The service is waiting for its database migrations to be run',
        undefined,
        GATE_RETRY_AFTER_S,
      );
    }
    throw new AppError('SERVICE_UNAVAILABLE', 'The service is starting: the database is not connected yet', undefined, GATE_RETRY_AFTER_S);
  };
}

/**
 * Liveness never touches the database; readiness is a database ping, and false while draining.
 * With Redis (`redis`), the answer also says whether the relays to the other instances are up:
 * `"redis": "unavailable"` while they are not (events, session endings and list changes then
 * reach this instance only), without failing readiness: the instance still serves every request.
 */
export function registerHealthRoutes(
  app: FastifyInstance,
  dataSource: DataSource,
  database: { ready: boolean },
  redis?: { check(): Promise<boolean | undefined> },
): void {
  app.decorate('lifecycle', { draining: false });
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    const connected = await redis?.check();
    const relays = connected === undefined ? {} : { redis: connected ? 'connected' : 'unavailable' };
    if (app.lifecycle.draining) return reply.code(503).send({ status: 'draining', code: 'SERVICE_UNAVAILABLE', ...relays });
    if (database.ready && (await ping(dataSource))) return { status: 'ready', ...relays };
    return reply.code(503).send({ status: 'unavailable', code: 'SERVICE_UNAVAILABLE', ...relays });
  });
}

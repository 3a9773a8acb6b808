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

/**
 * An onRequest hook for the API's scopes (REST, GraphQL): until the database is connected and
 * migrated, they answer SERVICE_UNAVAILABLE at once.
 */
export function databaseGate(database: { ready: boolean; schemaBehind: boolean }): onRequestAsyncHookHandler {
  return async () => {
    if (database.ready) return;
    if (database.schemaBehind) throw new AppError('SERVICE_UNAVAILABLE', 'The service is waiting for its database migrations to be run');
    throw new AppError('SERVICE_UNAVAILABLE', 'The service is starting: the database is not connected yet');
  };
}

/** Liveness never touches the database; readiness is a database ping, and false while draining. */
export function registerHealthRoutes(app: FastifyInstance, dataSource: DataSource, database: { ready: boolean }): void {
  app.decorate('lifecycle', { draining: false });
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    if (app.lifecycle.draining) return reply.code(503).send({ status: 'draining', code: 'SERVICE_UNAVAILABLE' });
    if (database.ready && (await ping(dataSource))) return { status: 'ready' };
    return reply.code(503).send({ status: 'unavailable', code: 'SERVICE_UNAVAILABLE' });
  });
}

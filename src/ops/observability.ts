import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { MeasuredSources, Metrics } from './metrics';

declare module 'fastify' {
  interface FastifyRequest {
    /** The GraphQL operation name, for logs and metrics. */
    operationName: string | null;
    /** The authenticated trainer, once known, for logs. */
    trainerId: number | null;
  }
}

const OPERATION_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Operation names are chosen by clients: past this many, new ones are counted as "other". */
const MAX_OPERATION_LABELS = 200;

/**
 * One log line per request (request id, method, route, status, time, GraphQL operation name,
 * trainer id; never headers or bodies, so never tokens or passwords) and Prometheus metrics
 * at GET /metrics: the app's `metrics` (metrics.ts: request counts and latency by route,
 * operation and status, counted here; the database pool's events and the SQL statements sent
 * (the benchmark reads statements per operation from it); GraphQL documents; the process), with
 * the password hashes and the read replicas' figures read from `measured` at each scrape.
 */
export function registerObservability(
  app: FastifyInstance,
  metrics: Metrics,
  metricsToken: string | undefined,
  measured: MeasuredSources = {},
): void {
  app.decorateRequest('operationName', null);
  app.decorateRequest('trainerId', null);
  metrics.measure(measured);
  const { registry, httpRequests, httpRequestDuration, httpRequestsAbandoned } = metrics;

  const seenOperations = new Set<string>();
  const operationLabel = (request: FastifyRequest): string => {
    const name = request.operationName;
    if (!name) return request.url.startsWith('/graphql') ? 'anonymous' : '';
    if (!OPERATION_NAME.test(name)) return 'other';
    if (!seenOperations.has(name)) {
      if (seenOperations.size >= MAX_OPERATION_LABELS) return 'other';
      seenOperations.add(name);
    }
    return name;
  };

  const logsRequests = ['trace', 'debug', 'info'].includes(app.log.level);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, operation: operationLabel(request), status: String(reply.statusCode) };
    httpRequests.inc(labels);
    httpRequestDuration.observe(labels, reply.elapsedTime / 1000);
    // The line's object is not built where it would not be written (LOG_LEVEL above info).
    if (!logsRequests) return;
    request.log.info(
      {
        method: request.method,
        route,
        statusCode: reply.statusCode,
        responseTime: Math.round(reply.elapsedTime * 10) / 10,
        ...(request.operationName ? { operationName: request.operationName } : {}),
        ...(request.trainerId ? { trainerId: request.trainerId } : {}),
      },
      'request completed',
    );
  });

  // A client that closes its connection before its answer (gave up waiting, a body cut short, a
  // pipelined request behind one) gets no onResponse: counted and logged here instead.
  app.addHook('onRequestAbort', async (request) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequestsAbandoned.inc({ method: request.method, route, operation: operationLabel(request) });
    if (!logsRequests) return;
    request.log.info(
      {
        method: request.method,
        route,
        ...(request.operationName ? { operationName: request.operationName } : {}),
        ...(request.trainerId ? { trainerId: request.trainerId } : {}),
      },
      'request abandoned by the client',
    );
  });

  const expected = metricsToken === undefined ? undefined : createHash('sha256').update(`Bearer ${metricsToken}`).digest();
  app.get('/metrics', { logLevel: 'warn', schema: { hide: true } }, async (request, reply) => {
    if (expected) {
      // Compared as digests of equal length, in constant time.
      const given = createHash('sha256')
        .update(request.headers.authorization ?? '')
        .digest();
      if (!timingSafeEqual(given, expected))
        throw new AppError('UNAUTHENTICATED', 'The metrics need Authorization: Bearer <METRICS_TOKEN>');
    }
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

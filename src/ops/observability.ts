import type { PasswordHasher } from '../auth/password';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import { POOL_EVENTS, poolEventsOf } from '../db/data-source';
import type { DocumentCounters } from '../graphql/trusted-documents';
import type { Replicas } from '../db/replicas';
import type { LockConflicts } from '../db/sql';

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
 * at GET /metrics: request counts and latency by route, operation and status, the database
 * pool's events and the SQL statements sent (the benchmark reads statements per operation from it), and
 * the process. Each app has its own registry.
 */
export function registerObservability(
  app: FastifyInstance,
  dataSource: DataSource,
  {
    statements,
    runs,
    documents,
    replicas,
    lockConflicts,
  }: {
    statements: { count: number };
    runs: { compiledRuns: number };
    documents: DocumentCounters;
    replicas?: Pick<Replicas, 'statementCounts'>;
    lockConflicts?: Readonly<LockConflicts>;
  },
  metricsToken: string | undefined,
  hasher?: Pick<PasswordHasher, 'load'>,
): void {
  app.decorateRequest('operationName', null);
  app.decorateRequest('trainerId', null);

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'operation', 'status'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  // Registered on creation; read on every scrape. mysql2's pool keeps its open, idle and waiting
  // connections in private fields; what it publishes are these events, counted as they come.
  new Counter({
    name: 'db_pool_events_total',
    help: 'MySQL pool events: connection (a connection opened), acquire (one handed out), release (one back among the idle), enqueue (a statement waited for a free connection)',
    labelNames: ['event'] as const,
    registers: [registry],
    collect() {
      const counts = poolEventsOf(dataSource);
      if (!counts) return;
      this.reset();
      for (const event of POOL_EVENTS) this.inc({ event }, counts[event]);
    },
  });
  // Each hash holds 32 MiB while it runs: a burst of logins shows here, and in the process's memory.
  new Gauge({
    name: 'password_hashes',
    help: 'Password hashes running, and waiting for a slot by lane (login, registration)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      if (!hasher) return;
      const { running, waiting } = hasher.load();
      this.set({ state: 'running' }, running);
      this.set({ state: 'waiting_login' }, waiting.login);
      this.set({ state: 'waiting_registration' }, waiting.registration);
    },
  });
  new Counter({
    name: 'db_statements_total',
    help: 'SQL statements sent to the database',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(statements.count);
    },
  });
  new Counter({
    name: 'db_lock_conflicts_total',
    help: 'Writes and transactions that lost a lock conflict (deadlock, lock wait timeout, SQLITE_BUSY): retried (run again after a randomized backoff), gave_up (answered SERVICE_UNAVAILABLE with Retry-After)',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      if (!lockConflicts) return;
      this.reset();
      this.inc({ outcome: 'retried' }, lockConflicts.retried);
      this.inc({ outcome: 'gave_up' }, lockConflicts.gaveUp);
    },
  });
  if (replicas) {
    new Counter({
      name: 'db_pool_statements_total',
      help: 'SQL statements by the pool that answered them: the primary, or a read replica (DATABASE_REPLICA_URLS)',
      labelNames: ['pool'] as const,
      registers: [registry],
      collect() {
        this.reset();
        const counts = replicas.statementCounts();
        const onReplicas = counts.reduce((sum, replica) => sum + replica.statements, 0);
        this.inc({ pool: 'primary' }, Math.max(0, statements.count - onReplicas));
        for (const replica of counts) this.inc({ pool: replica.name }, replica.statements);
      },
    });
    new Gauge({
      name: 'db_replica_lag_seconds',
      help: 'How far each read replica is behind the primary (+Inf: away); above REPLICA_MAX_LAG it gets no reads',
      labelNames: ['pool'] as const,
      registers: [registry],
      collect() {
        for (const replica of replicas.statementCounts()) this.set({ pool: replica.name }, replica.lagMs / 1000);
      },
    });
  }
  new Counter({
    name: 'graphql_compiled_runs_total',
    help: 'GraphQL operations run by a plan graphql-jit compiled (a short document after its 10th run, or a trusted document)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(runs.compiledRuns);
    },
  });
  new Counter({
    name: 'graphql_documents_total',
    help: 'GraphQL documents by how they came: a trusted document by id or by its text, refused (PERSISTED_QUERY_NOT_FOUND)',
    labelNames: ['how'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ how: 'id' }, documents.byId);
      this.inc({ how: 'text' }, documents.byText);
      this.inc({ how: 'refused' }, documents.refused);
    },
  });
  new Counter({
    name: 'graphql_documents_parsed_total',
    help: 'GraphQL documents parsed (and validated) for a request: neither a trusted document nor a text already in the document cache is',
    labelNames: ['step'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ step: 'parse' }, documents.parsed);
      this.inc({ step: 'validate' }, documents.validated);
    },
  });

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
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
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

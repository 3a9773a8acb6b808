import 'reflect-metadata';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { LocalChannels, RedisChannels, type Channels, type RedisClient } from './common/channel';
import { trustedProxies } from './http/client-address';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Config } from './config';
import { createDataSource, type DataSourceExtras } from './db/data-source';
import { DatabaseConnector } from './db/connector';
import { registerGraphQL } from './graphql/plugin';
import type { DocumentCheck } from './graphql/pipeline';
import { LIMITS } from './graphql/limits';
import { AppError } from './errors';
import { limitBodyChunks, registerStrictJsonParser } from './http/json-body';
import { sessionPurge } from './auth/session.service';
import { scheduleChore } from './common/housekeeping';
import { eventPruning } from './events/event-log.queries';
import { routeEveryMethod } from './http/method-not-allowed';
import { clientErrorHandler, problemErrorHandler, problemNotFoundHandler, sendProblem } from './rest/problem';
import { registerDocs } from './ops/docs';
import { errorForLog } from './log';
import { databaseGate, registerHealthRoutes } from './ops/health';
import { Metrics } from './ops/metrics';
import { registerObservability } from './ops/observability';
import { registerSecurityHeaders } from './ops/security';
import { restRoutes } from './rest/plugin';
import { createServices, type Services } from './services';
import type { Tracing } from './telemetry/spans';
import { Replicas } from './db/replicas';
import { replicaPoolOptions } from './db/data-source';
import { Admission } from './http/admission';
import { MysqlDriver } from 'typeorm/driver/mysql/MysqlDriver';
import type { Pool } from 'mysql2';

declare module 'fastify' {
  interface FastifyInstance {
    dataSource: DataSource;
    services: Services;
  }
}

export interface BuildOptions {
  /** Called with every SQL statement the app sends (tests and the benchmark count statements). */
  readonly onQuery?: DataSourceExtras['onQuery'];
  /**
   * Connect to the database before returning (the default), or return at once and keep
   * connecting in the background with backoff (main.ts: the process serves /healthz and answers
   * SERVICE_UNAVAILABLE until the database is there).
   */
  readonly waitForDatabase?: boolean;
  /** How long a request's headers and body may take to arrive (tests shorten it). */
  readonly requestTimeoutMs?: number;
  /** How long a connection may stay silent, used or not (tests shorten it). */
  readonly idleTimeoutMs?: number;
  /** Where log lines go instead of stdout (tests read them). */
  readonly logStream?: { write(line: string): void };
  /** How often WebSocket connections are checked for expired tokens and ended sessions (tests shorten it). */
  readonly sessionCheckMs?: number;
  /**
   * Checks added to the GraphQL pipeline (src/graphql/pipeline.ts), asked of every
   * operation on every route (HTTP and WebSocket): tests prove with one that the pipeline is the one
   * place that decides what a document may do.
   */
  readonly documentChecks?: readonly DocumentCheck[];
  /** The clock, in milliseconds, by which the ids kept of each trainer list age (TrainerLists; tests hold it still or move it). */
  readonly listClock?: () => number;
  /** What the requests let in at the API's door may weigh at once (http/admission.ts; tests make it small). */
  readonly admissionBudget?: number;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** 9 s, checked every 0.5 s: a slow request is cut off 9 to 9.5 s after its first byte, within the 10 s promised. */
const REQUEST_TIMEOUT_MS = 9_000;
/** Idle connections, kept alive or never used, are closed after this (the contract allows 75 s). */
const IDLE_TIMEOUT_MS = 72_000;

/**
 * The rate-limit store; it closes with the app. Commands fail at once while it is down (the limiter
 * then counts in memory). A Redis (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES), or none.
 * ioredis is loaded only when asked for: its heap would be carried for nothing by a single instance.
 */
function connectRedis(config: Config, app: FastifyInstance): RedisClient | undefined {
  if (config.redisUrl === undefined && config.redisClusterNodes.length === 0) return undefined;
  // require, not import(): Jest runs this file as CommonJS, without ES module support.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Cluster, Redis } = require('ioredis') as typeof import('ioredis');
  const redis =
    config.redisUrl !== undefined
      ? new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 })
      : new Cluster([...config.redisClusterNodes], {
          enableOfflineQueue: false,
          redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 2000 },
          // A master that restarts on its own address is reconnected to (no replica takes over here).
          clusterNodeRetryStrategy: (times) => Math.min(100 * times, 2000),
        });
  redis.on('error', (error) => app.log.warn({ err: error }, 'redis unavailable; counting login attempts in memory'));
  app.addHook('onClose', async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  return redis;
}

/**
 * Creature events, session endings and list changes: through Redis for every instance with
 * REDIS_URL (over the rate-limit store's connection and a subscriber of their own), else in this
 * process. They close with the app.
 */
function openChannels(redis: RedisClient | undefined, app: FastifyInstance): Channels {
  const channels = redis ? new RedisChannels(redis, app.log) : new LocalChannels();
  app.addHook('onClose', () => channels.close());
  return channels;
}

/** The read replicas' pools, their probes and the primary's heartbeat; closed with the app. */
function startReplicas(config: Config, dataSource: DataSource, app: FastifyInstance, tracing?: Tracing): Replicas {
  const untraced = tracing && (<T>(work: () => T): T => tracing.untraced(work));
  const replicas = new Replicas(config.replicaUrls, config.replicaMaxLagMs, replicaPoolOptions(), app.log, untraced);
  replicas.start(() => {
    const driver = dataSource.isInitialized ? dataSource.driver : undefined;
    return driver instanceof MysqlDriver ? (driver.pool as Pool | undefined) : undefined;
  });
  app.addHook('onClose', () => replicas.stop());
  return replicas;
}

/** The app's own spans; required only with tracing on, so that off loads nothing of OpenTelemetry. */
function loadTracing(): Tracing {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Tracing } = require('./telemetry/spans') as typeof import('./telemetry/spans');
  return new Tracing();
}

/** Builds the whole service on one database; it never listens (main.ts does). Close it with app.close(). */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie'],
      serializers: { err: errorForLog },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    bodyLimit: config.bodyLimit,
    // One line per request is written by the observability hook, with route, operation and trainer.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: trustedProxies(config.trustProxy),
    clientErrorHandler,
    // Long path ids must reach validation (400 BAD_USER_INPUT), not the router's own 414; Node's
    // 16 KiB header limit bounds URLs anyway.
    routerOptions: { maxParamLength: 16_384 },
    // A malformed URL (bad percent-encoding) still gets a catalogue answer.
    frameworkErrors: (error, request, reply) => {
      sendProblem(request, reply, new AppError('BAD_USER_INPUT', error.message));
    },
    // Slow clients (slowloris) cannot hold a connection, or a shutdown, open for long: headers and
    // body must all arrive within REQUEST_TIMEOUT_MS of the first byte (408 otherwise). Node checks
    // its connections every connectionsCheckingInterval (30 s by default, which lets a request live
    // two or three times its timeout), so the check runs at least every 0.5 s; idle keep-alive
    // connections close after IDLE_TIMEOUT_MS.
    requestTimeout: options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
    http: {
      headersTimeout: options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(500, (options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS) / 4),
    },
    keepAliveTimeout: options.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
    // A connection that never sends a byte is not a request yet, so neither timeout above reaches
    // it: without this, silent sockets stay open for good.
    connectionTimeout: options.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
    // While draining, requests already on open connections are served, not refused with a bare 503.
    return503OnClosing: false,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });
  routeEveryMethod(app);
  const tracing = config.tracing ? loadTracing() : undefined;
  if (tracing) app.addHook('onRequest', tracing.nameRequestSpan);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  // The app's metrics, served at GET /metrics (observability.ts): handed to what counts.
  const metrics = new Metrics({ process: true });
  const dataSource = createDataSource(config.database, {
    metrics,
    onQuery: options.onQuery,
    warn: (details, message) => app.log.warn(details, message),
  });
  const database = new DatabaseConnector(dataSource, app.log, config.migrateOnStart);
  try {
    if (options.waitForDatabase ?? true) await database.connectOnce();
    else database.start();
    app.decorate('dataSource', dataSource);
    app.addHook('onClose', async () => {
      await database.stop();
      if (dataSource.isInitialized) await dataSource.destroy();
    });

    const replicas = config.replicaUrls.length > 0 ? startReplicas(config, dataSource, app, tracing) : undefined;
    const redis = connectRedis(config, app);
    const channels = openChannels(redis, app);
    const services = createServices(dataSource, config, redis, tracing, replicas, { listClock: options.listClock, channels, metrics });
    app.decorate('services', services);
    const chores = [scheduleChore(sessionPurge(services.sessions), app.log), scheduleChore(eventPruning(services.eventLog), app.log)];
    app.addHook('onClose', async () => {
      await services.events.stop();
      await Promise.all(chores.map((chore) => chore.stop()));
    });

    // Problem details everywhere but in GraphQL's scope, which answers in its own shape.
    app.setErrorHandler(problemErrorHandler);
    app.setNotFoundHandler(problemNotFoundHandler);
    // The API's requests wait for their turn while the database has no connection free, or while
    // those let in weigh five times what one GraphQL operation may cost: seven nested pages of
    // 100 trainers with 10 creatures each (cost 3,400) at once, or thousands of single reads.
    const admission = new Admission(services.databaseLoad, { budget: options.admissionBudget ?? 5 * LIMITS.cost });
    registerObservability(app, metrics, config.metricsToken, { hasher: services.hasher, replicas, admission });
    registerSecurityHeaders(app);
    await app.register(cors, {
      origin: config.corsOrigins.length > 0 ? [...config.corsOrigins] : false,
      methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Apollo-Require-Preflight', 'X-Request-Id'],
      exposedHeaders: ['X-Request-Id', 'Location', 'Retry-After', 'Link'],
      maxAge: 600,
    });
    // Anything but JSON is 415 on both transports (a text/plain POST would also dodge CSRF checks).
    app.removeContentTypeParser('text/plain');
    registerStrictJsonParser(app);
    limitBodyChunks(app);
    registerHealthRoutes(app, dataSource, database, channels);
    await registerDocs(app);
    // The API's own scopes wait for the database; operations, docs and the IDE pages do not.
    const requireDatabase = databaseGate(database);
    await app.register(restRoutes, { services, requireDatabase, admission });
    await registerGraphQL(app, config, services, requireDatabase, {
      admission,
      sessionCheckMs: options.sessionCheckMs,
      metrics,
      documentChecks: options.documentChecks,
      tracing,
    });
    await app.ready();
    return app;
  } catch (error) {
    await app.close().catch(() => undefined);
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw error;
  }
}

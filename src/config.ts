import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';

export type DatabaseConfig =
  | { readonly type: 'sqlite'; readonly path: string }
  /** `mariadb`: the URL said `mariadb://` (TypeORM's MariaDB mode, see data-source.ts). */
  | { readonly type: 'mysql'; readonly url: string; readonly mariadb?: true };

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly isProduction: boolean;
  readonly database: DatabaseConfig;
  readonly jwtSecret: string;
  readonly jwtTtlSeconds: number;
  /** How long a refresh token (and so a session not refreshed since) stays valid. */
  readonly refreshTtlSeconds: number;
  /** How long a refresh token just spent by a refresh may be presented again for the same new pair. */
  readonly refreshReuseGraceSeconds: number;
  /** EVENTS_RETENTION: how long creature events stay kept for subscribers that resume (each trainer's last 1,000 stay longer). */
  readonly eventsRetentionSeconds: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly corsOrigins: readonly string[];
  readonly graphqlIntrospection: boolean;
  readonly sandbox: boolean;
  readonly bodyLimit: number;
  readonly redisUrl: string | undefined;
  /** REDIS_CLUSTER_NODES: a Redis Cluster's seed nodes, instead of REDIS_URL (empty without it). */
  readonly redisClusterNodes: readonly { readonly host: string; readonly port: number }[];
  readonly loginMaxFailures: number;
  readonly loginWindowSeconds: number;
  /** Failed logins per account an hour, from every address together, before RATE_LIMITED. */
  readonly loginAccountMaxFailures: number;
  readonly loginIpPerMinute: number;
  /** registerTrainer / POST /trainer attempts per client address per hour, successful or not. */
  readonly registerIpPerHour: number;
  /** How long a RATE_LIMITED answer to an anonymous attempt is held back (a tarpit; 0: not at all). */
  readonly rateLimitedDelayMs: number;
  /** Worker processes (node:cluster) sharing the port; 1 runs in this process. */
  readonly workers: number;
  /** On SIGTERM, how long /readyz says 503 before the server stops accepting (for load balancers to notice). */
  readonly shutdownDelayMs: number;
  /** When set, GET /metrics needs `Authorization: Bearer <metricsToken>`. */
  readonly metricsToken: string | undefined;
  /** SQL statements taking at least this long are logged as slow (without their parameters). */
  readonly slowQueryMs: number;
  /** The largest `offset` of any list (BAD_USER_INPUT above it): deeper pages are read by cursor. */
  readonly maxOffset: number;
  /** Take the client address from X-Forwarded-For (behind a load balancer). */
  readonly trustProxy: boolean | number | string;
  /** TRUSTED_DOCUMENTS: the manifest's file and its documents (SHA-256 of the text in hex -> the text). */
  readonly trustedDocuments: TrustedDocumentsManifest | undefined;
  /** Run pending migrations at start; false: only check, and serve nothing while any are pending. */
  readonly migrateOnStart: boolean;
  /** Read replicas of the MySQL primary (DATABASE_REPLICA_URLS). */
  readonly replicaUrls: readonly string[];
  /** A replica further behind than this gets no reads until it catches up (REPLICA_MAX_LAG). */
  readonly replicaMaxLagMs: number;
  /** OpenTelemetry traces are exported (OTEL_EXPORTER_OTLP_ENDPOINT set; telemetry/start.ts runs the SDK). */
  readonly tracing: boolean;
  /** FEDERATION: the GraphQL schema is an Apollo Federation 2 subgraph (`_service`, `_entities`). */
  readonly federation: boolean;
  /**
   * FEDERATION_ROUTER_SECRET: a request that carries it in `router-secret` comes from the
   * operators' router, whose planned documents run beside the TRUSTED_DOCUMENTS manifest's.
   */
  readonly routerSecret: string | undefined;
}

export interface TrustedDocumentsManifest {
  readonly file: string;
  readonly documents: ReadonlyMap<string, string>;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const DEFAULT_DATABASE_URL = 'sqlite:./data/registry.sqlite';
/** MAX_OFFSET unless configured (the API documents state it). */
export const DEFAULT_MAX_OFFSET = 10_000;
const MIN_SECRET_BYTES = 32;

const DURATION = /^(\d+)(ms|s|m|h|d)?$/;
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

/** Parses `90`, `90s`, `15m`, `1h`, `7d` into whole seconds (a bare number is seconds). */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const seconds = Math.floor(Number(match[1]) * UNIT_SECONDS[match[2] ?? 's']);
  return seconds >= 1 ? seconds : undefined;
}

const durationUpTo = (maxSeconds: number, maxText: string) =>
  z.string().transform((text, ctx) => {
    const seconds = parseDuration(text);
    if (seconds === undefined) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not a duration such as 90s, 15m, 1h or 7d` });
      return z.NEVER;
    }
    if (seconds > maxSeconds) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${maxText}` });
      return z.NEVER;
    }
    return seconds;
  });
const duration = durationUpTo(Number.MAX_SAFE_INTEGER, '');
/** Token lifetimes: dates beyond a year would only be mistakes (and far ones overflow DATETIME). */
const tokenLifetime = durationUpTo(365 * 86400, '365d');

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const flag = z
  .enum(['true', 'false', '1', '0', 'on', 'off', 'yes', 'no'], { message: 'must be true or false' })
  .transform((v) => ['true', '1', 'on', 'yes'].includes(v));

const databaseUrl = z.string().transform((url, ctx): DatabaseConfig => {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '') {
      ctx.addIssue({ code: 'custom', message: 'sqlite: needs a file path, e.g. sqlite:./data/registry.sqlite' });
      return z.NEVER;
    }
    return { type: 'sqlite', path: path === ':memory:' ? path : resolve(path) };
  }
  if (/^(mysql|mariadb):\/\//.test(url)) {
    try {
      const parsed = new URL(url);
      if (!parsed.hostname || parsed.pathname.length < 2) throw new Error('incomplete');
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must look like mysql://user:pass@host:3306/database' });
      return z.NEVER;
    }
    return url.startsWith('mariadb:') ? { type: 'mysql', url: url.replace(/^mariadb:/, 'mysql:'), mariadb: true } : { type: 'mysql', url };
  }
  ctx.addIssue({ code: 'custom', message: 'must start with sqlite: or mysql://' });
  return z.NEVER;
});

const envSchema = z.object({
  PORT: integer(0, 65535).default(4000),
  HOST: z.string().min(1).default('0.0.0.0'),
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  DATABASE_URL: databaseUrl.prefault(DEFAULT_DATABASE_URL),
  JWT_SECRET: z.string().optional(),
  JWT_TTL: tokenLifetime.default(3600),
  REFRESH_TTL: tokenLifetime.default(30 * 86400),
  // Long enough for a retry or a second tab; longer would only widen a thief's window.
  REFRESH_REUSE_GRACE: durationUpTo(300, '5m').default(10),
  // How long creature events stay kept for subscribers that resume (each trainer's last 1,000 stay whatever their age).
  EVENTS_RETENTION: durationUpTo(365 * 86400, '365d').default(86400),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ message: 'must be a comma-separated list of origins like https://app.example.com' }))),
  GRAPHQL_INTROSPECTION: flag.optional(),
  GRAPHQL_SANDBOX: flag.optional(),
  BODY_LIMIT: integer(1024, 64 * 1024 * 1024).default(102400),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\/[^/\s]+/, 'must look like redis://host:6379')
    .optional(),
  REDIS_CLUSTER_NODES: z
    .string()
    .transform((list) =>
      list
        .split(',')
        .map((node) => node.trim())
        .filter((node) => node !== ''),
    )
    .pipe(z.array(z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'must be comma-separated host:port pairs, e.g. redis-1:6379,redis-2:6379')).min(1))
    .transform((nodes) =>
      nodes.map((node) => ({ host: node.slice(0, node.lastIndexOf(':')), port: Number(node.slice(node.lastIndexOf(':') + 1)) })),
    )
    .refine((nodes) => nodes.every(({ port }) => port >= 1 && port <= 65535), 'must have ports 1..65535')
    .optional(),
  LOGIN_MAX_FAILURES: integer(1, 1000).default(5),
  LOGIN_WINDOW: duration.default(900),
  LOGIN_ACCOUNT_MAX_FAILURES: integer(1, 1_000_000).default(100),
  LOGIN_IP_PER_MINUTE: integer(1, 100000).default(30),
  REGISTER_IP_PER_HOUR: integer(1, 1_000_000).default(20),
  RATE_LIMITED_DELAY_MS: integer(0, 10_000).default(1000),
  SHUTDOWN_DELAY_MS: integer(0, 8000).default(0),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  SLOW_QUERY_MS: integer(0, 600_000).default(500),
  // GraphQL's Int ends at 2^31 - 1: a larger cap could not be reached there.
  MAX_OFFSET: integer(1, 2_147_483_647).default(DEFAULT_MAX_OFFSET),
  WORKERS: z
    .string()
    .regex(/^(auto|[1-9]\d{0,2})$/, 'must be auto or a number of processes')
    .transform((v) => (v === 'auto' ? availableParallelism() : Number(v)))
    .default(1),
  MIGRATE_ON_START: flag.default(true),
  DATABASE_REPLICA_URLS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((url) => url.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z.string().regex(/^(mysql|mariadb):\/\/[^/\s]+\/[^/\s]+$/, 'must be comma-separated URLs like mysql://user:pass@replica:3306/db'),
      ),
    )
    .default([]),
  REPLICA_MAX_LAG: z
    .string()
    .regex(/^\d+(ms|s)?$/, 'must be a duration such as 2s or 500ms')
    .transform((v) => (v.endsWith('ms') ? Number(v.slice(0, -2)) : Number(v.replace(/s$/, '')) * 1000))
    .pipe(z.number().int().min(100, 'must be at least 100ms').max(3_600_000, 'must be at most 3600s'))
    .default(2000),
  // Read by OpenTelemetry's exporters themselves (telemetry/sdk.ts); checked here so a mistake stops the start.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ message: 'must be a URL such as http://collector:4318' }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ message: 'must be a URL such as http://collector:4318/v1/traces' }).optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/json', 'http/protobuf'], { message: 'must be http/json or http/protobuf' }).optional(),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d+|[0-9a-fA-F.:/, ]+)$/, 'must be true, false, a hop count or a list of proxy addresses')
    .optional(),
  TRUSTED_DOCUMENTS: z.string().optional(),
  FEDERATION: flag.default(false),
  FEDERATION_ROUTER_SECRET: z.string().optional(),
});

type Env = Record<string, string | undefined>;

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  const name = String(issue.path[0] ?? 'environment');
  return `Invalid configuration: ${name} ${issue.message}`;
}

/** Drops empty values so that `PORT=` means "use the default", as shells and .env files expect. */
function present(env: Env): Env {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
}

function dataDirFor(database: DatabaseConfig): string {
  return database.type === 'sqlite' && database.path !== ':memory:' ? dirname(database.path) : resolve('data');
}

/** Reads only DATABASE_URL: enough for the TypeORM CLI, which must not need a JWT secret. */
export function loadDatabaseConfig(env: Env = process.env): DatabaseConfig {
  const parsed = envSchema.pick({ DATABASE_URL: true }).safeParse(present(env));
  if (!parsed.success) throw new ConfigError(describe(parsed.error));
  return parsed.data.DATABASE_URL;
}

/**
 * In development a missing JWT_SECRET is generated once and kept in the data folder,
 * so tokens survive restarts. Production never generates one.
 */
function developmentSecret(dataDir: string): string {
  const file = join(dataDir, 'jwt-secret');
  const read = () => readFileSync(file, 'utf8').trim();
  try {
    const existing = read();
    if (Buffer.byteLength(existing) >= MIN_SECRET_BYTES) return existing;
    throw new ConfigError(`Invalid configuration: JWT_SECRET kept in ${file} is shorter than ${MIN_SECRET_BYTES} bytes; delete the file`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  try {
    // 'wx': when two processes start together, the first writer wins and the other reads its secret.
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return read();
    throw error;
  }
}

function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

const MANIFEST_KEY = /^(?:sha256:)?([0-9a-fA-F]{64})$/;

/**
 * TRUSTED_DOCUMENTS: graphql-codegen's `persisted-documents.json` (client preset,
 * `persistedDocuments: true`), an object of `"<sha256 hex>"` (or `"sha256:<hex>"`) -> the
 * document's text. Each key must be the SHA-256 of its text: clients send that hash, and a key
 * that is not the text's would let a document run under another's id. Whether the documents
 * validate against the schema is checked where the schema is built (graphql/trusted-documents.ts).
 */
function loadManifest(file: string): TrustedDocumentsManifest {
  const path = resolve(file);
  const invalid = (reason: string) => new ConfigError(`Invalid configuration: TRUSTED_DOCUMENTS ${path} ${reason}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw invalid(`cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid('is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalid('must be a JSON object of "<sha256 hex>": "<document>"');
  }
  const documents = new Map<string, string>();
  for (const [key, source] of Object.entries(parsed)) {
    const hash = MANIFEST_KEY.exec(key)?.[1]?.toLowerCase();
    if (hash === undefined) throw invalid(`has the key "${key.slice(0, 80)}", which is not a SHA-256 in hex (optionally "sha256:<hex>")`);
    if (typeof source !== 'string' || source.trim() === '') throw invalid(`document ${hash}: its value must be the document's text`);
    if (createHash('sha256').update(source).digest('hex') !== hash)
      throw invalid(`document ${hash}: the key is not the SHA-256 of its text`);
    documents.set(hash, source);
  }
  if (documents.size === 0) throw invalid('holds no documents');
  return Object.freeze({ file: path, documents });
}

export function loadConfig(env: Env = process.env): Config {
  const parsed = envSchema.safeParse(present(env));
  if (!parsed.success) throw new ConfigError(describe(parsed.error));
  const e = parsed.data;
  const isProduction = e.NODE_ENV === 'production';
  const dataDir = dataDirFor(e.DATABASE_URL);

  if (e.DATABASE_REPLICA_URLS.length > 0 && e.DATABASE_URL.type !== 'mysql') {
    throw new ConfigError('Invalid configuration: DATABASE_REPLICA_URLS needs a MySQL DATABASE_URL (replicas of it)');
  }

  let jwtSecret = e.JWT_SECRET;
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret) < MIN_SECRET_BYTES) {
    throw new ConfigError(`Invalid configuration: JWT_SECRET must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  if (jwtSecret === undefined) {
    if (isProduction) {
      throw new ConfigError(`Invalid configuration: JWT_SECRET is required in production (at least ${MIN_SECRET_BYTES} bytes)`);
    }
    jwtSecret = developmentSecret(dataDir);
  }

  if (e.REDIS_URL !== undefined && e.REDIS_CLUSTER_NODES !== undefined) {
    throw new ConfigError('Invalid configuration: REDIS_URL and REDIS_CLUSTER_NODES are both set: one Redis, or one Redis Cluster');
  }

  const routerSecret = e.FEDERATION_ROUTER_SECRET;
  if (routerSecret !== undefined && Buffer.byteLength(routerSecret) < MIN_SECRET_BYTES) {
    throw new ConfigError(`Invalid configuration: FEDERATION_ROUTER_SECRET must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  if (routerSecret !== undefined && !e.FEDERATION) {
    throw new ConfigError(
      'Invalid configuration: FEDERATION_ROUTER_SECRET is set but FEDERATION is not: the secret is for a router in front of a subgraph',
    );
  }
  if (e.FEDERATION && e.TRUSTED_DOCUMENTS !== undefined && routerSecret === undefined) {
    throw new ConfigError(
      `Invalid configuration: FEDERATION_ROUTER_SECRET is required (at least ${MIN_SECRET_BYTES} bytes) when FEDERATION and TRUSTED_DOCUMENTS are both set: the router sends it with the documents it plans`,
    );
  }

  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    isProduction,
    database: Object.freeze(e.DATABASE_URL),
    jwtSecret,
    jwtTtlSeconds: e.JWT_TTL,
    refreshTtlSeconds: e.REFRESH_TTL,
    refreshReuseGraceSeconds: e.REFRESH_REUSE_GRACE,
    eventsRetentionSeconds: e.EVENTS_RETENTION,
    logLevel: e.LOG_LEVEL,
    corsOrigins: Object.freeze(e.CORS_ORIGINS),
    graphqlIntrospection: e.GRAPHQL_INTROSPECTION ?? !isProduction,
    sandbox: e.GRAPHQL_SANDBOX ?? !isProduction,
    bodyLimit: e.BODY_LIMIT,
    redisUrl: e.REDIS_URL,
    redisClusterNodes: Object.freeze(e.REDIS_CLUSTER_NODES ?? []),
    loginMaxFailures: e.LOGIN_MAX_FAILURES,
    loginWindowSeconds: e.LOGIN_WINDOW,
    loginAccountMaxFailures: e.LOGIN_ACCOUNT_MAX_FAILURES,
    loginIpPerMinute: e.LOGIN_IP_PER_MINUTE,
    registerIpPerHour: e.REGISTER_IP_PER_HOUR,
    rateLimitedDelayMs: e.RATE_LIMITED_DELAY_MS,
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    shutdownDelayMs: e.SHUTDOWN_DELAY_MS,
    metricsToken: e.METRICS_TOKEN,
    slowQueryMs: e.SLOW_QUERY_MS,
    maxOffset: e.MAX_OFFSET,
    workers: e.WORKERS,
    trustedDocuments: e.TRUSTED_DOCUMENTS === undefined ? undefined : loadManifest(e.TRUSTED_DOCUMENTS),
    migrateOnStart: e.MIGRATE_ON_START,
    replicaUrls: Object.freeze(e.DATABASE_REPLICA_URLS.map((url) => url.replace(/^mariadb:/, 'mysql:'))),
    replicaMaxLagMs: e.REPLICA_MAX_LAG,
    tracing: e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined,
    federation: e.FEDERATION,
    routerSecret,
  });
}

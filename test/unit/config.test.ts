import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseDuration } from '../../src/config';

const SECRET = 's'.repeat(32);

describe('loadConfig', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'registry-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const sqlite = () => `sqlite:${join(dir, 'db.sqlite')}`;

  it('applies the documented defaults', () => {
    const config = loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET });
    expect(config).toMatchObject({
      port: 4000,
      host: '0.0.0.0',
      isProduction: false,
      jwtTtlSeconds: 3600,
      logLevel: 'info',
      corsOrigins: [],
      graphqlIntrospection: true,
      sandbox: true,
      bodyLimit: 102400,
      maxOffset: 10000,
      redisUrl: undefined,
      loginMaxFailures: 5,
      loginWindowSeconds: 900,
      loginAccountMaxFailures: 100,
      loginIpPerMinute: 30,
      refreshReuseGraceSeconds: 10,
      trustProxy: false,
      shutdownDelayMs: 0,
      slowQueryMs: 500,
      workers: 1,
    });
    expect(config.database).toEqual({ type: 'sqlite', path: join(dir, 'db.sqlite') });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('defaults to ./data/registry.sqlite', () => {
    const config = loadConfig({ JWT_SECRET: SECRET });
    expect(config.database).toEqual({ type: 'sqlite', path: join(process.cwd(), 'data', 'registry.sqlite') });
  });

  it('reads a MySQL URL, CORS origins and a TTL', () => {
    const config = loadConfig({
      DATABASE_URL: 'mysql://user:pass@db.internal:3306/registry',
      JWT_SECRET: SECRET,
      CORS_ORIGINS: 'https://app.example.com, http://localhost:3000',
      JWT_TTL: '15m',
    });
    expect(config.database).toEqual({ type: 'mysql', url: 'mysql://user:pass@db.internal:3306/registry' });
    expect(config.corsOrigins).toEqual(['https://app.example.com', 'http://localhost:3000']);
    expect(config.jwtTtlSeconds).toBe(900);
  });

  it('takes refresh tokens to live 30 days unless REFRESH_TTL says otherwise (at most 365 days)', () => {
    expect(loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET }).refreshTtlSeconds).toBe(30 * 86400);
    expect(loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET, REFRESH_TTL: '365d' }).refreshTtlSeconds).toBe(365 * 86400);
  });

  it.each([
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgres://x/y' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://host-without-database' }],
    ['JWT_TTL', { JWT_TTL: 'forever' }],
    ['JWT_TTL', { JWT_TTL: '366d' }],
    ['REFRESH_TTL', { REFRESH_TTL: '999999999999d' }],
    ['REFRESH_TTL', { REFRESH_TTL: '0s' }],
    ['REFRESH_REUSE_GRACE', { REFRESH_REUSE_GRACE: 'soon' }],
    ['REFRESH_REUSE_GRACE', { REFRESH_REUSE_GRACE: '6m' }],
    ['LOGIN_ACCOUNT_MAX_FAILURES', { LOGIN_ACCOUNT_MAX_FAILURES: '0' }],
    ['NODE_ENV', { NODE_ENV: 'staging' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'not a url' }],
    ['BODY_LIMIT', { BODY_LIMIT: '-5' }],
    ['GRAPHQL_INTROSPECTION', { GRAPHQL_INTROSPECTION: 'maybe' }],
    ['JWT_SECRET', { JWT_SECRET: 'short' }],
    ['REDIS_URL', { REDIS_URL: 'localhost:6379' }],
    ['LOGIN_MAX_FAILURES', { LOGIN_MAX_FAILURES: '0' }],
    ['LOGIN_WINDOW', { LOGIN_WINDOW: 'a while' }],
    ['LOGIN_IP_PER_MINUTE', { LOGIN_IP_PER_MINUTE: 'many' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'yes please' }],
    ['WORKERS', { WORKERS: 'many' }],
    ['SLOW_QUERY_MS', { SLOW_QUERY_MS: 'slow' }],
    ['METRICS_TOKEN', { METRICS_TOKEN: 'short' }],
    ['MAX_OFFSET', { MAX_OFFSET: '0' }],
    ['MAX_OFFSET', { MAX_OFFSET: '-5' }],
    ['MAX_OFFSET', { MAX_OFFSET: '1e4' }],
    ['MAX_OFFSET', { MAX_OFFSET: '2147483648' }],
    ['MIGRATE_ON_START', { MIGRATE_ON_START: 'later' }],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector' }],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }],
    ['DATABASE_REPLICA_URLS', { DATABASE_REPLICA_URLS: 'replica:3306' }],
    ['DATABASE_REPLICA_URLS', { DATABASE_URL: 'mysql://p/db', DATABASE_REPLICA_URLS: 'mysql://r/db,postgres://r/db' }],
    ['DATABASE_REPLICA_URLS', { DATABASE_REPLICA_URLS: 'mysql://r/db' }],
    ['REPLICA_MAX_LAG', { DATABASE_URL: 'mysql://p/db', REPLICA_MAX_LAG: 'soon' }],
    ['REPLICA_MAX_LAG', { DATABASE_URL: 'mysql://p/db', REPLICA_MAX_LAG: '10ms' }],
  ])('fails with one line naming %s', (name, env) => {
    const load = () => loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET, ...env });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(`^Invalid configuration: ${name} [^\\n]+$`));
  });

  it('migrates at start unless MIGRATE_ON_START=false; traces when an OTLP endpoint is set', () => {
    const base = { DATABASE_URL: sqlite(), JWT_SECRET: SECRET };
    expect(loadConfig(base)).toMatchObject({ migrateOnStart: true, tracing: false });
    expect(loadConfig({ ...base, MIGRATE_ON_START: 'false' }).migrateOnStart).toBe(false);
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).tracing).toBe(true);
  });

  it('reads replica URLs of a MySQL primary and their maximum lag (2 s by default)', () => {
    const base = { DATABASE_URL: 'mysql://u@primary:3306/registry', JWT_SECRET: SECRET };
    expect(loadConfig(base)).toMatchObject({ replicaUrls: [], replicaMaxLagMs: 2000 });
    expect(
      loadConfig({ ...base, DATABASE_REPLICA_URLS: 'mysql://u@r1:3306/registry, mariadb://u@r2/registry', REPLICA_MAX_LAG: '500ms' }),
    ).toMatchObject({ replicaUrls: ['mysql://u@r1:3306/registry', 'mysql://u@r2/registry'], replicaMaxLagMs: 500 });
    expect(loadConfig({ ...base, REPLICA_MAX_LAG: '5s' }).replicaMaxLagMs).toBe(5000);
  });

  it('takes MAX_OFFSET as a positive whole number', () => {
    expect(loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET, MAX_OFFSET: '50' }).maxOffset).toBe(50);
  });

  it('refuses to start in production without a JWT_SECRET', () => {
    expect(() => loadConfig({ DATABASE_URL: sqlite(), NODE_ENV: 'production' })).toThrow(
      /^Invalid configuration: JWT_SECRET is required in production/,
    );
  });

  it('turns Sandbox and introspection off in production unless asked for', () => {
    const prod = loadConfig({ DATABASE_URL: sqlite(), NODE_ENV: 'production', JWT_SECRET: SECRET });
    expect(prod).toMatchObject({ graphqlIntrospection: false, sandbox: false, isProduction: true });
    const forced = loadConfig({ DATABASE_URL: sqlite(), NODE_ENV: 'production', JWT_SECRET: SECRET, GRAPHQL_INTROSPECTION: 'true' });
    expect(forced.graphqlIntrospection).toBe(true);
  });

  describe('TRUSTED_DOCUMENTS', () => {
    const text = 'query Me { me { id } }';
    const hash = createHash('sha256').update(text).digest('hex');
    const manifest = (content: string) => {
      const file = join(dir, `manifest-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, content);
      return file;
    };
    const load = (file: string) => () => loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET, TRUSTED_DOCUMENTS: file });

    it("reads graphql-codegen's manifest, keys with or without sha256:", () => {
      const other = 'query Other { me { nickname } }';
      const otherHash = createHash('sha256').update(other).digest('hex');
      const file = manifest(JSON.stringify({ [`sha256:${hash}`]: text, [otherHash.toUpperCase()]: other }));
      const config = loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET, TRUSTED_DOCUMENTS: file });
      expect(config.trustedDocuments?.file).toBe(file);
      expect([...(config.trustedDocuments?.documents ?? [])]).toEqual([
        [hash, text],
        [otherHash, other],
      ]);
      expect(loadConfig({ DATABASE_URL: sqlite(), JWT_SECRET: SECRET }).trustedDocuments).toBeUndefined();
    });

    it.each([
      ['a missing file', () => join(dir, 'nowhere.json'), /cannot be read \(ENOENT\)$/],
      ['a file that is not JSON', () => manifest('{ "a": '), /is not JSON$/],
      ['an array', () => manifest('[]'), /must be a JSON object/],
      ['an empty manifest', () => manifest('{}'), /holds no documents$/],
      ['a key that is no SHA-256', () => manifest(JSON.stringify({ Me: text })), /has the key "Me", which is not a SHA-256/],
      ['a value that is no text', () => manifest(JSON.stringify({ [hash]: 5 })), new RegExp(`document ${hash}: its value must be`)],
      [
        "a key that is not its text's SHA-256",
        () => manifest(JSON.stringify({ [hash]: `${text} ` })),
        new RegExp(`document ${hash}: the key is not the SHA-256 of its text$`),
      ],
    ])('fails start-up on %s, naming the file', (_what, file, reason) => {
      const path = file();
      expect(load(path)).toThrow(ConfigError);
      expect(load(path)).toThrow(`Invalid configuration: TRUSTED_DOCUMENTS ${path} `);
      expect(load(path)).toThrow(reason);
    });
  });

  it('generates a development secret once in the data folder and reuses it', () => {
    const first = loadConfig({ DATABASE_URL: sqlite() });
    const second = loadConfig({ DATABASE_URL: sqlite() });
    expect(Buffer.byteLength(first.jwtSecret)).toBeGreaterThanOrEqual(32);
    expect(second.jwtSecret).toBe(first.jwtSecret);
    expect(readFileSync(join(dir, 'jwt-secret'), 'utf8').trim()).toBe(first.jwtSecret);
    expect(statSync(join(dir, 'jwt-secret')).mode & 0o777).toBe(0o600);
  });
});

describe('federation and Redis Cluster settings', () => {
  const base = { DATABASE_URL: 'sqlite::memory:', JWT_SECRET: SECRET };
  it('refuses a router secret without FEDERATION (it would let a client past the manifest on a server that is no subgraph)', () => {
    expect(() => loadConfig({ ...base, FEDERATION_ROUTER_SECRET: 'r'.repeat(32) })).toThrow(
      /FEDERATION_ROUTER_SECRET is set but FEDERATION is not/,
    );
    expect(loadConfig({ ...base, FEDERATION: 'true', FEDERATION_ROUTER_SECRET: 'r'.repeat(32) }).routerSecret).toBe('r'.repeat(32));
  });

  it('refuses Redis Cluster nodes with a port out of range', () => {
    expect(() => loadConfig({ ...base, REDIS_CLUSTER_NODES: 'a:70000' })).toThrow(/REDIS_CLUSTER_NODES must have ports 1..65535/);
  });
});

describe('parseDuration', () => {
  it.each([
    ['90', 90],
    ['90s', 90],
    ['15m', 900],
    ['1h', 3600],
    ['7d', 604800],
  ])('reads %s as %d seconds', (text, seconds) => expect(parseDuration(text)).toBe(seconds));

  it.each(['', '1x', '-1h', '0', '1.5h', '500ms'])('rejects %j', (text) => expect(parseDuration(text)).toBeUndefined());
});

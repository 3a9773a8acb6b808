import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createTestDatabase, databases, TEST_JWT_SECRET } from '../helpers/app';
import { EVENTS, until, watch } from '../helpers/events';
import { startOtlpReceiver, type AttributeValue, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';
import { REDIS_TEST_URL, redisReachable } from '../helpers/redis';
import { freePort } from '../helpers/ports';

/*
 * Traces as an operator gets them: the real process (src/main.ts through ts-node) with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP receiver, in JSON and in protobuf. Over
 * REST, GraphQL (graphql-js and the compiled plans) and WebSocket: a span per
 * request and per message, per GraphQL operation, per SQL statement (MySQL) and Redis command;
 * an incoming traceparent continued; trace_id in the log lines; and no password, token, email,
 * name or variable value in any attribute, event or span name.
 */

const root = join(__dirname, '..', '..');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every string a span carries: its name, attribute values, events and status message. */
function textsOf(span: ReceivedSpan): string[] {
  const flat = (value: AttributeValue): string[] =>
    value === null
      ? []
      : Array.isArray(value)
        ? value.flatMap(flat)
        : typeof value === 'object'
          ? Object.values(value).flatMap(flat)
          : [String(value)];
  return [
    span.name,
    span.status.message,
    ...Object.values(span.attributes).flatMap(flat),
    ...Object.values(span.resource).flatMap(flat),
    ...span.events.flatMap((event) => [event.name, ...Object.values(event.attributes).flatMap(flat)]),
  ];
}

const protocols = ['http/json', 'http/protobuf'] as const;
const cases = databases.flatMap((kind) => protocols.map((protocol) => [kind, protocol] as const));

describe.each(cases)('traces on %s over OTLP %s', (kind, protocol) => {
  let child: ChildProcess | undefined;
  let receiver: OtlpReceiver | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await receiver?.close();
    await drop?.();
  });

  it('exports spans for REST, GraphQL, WebSocket, SQL and Redis, continues traceparent, puts trace_id in logs, and carries no value', async () => {
    const withRedis = await redisReachable('the Redis spans of the tracing test');
    receiver = await startOtlpReceiver();
    const database = await createTestDatabase(kind);
    drop = () => database.drop();
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    let output = '';
    child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: database.url,
        JWT_SECRET: TEST_JWT_SECRET,
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_BSP_SCHEDULE_DELAY: '200',
        // Counted in the shared Redis across runs: the registration limit has its own test.
        REGISTER_IP_PER_HOUR: '1000000',
        ...(withRedis ? { REDIS_URL: REDIS_TEST_URL } : {}),
      },
    });
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', resolve));
    for (let i = 0; i < 150; i += 1) {
      const status = await fetch(`${origin}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      await sleep(200);
    }

    const unique = randomBytes(4).toString('hex');
    const secrets = {
      email: `tracer${unique}@example.test`,
      password: `pw-${unique}-never-traced`,
      nickname: `tracer_${unique}`,
      firstName: `Firstname${unique}`,
      creature: `Sparky${unique}`,
      number: String(100_000_000 + parseInt(unique, 16)),
    };
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`${origin}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    // REST, continuing the caller's trace.
    const registered = await post(
      '/trainer',
      { ...secrets, lastName: 'Trace', team: 'MYSTIC', creature: undefined, number: undefined },
      { traceparent: `00-${traceId}-${parentId}-01` },
    );
    expect(registered.status).toBe(201);
    const trainerId = String(registered.body.id);

    // GraphQL with variables, and with the same values written inline as literals.
    const login = await post('/graphql', {
      query:
        'mutation Login($email: String!, $password: String!) { authenticate(email: $email, password: $password) { token refreshToken } }',
      variables: { email: secrets.email, password: secrets.password },
      operationName: 'Login',
    });
    const { token, refreshToken } = (login.body.data as { authenticate: { token: string; refreshToken: string } }).authenticate;
    const inline = await post('/graphql', {
      query: `mutation { authenticate(email: "${secrets.email}", password: "${secrets.password}") { token } }`,
    });
    expect(inline.status).toBe(200);
    // A literal of the wrong type: graphql-js's validation message quotes it.
    const invalid = await post('/graphql', {
      query: `mutation { authenticate(email: "${secrets.email}", password: ${secrets.number}) { token } }`,
    });
    expect(invalid.status).toBe(400);
    const auth = { authorization: `Bearer ${token}` };

    // A query sent often enough to be compiled, then run by its compiled plan (graphql/executor.ts).
    const GET_TRAINER = 'query GetTrainer($id: ID!) { trainer(id: $id) { id nickname email } }';
    const reads = 14;
    for (let i = 0; i < reads; i += 1) {
      const read = await post('/graphql', { query: GET_TRAINER, variables: { id: trainerId } }, auth);
      expect(read.body).toEqual({ data: { trainer: { id: trainerId, nickname: secrets.nickname, email: secrets.email } } });
    }

    // REST read with a filter value in its query string.
    const search = await fetch(`${origin}/trainer?nickname=${secrets.nickname}`, { headers: auth });
    expect(search.status).toBe(200);

    // WebSocket: a named subscription, an event through it.
    const watching = watch(origin, token, trainerId, EVENTS.replace('subscription(', 'subscription Watch('));
    await watching.connected;
    await sleep(300);
    const created = await post(
      '/graphql',
      {
        query:
          'mutation Add($trainerId: ID!, $input: CreateCreatureInput!) { createCreature(trainerId: $trainerId, input: $input) { id } }',
        variables: { trainerId, input: { name: secrets.creature, speciesId: 25, level: 5 } },
      },
      auth,
    );
    expect(created.body.errors).toBeUndefined();
    await until(() => watching.events.length === 1, 'the creature event');
    await watching.client.dispose();

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const spans = receiver.spans;

    // The exporter spoke the protocol asked for.
    expect([...receiver.contentTypes]).toEqual([protocol === 'http/json' ? 'application/json' : 'application/x-protobuf']);
    expect(spans[0].resource['service.name']).toBe('creature-registry');

    // A span per request, named by its route.
    const names = spans.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(['POST /trainer', 'POST /graphql', 'GET /trainer']));
    expect(names.some((n) => /readyz|healthz/.test(n))).toBe(false);

    // The caller's traceparent is continued.
    const register = spans.find((s) => s.name === 'POST /trainer')!;
    expect(register.traceId).toBe(traceId);
    expect(register.parentSpanId).toBe(parentId);

    // A span per GraphQL operation, inside its request's trace, on every route (compiled runs too).
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const operations = spans.filter((s) => s.scope === 'creature-registry' && !s.name.startsWith('graphql-ws'));
    const getTrainer = operations.filter((s) => s.name === 'query GetTrainer');
    expect(getTrainer).toHaveLength(reads);
    for (const span of getTrainer) {
      expect(span.attributes).toMatchObject({ 'graphql.operation.type': 'query', 'graphql.operation.name': 'GetTrainer' });
      expect(byId.get(span.parentSpanId)?.name).toBe('POST /graphql');
    }
    expect(operations.filter((s) => s.name === 'mutation Login')).toHaveLength(1);
    expect(operations.filter((s) => s.name === 'mutation')).toHaveLength(1);
    expect(operations.filter((s) => s.name === 'mutation Add')).toHaveLength(1);

    // A span per WebSocket message; the subscribe's names its operation.
    const subscribe = spans.find((s) => s.name === 'graphql-ws subscribe');
    expect(subscribe?.attributes).toMatchObject({ 'graphql.operation.type': 'subscription', 'graphql.operation.name': 'Watch' });
    expect(names).toContain('graphql-ws connection_init');

    // SQL statements, as text with placeholders, inside the requests' traces (MySQL: mysql2's
    // instrumentation; SQLite: the service's own).
    const system = kind === 'mysql' ? 'mysql' : 'sqlite';
    const sql = spans.filter((s) => s.attributes['db.system.name'] === system || s.attributes['db.system'] === system);
    expect(sql.length).toBeGreaterThan(reads);
    const statements = sql.map((s) => s.attributes['db.query.text'] ?? s.attributes['db.statement']).filter((t) => typeof t === 'string');
    expect(statements.some((text) => /INSERT INTO trainer\b/i.test(text) && text.includes('?'))).toBe(true);
    expect(sql.some((s) => s.traceId === traceId)).toBe(true);
    // Redis commands, by name only.
    if (withRedis) {
      const redis = spans.filter((s) => s.attributes['db.system'] === 'redis' || s.attributes['db.system.name'] === 'redis');
      expect(redis.length).toBeGreaterThan(0);
    }

    // Log lines carry the trace of their request.
    const lines = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const completed = lines.filter((line) => line.msg === 'request completed');
    expect(completed.length).toBeGreaterThan(reads);
    expect(completed.every((line) => typeof line.trace_id === 'string' && /^[0-9a-f]{32}$/.test(line.trace_id))).toBe(true);
    expect(completed.find((line) => line.route === '/trainer' && line.method === 'POST')?.trace_id).toBe(traceId);
    const traced = new Set(spans.map((s) => s.traceId));
    expect(completed.every((line) => traced.has(line.trace_id as string))).toBe(true);

    // Nothing a client sent as a value, and no credential, in any span.
    const forbidden = [
      ...Object.values(secrets),
      token,
      refreshToken,
      TEST_JWT_SECRET,
      trainerId === '1' ? 'never' : `/trainer/${trainerId}`,
    ];
    const leaks = spans.flatMap((span) =>
      textsOf(span)
        .filter((text) => forbidden.some((value) => text.includes(value)))
        .map((text) => `${span.name}: ${text}`),
    );
    expect(leaks).toEqual([]);
  });
});

describe('tracing off', () => {
  it("loads nothing of the OpenTelemetry SDK, its instrumentations or the app's span code", () => {
    // The app as main.ts builds it, without OTEL_EXPORTER_OTLP_ENDPOINT, after answering a request.
    const script = `
      require('reflect-metadata');
      require('./src/telemetry/start');
      const { buildApp } = require('./src/app');
      const { loadConfig } = require('./src/config');
      buildApp(loadConfig({ DATABASE_URL: 'sqlite::memory:', JWT_SECRET: '${TEST_JWT_SECRET}', LOG_LEVEL: 'silent' })).then(async (app) => {
        await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } });
        const loaded = Object.keys(require.cache).filter((p) => p.includes('@opentelemetry') || p.includes('telemetry/sdk') || p.includes('telemetry/spans'));
        process.stdout.write(JSON.stringify(loaded));
        await app.close();
      });
    `;
    const result = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.stderr).toBe('');
    // prom-client may load OpenTelemetry's API package (for exemplars): that is not the SDK.
    expect((JSON.parse(result.stdout) as string[]).filter((path) => !path.includes('@opentelemetry/api/'))).toEqual([]);
  });
});

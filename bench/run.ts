// `npm run bench`: seeds a database at scale, starts the service (production mode) and the
// bare baseline beside it, drives both with autocannon case after case (alternating, in rounds),
// and reports req/s, p50/p99, SQL statements per operation and the server's RSS, as a table,
// bench/results/<timestamp>.json and .md, and an SVG chart. `--quick` is a few-second SQLite
// smoke run. See README.md, "Performance".
import autocannon, { type Request as AutocannonRequest, type Result } from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createConnection, type Connection } from 'mysql2/promise';
import { renderAbuse, runAbuse } from './abuse';
import { renderCluster, runCluster } from './cluster';
import { renderEvents, runEvents } from './events';
import { renderScale, runScale } from './scale';
import { CursorCodec } from '../src/common/cursor';
import { freePorts } from '../test/helpers/ports';
import { cpuMs, databaseProcess, memory, type DatabaseProcess } from './proc';
import { renderChart, renderMarkdown, renderTable, type CaseResult, type Report } from './report';
import { BENCH_PASSWORD, HEAVY_TRAINER, seed } from './seed';

const root = resolve(__dirname, '..');

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    trainers: { type: 'string' },
    creatures: { type: 'string' },
    // Creatures more for one trainer (HEAVY_TRAINER, on the page at offset 200): a page holding it costs what one without does.
    heavy: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    rounds: { type: 'string' },
    soak: { type: 'string' },
    workers: { type: 'string', default: '1' },
    'database-url': { type: 'string' },
    reseed: { type: 'boolean', default: false },
    // Run the service from src/ through ts-node instead of the dist/ build (the test suite does).
    'from-source': { type: 'boolean', default: false },
    out: { type: 'string' },
    // Only the cases whose names contain this text (and the baseline), without the storm and soak: for iterating.
    only: { type: 'string' },
    // Only the abuse section (bench/abuse.ts): what anonymous attackers cost.
    abuse: { type: 'boolean', default: false },
    // Only the live events section (bench/events.ts): two instances, MySQL and Redis, 1,000 subscribers.
    events: { type: 'boolean', default: false },
    // Only the scale section (bench/scale.ts): the service at several registry sizes, side by side.
    scale: { type: 'boolean', default: false },
    // Only the cluster section (bench/cluster.ts): three instances on a private three-node Galera cluster.
    cluster: { type: 'boolean', default: false },
    // With --cluster: writers per instance (default 8).
    writers: { type: 'string' },
    // With --scale: the sizes, comma-separated (default 100000,5000000).
    sizes: { type: 'string' },
    'redis-url': { type: 'string' },
    // The read replica of the case "one replica" (default: the bench database itself, reached as a replica).
    'replica-url': { type: 'string' },
    // With --events: write each instance's CPU profile (node --cpu-prof) into this folder.
    'cpu-prof': { type: 'string' },
    subscribers: { type: 'string' },
    rate: { type: 'string' },
    // With --events: the replay again with this many more kept events (default 2,000,000; 0: not again).
    'kept-events': { type: 'string' },
    // Another Node binary: one more instance of the service runs on it, and the main cases run on
    // both instances side by side in the same rounds, against the same baseline.
    'compare-node': { type: 'string' },
  },
});

const quick = args.quick ?? false;
const options = {
  trainers: Number(args.trainers ?? (quick ? 300 : 100_000)),
  creatures: Number(args.creatures ?? (quick ? 3000 : 1_000_000)),
  heavy: Number(args.heavy ?? (quick ? 1000 : 100_000)),
  duration: Number(args.duration ?? (quick ? 1 : 10)),
  connections: Number(args.connections ?? (quick ? 10 : 50)),
  rounds: Number(args.rounds ?? (quick ? 1 : 2)),
  soak: Number(args.soak ?? (quick ? 1 : 30)),
  workers: args.workers ?? '1',
  out: resolve(args.out ?? join(root, 'bench', 'results')),
};
const JWT_SECRET = randomBytes(32).toString('hex');
/** The heavy trainer's extra creatures, when the registry is big enough to hold it. */
const heavyCreatures = () => (options.trainers >= HEAVY_TRAINER ? options.heavy : 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

async function databaseUrl(): Promise<{ url: string; seeded: boolean }> {
  if (quick) {
    const dir = mkdtempSync(join(tmpdir(), 'registry-bench-'));
    return { url: `sqlite:${join(dir, 'bench.sqlite')}`, seeded: false };
  }
  const url = args['database-url'] ?? process.env.BENCH_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/registry_bench';
  const parsed = new URL(url);
  const name = parsed.pathname.slice(1);
  parsed.pathname = '/';
  const admin = await createConnection({ uri: parsed.toString() });
  try {
    if (!args.reseed) {
      // Creatures the create/delete case left when it was cut off between a create and its
      // delete (named b<hex>; the seed's are "Creature n"), and those of the events section
      // (named ev-...), were it cut off the same way: without them the sizes match again. Removed
      // by plain SQL, so their trainers' counts are made again, as `npm run reconcile` would.
      const left = `FROM \`${name}\`.creature WHERE (trainer_id = 1 AND name LIKE 'b%') OR name LIKE 'ev-%'`;
      const [owners] = await admin.query(`SELECT DISTINCT trainer_id AS id ${left}`).catch(() => [[]] as const);
      const ids = (owners as { id: number }[]).map((row) => Number(row.id));
      if (ids.length > 0) {
        await admin.query(`DELETE ${left}`);
        await admin.query(
          `UPDATE \`${name}\`.trainer t SET creatures_owned = (SELECT COUNT(*) FROM \`${name}\`.creature c WHERE c.trainer_id = t.id) WHERE t.id IN (?)`,
          [ids],
        );
      }
      const [rows] = await admin
        .query(`SELECT (SELECT COUNT(*) FROM \`${name}\`.trainer) AS t, (SELECT COUNT(*) FROM \`${name}\`.creature) AS c`)
        .catch(() => [[{ t: -1, c: -1 }]] as const);
      const counts = (rows as { t: number; c: number }[])[0];
      if (Number(counts.t) === options.trainers && Number(counts.c) === options.creatures + heavyCreatures()) return { url, seeded: true };
    }
    await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  } finally {
    await admin.end();
  }
  return { url, seeded: false };
}

const compareNode = args['compare-node'];
/** The version of `--compare-node`, as its cases are named. */
const comparedVersion = compareNode ? execFileSync(compareNode, ['--version'], { encoding: 'utf8' }).trim() : undefined;
/** The service cases that also run on the instance of `--compare-node`. */
const COMPARED_CASES = [
  'GraphQL trainer(id)',
  'REST GET /trainer/:id',
  'REST GET /trainer (list)',
  'GraphQL trainers page 100 × creatures 10',
  'GraphQL createCreature + deleteCreature',
];

/** The machine, and the Node versions of the bench (the baseline, the load, the service) and of `--compare-node`. */
function describeMachine(): string {
  const node = comparedVersion ? `Node ${process.version} (and ${comparedVersion} for the cases marked so)` : `Node ${process.version}`;
  return `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${node}`;
}

/** A process of the service (or, with `node`, the same on another Node binary), logging its stderr. */
function start(command: string[], env: Record<string, string>, name: string, node = process.execPath): ChildProcess {
  const child = spawn(node, command, {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (chunk: Buffer) => log(`${name}: ${chunk.toString().trim()}`));
  return child;
}

async function waitFor(url: string, child: ChildProcess, seconds = 120): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited (${child.exitCode})`);
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(200);
  }
  throw new Error(`${url} did not become ready`);
}

/** SQL statements sent, requests answered so far and password hashes under way (running or waiting), from the service's own /metrics. */
async function counters(base: string): Promise<{ statements: number; requests: number; hashing: number }> {
  const text = await fetch(`${base}/metrics`).then((r) => r.text());
  let requests = 0;
  for (const match of text.matchAll(/^http_requests_total\{[^}]*route="([^"]*)"[^}]*\} (\d+)/gm)) {
    if (match[1] !== '/metrics') requests += Number(match[2]);
  }
  let hashing = 0;
  for (const match of text.matchAll(/^password_hashes\{[^}]*\} (\d+)/gm)) hashing += Number(match[1]);
  return { statements: Number(/^db_statements_total (\d+)/m.exec(text)?.[1] ?? 0), requests, hashing };
}

/** The baseline's own counters: statements sent and requests answered. */
async function baselineCounters(base: string): Promise<{ statements: number; requests: number }> {
  return fetch(`${base}/stats`).then((r) => r.json() as Promise<{ statements: number; requests: number }>);
}

interface CaseSpec {
  name: string;
  /**
   * `traced`: a second instance of the service, the same but with tracing on (OTLP to a local
   * sink); `replicated`: a third, with one read replica (MySQL runs only); `compared`: a fourth,
   * the same as the first but on `--compare-node`; `federated`: a fifth, the same as the first
   * but a Federation subgraph (FEDERATION=true).
   */
  target: 'service' | 'baseline' | 'traced' | 'replicated' | 'compared' | 'federated';
  requests: AutocannonRequest[];
  /** Fewer connections than the rest: a latency case (the time one request takes, without queueing). */
  connections?: number;
}

/**
 * An autocannon run. Its latency histogram keeps whole milliseconds, so a fast request reads
 * 0 or 1 ms: at one connection, the p50 and mean are also taken from each answer's own time
 * (`exact`, from autocannon's 'response' events, in fractional ms; 2xx answers only, as its
 * histogram). Not at more connections, where every answer would cost the load generator a call.
 */
function run(
  url: string,
  requests: AutocannonRequest[],
  connections: number,
  duration: number,
): Promise<Result & { exact?: { p50: number; mean: number } }> {
  return new Promise((resolvePromise, reject) => {
    const times: number[] = [];
    const instance = autocannon({ url, connections, duration, requests }, (error: unknown, result) => {
      if (error) return reject(error instanceof Error ? error : new Error('autocannon failed', { cause: error }));
      if (times.length === 0) return resolvePromise(result);
      times.sort((a, b) => a - b);
      const mean = times.reduce((sum, time) => sum + time, 0) / times.length;
      return resolvePromise({ ...result, exact: { p50: times[Math.floor(times.length / 2)], mean } });
    });
    if (connections === 1)
      instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
        if (statusCode >= 200 && statusCode < 300) times.push(responseTime);
      });
  });
}

/** The database to measure on, seeded to the requested sizes (reused when it already is). */
async function prepareDatabase(): Promise<{ url: string; seedSeconds: number | null }> {
  mkdirSync(options.out, { recursive: true });
  const { url, seeded } = await databaseUrl();
  if (seeded) {
    log('database already seeded at these sizes (use --reseed to start over)');
    return { url, seedSeconds: null };
  }
  log(
    `seeding ${options.trainers} trainers and ${options.creatures} creatures (+${heavyCreatures()} for trainer ${HEAVY_TRAINER}) into ${url.replace(/\/\/[^@]*@/, '//')}`,
  );
  const seedSeconds = (await seed(url, options.trainers, options.creatures, heavyCreatures())).seconds;
  log(`seeded in ${seedSeconds.toFixed(1)} s`);
  return { url, seedSeconds };
}

const TRAINER = 'query Trainer($id: ID!) { trainer(id: $id) { id nickname firstName lastName team creaturesOwned createdAt } }';
// The issue's nested page, as a frontend asks for it: the first page.
const PAGE =
  'query Page($offset: Int!) { trainers(limit: 100, offset: $offset) { items { id creaturesOwned creatures(limit: 10) { id name } } } }';
// A list as a frontend shows it: a page of trainers at a random offset, with the total.
const LIST =
  'query List($offset: Int!) { trainers(limit: 20, offset: $offset) { totalCount items { id nickname firstName lastName team creaturesOwned createdAt } } }';
const DEEP = 'query Deep($offset: Int!) { trainers(limit: 20, offset: $offset) { items { id nickname } } }';
const CURSOR = 'query Walk($after: String) { trainers(limit: 20, after: $after) { items { id nickname } nextCursor } }';
const CONTAINS = 'query Search($q: String!) { trainers(limit: 20, filter: { nicknameContains: $q }) { totalCount items { id nickname } } }';
const END = 'query End($after: String) { trainers(limit: 1, after: $after) { nextCursor } }';
const CREATE = 'mutation C($input: CreateCreatureInput!) { createCreature(trainerId: "1", input: $input) { id } }';
const DELETE = 'mutation D($id: ID!) { deleteCreature(id: $id) { id } }';
/** The id a client names a document by: the SHA-256 of its text. */
const documentId = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/**
 * TRUSTED_DOCUMENTS of the benchmarked service (graphql-codegen's persisted-documents.json): every
 * document the cases send, as a frontend's manifest holds its operations. In production nothing
 * else runs, so the cases that send text run trusted documents by their identical text, and
 * `trainer(id)` is measured both ways: by text and by documentId.
 */
function writeManifest(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'registry-bench-manifest-')), 'persisted-documents.json');
  const documents = [TRAINER, PAGE, LIST, DEEP, CURSOR, CONTAINS, END, CREATE, DELETE];
  writeFileSync(file, `${JSON.stringify(Object.fromEntries(documents.map((text) => [documentId(text), text])), null, 2)}\n`);
  return file;
}

interface Servers {
  service: ChildProcess;
  readonly baseline: ChildProcess;
  /** The service with OTEL_EXPORTER_OTLP_ENDPOINT set (protobuf, the default protocol), exporting to `sink`. */
  readonly traced: ChildProcess;
  readonly serviceBase: string;
  readonly baselineBase: string;
  readonly tracedBase: string;
  /** The service with DATABASE_REPLICA_URLS set (MySQL runs only). */
  readonly replicated: ChildProcess | undefined;
  readonly replicatedBase: string;
  /** Whether that replica is a server of its own (`--replica-url`), not the bench database reached again. */
  readonly replicaElsewhere: boolean;
  /** The service on `--compare-node`. */
  readonly compared: ChildProcess | undefined;
  readonly comparedBase: string;
  /** The service as a Federation subgraph (FEDERATION=true). */
  readonly federated: ChildProcess;
  readonly federatedBase: string;
  readonly sink: Server;
  /** Starts the service again, as `npm start` would (for the soak runs on a fresh process). */
  restartService(): Promise<void>;
  readonly nodeFlags: string[];
}

/**
 * An OTLP/HTTP receiver that takes every export and keeps nothing: what tracing costs the
 * service, not what a collector costs.
 */
async function otlpSink(): Promise<Server> {
  const sink = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolveListen) => sink.listen(0, '127.0.0.1', resolveListen));
  return sink;
}

/**
 * The service with the Node flags of `npm start` (what is deployed), the same with tracing on,
 * and the baseline beside them; all ready. With `trusted`, the services run only the bench's own
 * documents (writeManifest).
 */
async function startServers(url: string, trusted: boolean): Promise<Servers> {
  const [servicePort, baselinePort, tracedPort, replicatedPort, comparedPort, federatedPort] = await freePorts(6);
  const startScript = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const nodeFlags = startScript.split(/\s+/).filter((word) => word.startsWith('--'));
  const entry = [...nodeFlags, ...(args['from-source'] ? ['-r', 'ts-node/register/transpile-only', 'src/main.ts'] : ['dist/src/main.js'])];
  const serviceEnv = {
    NODE_ENV: 'production',
    PORT: String(servicePort),
    HOST: '127.0.0.1',
    DATABASE_URL: url,
    JWT_SECRET,
    LOG_LEVEL: 'warn',
    // The login storm case measures hashing load, not the brute-force limit.
    LOGIN_IP_PER_MINUTE: '100000',
    // The abuse section poses as many clients through X-Forwarded-For; no other case sends it.
    TRUST_PROXY: 'true',
    LOGIN_MAX_FAILURES: '1000',
    WORKERS: options.workers,
    ...(trusted ? { TRUSTED_DOCUMENTS: writeManifest() } : {}),
  };
  const sink = await otlpSink();
  const replicaUrl = args['replica-url'] ?? process.env.BENCH_REPLICA_URL ?? url;
  const servers: Servers = {
    service: start(entry, serviceEnv, 'service'),
    traced: start(
      entry,
      {
        ...serviceEnv,
        PORT: String(tracedPort),
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
        OTEL_SERVICE_NAME: 'creature-registry-bench',
      },
      'traced',
    ),
    tracedBase: `http://127.0.0.1:${tracedPort}`,
    replicated: url.startsWith('mysql:')
      ? start(entry, { ...serviceEnv, PORT: String(replicatedPort), DATABASE_REPLICA_URLS: replicaUrl }, 'replicated')
      : undefined,
    replicatedBase: `http://127.0.0.1:${replicatedPort}`,
    replicaElsewhere: replicaUrl !== url,
    compared: compareNode ? start(entry, { ...serviceEnv, PORT: String(comparedPort) }, 'compared', compareNode) : undefined,
    comparedBase: `http://127.0.0.1:${comparedPort}`,
    federated: start(
      entry,
      {
        ...serviceEnv,
        PORT: String(federatedPort),
        FEDERATION: 'true',
        ...(trusted ? { FEDERATION_ROUTER_SECRET: randomBytes(32).toString('hex') } : {}),
      },
      'federated',
    ),
    federatedBase: `http://127.0.0.1:${federatedPort}`,
    sink,
    baseline: start(
      ['-r', 'ts-node/register/transpile-only', 'bench/baseline.ts'],
      { PORT: String(baselinePort), DATABASE_URL: url, JWT_SECRET },
      'baseline',
    ),
    serviceBase: `http://127.0.0.1:${servicePort}`,
    baselineBase: `http://127.0.0.1:${baselinePort}`,
    nodeFlags,
    async restartService() {
      servers.service.kill('SIGTERM');
      await new Promise((resolveExit) => servers.service.once('exit', resolveExit));
      servers.service = start(entry, serviceEnv, 'service');
      await waitFor(`${servers.serviceBase}/readyz`, servers.service);
    },
  };
  await waitFor(`${servers.serviceBase}/readyz`, servers.service);
  await waitFor(`${servers.tracedBase}/readyz`, servers.traced);
  if (servers.replicated) await waitFor(`${servers.replicatedBase}/readyz`, servers.replicated);
  if (servers.compared) await waitFor(`${servers.comparedBase}/readyz`, servers.compared);
  await waitFor(`${servers.federatedBase}/readyz`, servers.federated);
  await waitFor(`${servers.baselineBase}/stats`, servers.baseline);
  return servers;
}

/** Every case, with the requests autocannon sends (as the seeded trainer bench1). */
async function benchCases(serviceBase: string, baselineBase: string, replicated: boolean): Promise<CaseSpec[]> {
  const login = await fetch(`${serviceBase}/trainer/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench1@bench.test', password: BENCH_PASSWORD }),
  }).then((r) => r.json() as Promise<{ token: string }>);
  const auth = { authorization: `Bearer ${login.token}`, 'content-type': 'application/json' };
  const n = options.trainers;
  const randomId = () => 1 + Math.floor(Math.random() * n);
  // Offsets go up to the service's default MAX_OFFSET; deeper pages follow cursors.
  const deepest = Math.max(0, Math.min(n, 10_000) - 20);
  const gqlBody = (query: string, variables: Record<string, unknown> = {}) => JSON.stringify({ query, variables });
  const get = (path: () => string): AutocannonRequest => ({
    method: 'GET',
    headers: auth,
    setupRequest: (req) => ({ ...req, path: path() }),
  });
  const graphql = (query: string, variables: () => Record<string, unknown>): AutocannonRequest => ({
    method: 'POST',
    path: '/graphql',
    headers: auth,
    setupRequest: (req) => ({ ...req, body: gqlBody(query, variables()) }),
  });
  // The cursor of the trainer 21st from the end: its page is the last one.
  const endCursor = await fetch(`${serviceBase}/graphql`, {
    method: 'POST',
    headers: auth,
    body: gqlBody(END, {
      after: new CursorCodec(JWT_SECRET, 'trainers').encode(Math.max(0, n - 22)),
    }),
  })
    .then((r) => r.json() as Promise<{ data: { trainers: { nextCursor: string | null } } }>)
    .then((body) => body.data.trainers.nextCursor);

  // A fast wrong page would not count: the service's nested page must equal the hand-written one.
  for (const offset of [0, 200, Math.floor(deepest / 2), deepest]) {
    const [service, baseline] = await Promise.all([
      fetch(`${serviceBase}/graphql`, { method: 'POST', headers: auth, body: gqlBody(PAGE, { offset }) }).then(async (r) =>
        (await r.text()).trimEnd(),
      ),
      fetch(`${baselineBase}/page?offset=${offset}`, { headers: auth }).then((r) => r.text()),
    ]);
    if (service !== baseline) {
      let at = 0;
      while (service[at] === baseline[at]) at += 1;
      throw new Error(
        `the nested page at offset ${offset} differs from the hand-written one at character ${at}:\n${service.slice(at - 100, at + 100)}\n${baseline.slice(at - 100, at + 100)}`,
      );
    }
  }

  // Nor a wrong list: the service's REST list is each hand-written one (by offset, and by the
  // range of ids that the seeded table's gapless ids put at that offset), body and Link header.
  for (const offset of [0, Math.floor(deepest / 2), deepest]) {
    const [service, ...baselines] = await Promise.all(
      [
        `${serviceBase}/trainer?limit=20&offset=${offset}`,
        `${baselineBase}/list?offset=${offset}`,
        `${baselineBase}/range?offset=${offset}`,
      ].map(async (url) => {
        const response = await fetch(url, { headers: auth });
        return `${response.status} ${response.headers.get('link')} ${JSON.stringify(await response.json())}`;
      }),
    );
    for (const baseline of baselines) {
      if (service !== baseline) {
        throw new Error(
          `the REST list at offset ${offset} differs from a hand-written one:\n${service.slice(0, 300)}\n${baseline.slice(0, 300)}`,
        );
      }
    }
  }

  const cases: CaseSpec[] = [
    { name: 'baseline GET /trainer/:id', target: 'baseline', requests: [get(() => `/trainer/${randomId()}`)] },
    { name: 'GraphQL trainer(id)', target: 'service', requests: [graphql(TRAINER, () => ({ id: String(randomId()) }))] },
    {
      name: 'GraphQL trainer(id) by documentId',
      target: 'service',
      requests: [
        {
          method: 'POST',
          path: '/graphql',
          headers: auth,
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({ documentId: documentId(TRAINER), variables: { id: String(randomId()) } }),
          }),
        },
      ],
    },
    // The same requests to the instance with tracing on: what a span per request, operation and SQL statement costs.
    { name: TRACED_CASE, target: 'traced', requests: [graphql(TRAINER, () => ({ id: String(randomId()) }))] },
    // The same requests to the instance that is a Federation subgraph: being one costs a client nothing.
    { name: FEDERATED_CASE, target: 'federated', requests: [graphql(TRAINER, () => ({ id: String(randomId()) }))] },
    { name: 'REST GET /trainer/:id', target: 'service', requests: [get(() => `/trainer/${randomId()}`)] },
    {
      name: 'REST GET /trainer (list)',
      target: 'service',
      requests: [get(() => `/trainer?limit=20&offset=${Math.floor(Math.random() * deepest)}`)],
    },
    {
      name: LIST_BASELINE_CASE,
      target: 'baseline',
      requests: [get(() => `/list?offset=${Math.floor(Math.random() * deepest)}`)],
    },
    // The same list by hand with no walk to its offset: the least a list of 20 costs on this stack.
    {
      name: RANGE_BASELINE_CASE,
      target: 'baseline',
      requests: [get(() => `/range?offset=${Math.floor(Math.random() * deepest)}`)],
    },
    // The same list from an instance with one read replica (lists are the replica's): MySQL runs only.
    ...(replicated
      ? [
          {
            name: 'REST GET /trainer (list), one replica',
            target: 'replicated' as const,
            requests: [get(() => `/trainer?limit=20&offset=${Math.floor(Math.random() * deepest)}`)],
          },
        ]
      : []),
    {
      name: PAGE_BASELINE_CASE,
      target: 'baseline',
      requests: [get(() => '/page?offset=0')],
    },
    {
      name: 'GraphQL trainers page 100 × creatures 10',
      target: 'service',
      requests: [graphql(PAGE, () => ({ offset: 0 }))],
    },
    // Both pages again with a few clients at a time: how much of the gap between them comes from
    // many requests in flight at once rather than from the work of one page (under 50
    // connections, node --trace-gc shows the service's page objects surviving young-generation
    // collections and being promoted).
    {
      name: PAGE_BASELINE_FEW_CASE,
      target: 'baseline',
      connections: FEW_CONNECTIONS,
      requests: [get(() => '/page?offset=0')],
    },
    {
      name: PAGE_FEW_CASE,
      target: 'service',
      connections: FEW_CONNECTIONS,
      requests: [graphql(PAGE, () => ({ offset: 0 }))],
    },
    // The same page further on, with and without the trainer of many creatures on it.
    ...(heavyCreatures() > 0
      ? [
          { name: HEAVY_PAGE_CASE, target: 'service' as const, requests: [graphql(PAGE, () => ({ offset: 200 }))] },
          { name: LIGHT_PAGE_CASE, target: 'service' as const, requests: [graphql(PAGE, () => ({ offset: 300 }))] },
        ]
      : []),
    {
      name: 'GraphQL trainers (list)',
      target: 'service',
      requests: [graphql(LIST, () => ({ offset: Math.floor(Math.random() * deepest) }))],
    },
    { name: 'GraphQL deep paging (offset MAX_OFFSET-20)', target: 'service', requests: [graphql(DEEP, () => ({ offset: deepest }))] },
    // At 50 connections every p50 is mostly queueing (about 50 / throughput, even for the
    // baseline); one connection measures what a deep page itself takes.
    {
      name: 'GraphQL deep paging (offset MAX_OFFSET-20), 1 connection',
      target: 'service',
      connections: 1,
      requests: [graphql(DEEP, () => ({ offset: deepest }))],
    },
    // Cursor pages cost the same at any depth; nicknameContains scans the nicknames (LIKE '%...%').
    { name: 'GraphQL first page, 1 connection', target: 'service', connections: 1, requests: [graphql(CURSOR, () => ({}))] },
    {
      name: 'GraphQL cursor page at the end, 1 connection',
      target: 'service',
      connections: 1,
      requests: [graphql(CURSOR, () => ({ after: endCursor }))],
    },
    {
      name: 'GraphQL nicknameContains, 1 connection',
      target: 'service',
      connections: 1,
      requests: [graphql(CONTAINS, () => ({ q: `_${1 + Math.floor(Math.random() * Math.max(1, Math.floor(n / 10)))}` }))],
    },
    {
      name: 'GraphQL createCreature + deleteCreature',
      target: 'service',
      requests: [
        {
          method: 'POST',
          path: '/graphql',
          headers: auth,
          setupRequest: (req) => ({
            ...req,
            body: gqlBody(CREATE, {
              input: { name: `b${randomBytes(6).toString('hex')}`, speciesId: 1 },
            }),
          }),
          onResponse: (_status, body, context) => {
            (context as { id?: string }).id = (JSON.parse(body) as { data?: { createCreature?: { id: string } } }).data?.createCreature?.id;
          },
        },
        {
          method: 'POST',
          path: '/graphql',
          headers: auth,
          setupRequest: (req, context) => ({
            ...req,
            body: gqlBody(DELETE, { id: (context as { id?: string }).id ?? '1' }),
          }),
        },
      ],
    },
  ];
  // With --compare-node, each of COMPARED_CASES again on that Node, right after its own: the two
  // alternate in every round, against the same baseline.
  return cases.flatMap((spec) =>
    comparedVersion && COMPARED_CASES.includes(spec.name)
      ? [spec, { ...spec, name: `${spec.name} [Node ${comparedVersion}]`, target: 'compared' as const }]
      : [spec],
  );
}

const TRAINER_CASE = 'GraphQL trainer(id)';
const TRACED_CASE = 'GraphQL trainer(id), tracing on';
const FEDERATED_CASE = 'GraphQL trainer(id), FEDERATION=true';
const PAGE_BASELINE_CASE = 'baseline nested page 100 × 10 (hand-written)';
const FEW_CONNECTIONS = 4;
const PAGE_BASELINE_FEW_CASE = `baseline nested page 100 × 10 (hand-written), ${FEW_CONNECTIONS} connections`;
const PAGE_FEW_CASE = `GraphQL trainers page 100 × creatures 10, ${FEW_CONNECTIONS} connections`;
const LIST_BASELINE_CASE = 'baseline list 20 at random offsets up to MAX_OFFSET (hand-written)';
const RANGE_BASELINE_CASE = 'baseline list 20 by a range of ids, no walk to the offset (hand-written)';
const HEAVY_PAGE_CASE = 'GraphQL trainers page 100 × creatures 10 at offset 200 (a trainer of many creatures on it)';
const LIGHT_PAGE_CASE = 'GraphQL trainers page 100 × creatures 10 at offset 300';
const STORM_CASE = 'GraphQL trainer(id) during 20 concurrent logins';
const wanted = (name: string) => !args.only || args.only.split('|').some((part) => name.includes(part));

/**
 * Sends a case's requests once, in order, as autocannon would (setupRequest, onResponse), and
 * fails unless each is answered 2xx without GraphQL errors: a refused document (one missing from
 * the manifest, say) is answered 200 with an error, and timing it would time the wrong work.
 */
async function checkAnswers(base: string, spec: CaseSpec): Promise<void> {
  const context: Record<string, unknown> = {};
  for (const request of spec.requests) {
    const sent = typeof request.setupRequest === 'function' ? request.setupRequest({ ...request }, context) : request;
    const response = await fetch(`${base}${sent.path ?? '/'}`, {
      method: sent.method ?? 'GET',
      headers: sent.headers as Record<string, string>,
      body: typeof sent.body === 'string' ? sent.body : undefined,
    });
    const body = await response.text();
    if (response.status >= 300 || /"errors"\s*:/.test(body)) {
      throw new Error(`case "${spec.name}" is answered ${response.status}: ${body.slice(0, 300)}`);
    }
    if (typeof request.onResponse === 'function') request.onResponse(response.status, body, context, undefined);
  }
}

/**
 * Warm-up (not recorded), then the cases in alternating rounds, each with its statements and the
 * CPU time of the server that answered and of the database (`databasePid`, when it runs here) per
 * request.
 */
async function runRounds(cases: CaseSpec[], servers: Servers, database: DatabaseProcess | undefined): Promise<CaseResult[]> {
  const bases = {
    service: servers.serviceBase,
    traced: servers.tracedBase,
    replicated: servers.replicatedBase,
    compared: servers.comparedBase,
    federated: servers.federatedBase,
    baseline: servers.baselineBase,
  } as const;
  const baseOf = (spec: CaseSpec) => bases[spec.target];
  for (const spec of cases) await checkAnswers(baseOf(spec), spec);
  // The first case of a run would otherwise pay for both servers' JIT.
  for (const spec of cases) await run(baseOf(spec), spec.requests, options.connections, Math.min(2, options.duration));
  const results: CaseResult[] = [];
  const selected = cases.filter((c) => c.target === 'baseline' || wanted(c.name));
  for (let round = 1; round <= options.rounds; round += 1) {
    for (const spec of selected) {
      const serverPid = servers[spec.target]?.pid;
      // A replica elsewhere (--replica-url) serves that case's reads: this database's CPU is not theirs.
      const databasePid = spec.target === 'replicated' && servers.replicaElsewhere ? undefined : database?.pid;
      // The counters are read outside the CPU window: their own requests are not in it.
      const before = spec.target === 'baseline' ? await baselineCounters(servers.baselineBase) : await counters(baseOf(spec));
      const started = performance.now();
      const cpuBefore = [cpuMs(serverPid), cpuMs(databasePid)];
      const result = await run(baseOf(spec), spec.requests, spec.connections ?? options.connections, options.duration);
      // Requests still in flight when autocannon stops are answered (and counted) a moment later.
      await sleep(Math.max(300, 2 * result.latency.p99));
      const cpuAfter = [cpuMs(serverPid), cpuMs(databasePid)];
      const seconds = (performance.now() - started) / 1000;
      const after = spec.target === 'baseline' ? await baselineCounters(servers.baselineBase) : await counters(baseOf(spec));
      const answered = after.requests - before.requests;
      const statements = answered ? (after.statements - before.statements) / answered : 0;
      // The database's CPU less what it spends with no request (background work, the replicated instance's heartbeat).
      const idle = [0, (database?.idleMsPerSecond ?? 0) * seconds];
      const perRequest = (i: number) => {
        const [from, to] = [cpuBefore[i], cpuAfter[i]];
        if (from === undefined || to === undefined || answered === 0) return undefined;
        return Math.round((Math.max(0, to - from - idle[i]) / answered) * 1000) / 1000;
      };
      log(`round ${round} ${spec.name}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms`);
      results.push({
        name: spec.name,
        round,
        requestsPerSecond: result.requests.average,
        p50: result.exact?.p50 ?? result.latency.p50,
        p99: result.latency.p99,
        mean: result.exact?.mean ?? result.latency.average,
        errors: result.errors + result.timeouts + result.non2xx,
        statementsPerRequest: Math.round(statements * 100) / 100,
        serverCpuMs: perRequest(0),
        databaseCpuMs: perRequest(1),
      });
    }
  }
  return results;
}

/** trainer(id) while 20 logins hash at once. */
async function runLoginStorm(trainerCase: CaseSpec, serviceBase: string): Promise<CaseResult> {
  const storm = run(
    serviceBase,
    [
      {
        method: 'POST',
        path: '/trainer/authenticate',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bench2@bench.test', password: BENCH_PASSWORD }),
      },
    ],
    20,
    options.duration + 1,
  );
  await sleep(500);
  const during = await run(serviceBase, trainerCase.requests, options.connections, options.duration);
  const stormResult = await storm;
  return {
    name: STORM_CASE,
    round: 1,
    requestsPerSecond: during.requests.average,
    p50: during.latency.p50,
    p99: during.latency.p99,
    errors: during.errors + during.timeouts + during.non2xx,
    statementsPerRequest: NaN,
    note: `${Math.round(stormResult.requests.average)} logins/s`,
  };
}

/**
 * Waits until the service has answered no request and run no password hash for two seconds in a
 * row (at most 30 s): logins the storm queued go on hashing after their clients have gone.
 */
async function untilIdle(base: string): Promise<void> {
  let last = -1;
  let quiet = 0;
  for (let waited = 0; waited < 30 && quiet < 2; waited += 1) {
    await sleep(1000);
    const { requests, hashing } = await counters(base);
    quiet = requests === last && hashing === 0 ? quiet + 1 : 0;
    last = requests;
  }
}

/**
 * The RSS once V8 has given back what the load left: its memory reducer collects and compacts a
 * heap that has stopped growing after several idle seconds, tens of MB below what it held right
 * after the cases. Read each second until it has not fallen by more than 1 MB for 5 s, or for
 * 30 s at most.
 */
async function settledRss(pid: number): Promise<number> {
  let lowest = memory(pid).rssMb;
  let steady = 0;
  for (let waited = 0; waited < 30 && steady < 5; waited += 1) {
    await sleep(1000);
    const now = memory(pid).rssMb;
    steady = now < lowest - 1 ? 0 : steady + 1;
    lowest = Math.min(lowest, now);
  }
  return memory(pid).rssMb;
}

/**
 * Memory twice: the process that served every case (the nested pages grow V8's heap most), then
 * steady state on a fresh process, after each of two consecutive soak runs of trainer(id).
 */
async function measureMemory(trainerCase: CaseSpec, servers: Servers): Promise<Pick<Report, 'memory' | 'soak' | 'soakPeakMb'>> {
  // Once the service is idle: logins the storm left queued are still being hashed (scrypt holds
  // 32 MB while it runs), and they would be counted as memory the service keeps.
  await untilIdle(servers.serviceBase);
  const afterCases = { ...memory(servers.service.pid!), settledMb: await settledRss(servers.service.pid!) };
  await servers.restartService();
  const soak: Report['soak'] = [];
  for (let i = 0; i < 2; i += 1) {
    const result = await run(servers.serviceBase, trainerCase.requests, options.connections, options.soak);
    soak.push({
      requests: result.requests.total,
      served: (await counters(servers.serviceBase)).requests,
      rssMb: memory(servers.service.pid!).rssMb,
    });
  }
  return { memory: afterCases, soak, soakPeakMb: memory(servers.service.pid!).peakMb };
}

/**
 * A full run's summary is also written as `latest<suffix>.md` (the only files of bench/results/
 * that git tracks: the README's Performance section quotes them); quick runs leave them alone.
 */
function writeLatest(suffix: string, markdown: string): void {
  if (!quick) writeFileSync(join(options.out, `latest${suffix}.md`), markdown);
}

function writeReport(report: Report): void {
  const stamp = report.when.replace(/[:.]/g, '-');
  writeFileSync(join(options.out, `${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(options.out, `${stamp}.md`), renderMarkdown(report, `${stamp}.svg`));
  writeFileSync(join(options.out, `${stamp}.svg`), renderChart(report));
  if (!quick) writeFileSync(join(options.out, 'latest.svg'), renderChart(report));
  writeLatest('', renderMarkdown(report, 'latest.svg'));
  process.stdout.write(`${renderTable(report)}\n`);
  log(`wrote ${join(options.out, `${stamp}.{json,md,svg}`)}`);
}

/** `--abuse`: the abuse section alone, printed and written as bench/results/<timestamp>-abuse.{md,json}. */
async function abuseSection(servers: Servers): Promise<void> {
  const { token } = await fetch(`${servers.serviceBase}/trainer/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench1@bench.test', password: BENCH_PASSWORD }),
  }).then((r) => r.json() as Promise<{ token: string }>);
  const rows = await runAbuse({
    base: servers.serviceBase,
    pid: servers.service.pid!,
    duration: options.duration,
    token,
    trainers: options.trainers,
    log,
  });
  const when = new Date().toISOString();
  const stamp = `${when.replace(/[:.]/g, '-')}-abuse`;
  const machine = describeMachine();
  const table = renderAbuse(rows);
  writeFileSync(
    join(options.out, `${stamp}.json`),
    `${JSON.stringify({ when, machine, mode: quick ? 'quick (SQLite)' : 'full (MySQL)', options: { ...options, out: undefined }, rows }, null, 2)}\n`,
  );
  writeFileSync(join(options.out, `${stamp}.md`), `# Abuse section, ${when}\n\n${machine}\n\n${table}\n`);
  writeLatest('-abuse', `# Abuse section, ${when}\n\n${machine}\n\n${table}\n`);
  process.stdout.write(`${table}\n`);
  log(`wrote ${join(options.out, `${stamp}.{json,md}`)}`);
}

/**
 * `--events`: two instances of the service (as `npm start` runs it) on the bench database and one
 * Redis, measured by bench/events.ts; printed and written as bench/results/<timestamp>-events.{md,json}.
 */
async function eventsSection(url: string): Promise<void> {
  const redisUrl = args['redis-url'] ?? process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const startScript = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const nodeFlags = startScript.split(/\s+/).filter((word) => word.startsWith('--'));
  const keptEvents = Number(args['kept-events'] ?? 2_000_000);
  if (!Number.isSafeInteger(keptEvents) || keptEvents < 0) throw new Error('--kept-events must be a whole number, 0 or more');
  const database = await createConnection({ uri: url });
  const fillers = fillerEvents(database, keptEvents);
  // Those a run that was stopped left behind.
  await fillers.remove();
  const instances = (await freePorts(2)).map((port, i) => ({
    base: `http://127.0.0.1:${port}`,
    process: start(
      [...nodeFlags, ...(args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${resolve(args['cpu-prof'])}`] : []), 'dist/src/main.js'],
      {
        NODE_ENV: 'production',
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: url,
        REDIS_URL: redisUrl,
        JWT_SECRET,
        LOG_LEVEL: 'warn',
        // The run signs in 100 trainers from one address.
        LOGIN_IP_PER_MINUTE: '100000',
      },
      `instance ${i === 0 ? 'A' : 'B'}`,
    ),
  }));
  try {
    for (const instance of instances) await waitFor(`${instance.base}/readyz`, instance.process);
    const report = await runEvents({
      bases: instances.map((i) => i.base),
      pids: instances.map((i) => i.process.pid!),
      trainers: options.trainers,
      duration: Number(args.duration ?? 20),
      subscribers: Number(args.subscribers ?? 1000),
      rate: Number(args.rate ?? 100),
      log,
      memory,
      eventSeq: async (trainerId) => {
        const [rows] = await database.query('SELECT event_seq AS seq FROM trainer WHERE id = ?', [trainerId]);
        return Number((rows as { seq: number | string }[])[0].seq);
      },
      kept: async () => {
        const [rows] = await database.query('SELECT COUNT(*) AS n FROM creature_event');
        return Number((rows as { n: number | string }[])[0].n);
      },
      keptEvents: keptEvents > 0 ? fillers : undefined,
    });
    const when = new Date().toISOString();
    const stamp = `${when.replace(/[:.]/g, '-')}-events`;
    const machine = describeMachine();
    const table = renderEvents(report);
    writeFileSync(join(options.out, `${stamp}.json`), `${JSON.stringify({ when, machine, report }, null, 2)}\n`);
    writeFileSync(join(options.out, `${stamp}.md`), `# Live events, ${when}\n\n${machine}\n\n${table}\n`);
    writeLatest('-events', `# Live events, ${when}\n\n${machine}\n\n${table}\n`);
    process.stdout.write(`${table}\n`);
    log(`wrote ${join(options.out, `${stamp}.{json,md}`)}`);
  } finally {
    for (const instance of instances) instance.process.kill('SIGTERM');
    await database.end();
  }
}

/** Trainer ids of the filler events: far past any seeded trainer, so no subscriber or write meets them. */
const FILLER_TRAINERS = 2_000_000_000;

/** Every number from 0 to 99,999 once, as `n`: five digits crossed (MySQL and MariaDB alike). */
const HUNDRED_THOUSAND = `(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS n FROM ${[...'abcef']
  .map((alias) => `(${Array.from({ length: 10 }, (_, d) => `SELECT ${d} AS d`).join(' UNION ALL ')}) ${alias}`)
  .join(', ')})`;

/**
 * `count` kept events of trainers that do not exist (1,000 each, stamped now in UTC, as the
 * service stamps them, so that pruning keeps them), added in statements of 100,000 rows, and
 * deleted again.
 */
function fillerEvents(database: Connection, count: number): NonNullable<Parameters<typeof runEvents>[0]['keptEvents']> {
  const chunk = 100_000;
  const remove = async () => {
    for (;;) {
      const [result] = await database.query(`DELETE FROM creature_event WHERE trainer_id >= ${FILLER_TRAINERS} LIMIT ${chunk}`);
      if ((result as { affectedRows: number }).affectedRows === 0) return;
    }
  };
  return {
    count,
    add: async () => {
      for (let from = 0; from < count; from += chunk) {
        await database.query(
          `INSERT INTO creature_event (trainer_id, seq, kind, creature_id, name, species_id, level, created_at, at)
           SELECT ${FILLER_TRAINERS} + k DIV 1000, k MOD 1000 + 1, 'CREATED', k, CONCAT('filler-', k), 1, 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3)
           FROM (SELECT ${from} + n AS k FROM ${HUNDRED_THOUSAND} numbers) fillers WHERE k < ${count}`,
        );
      }
    },
    remove,
  };
}

/** `--scale`: bench/scale.ts at each size; printed and written as bench/results/<timestamp>-scale.{md,json}. */
async function scaleSection(): Promise<void> {
  const server = new URL(args['database-url'] ?? process.env.BENCH_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/registry_bench');
  server.pathname = '';
  const startScript = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const sizes = (args.sizes ?? '100000,5000000').split(',').map(Number);
  const { rows, note } = await runScale({
    root,
    serverUrl: server.toString().replace(/\/$/, ''),
    sizes,
    duration: options.duration,
    nodeFlags: startScript.split(/\s+/).filter((word) => word.startsWith('--')),
    jwtSecret: JWT_SECRET,
    reseed: args.reseed ?? false,
    log,
  });
  const when = new Date().toISOString();
  const stamp = `${when.replace(/[:.]/g, '-')}-scale`;
  const machine = describeMachine();
  const table = `${renderScale(rows)}\n\n${note}`;
  writeFileSync(
    join(options.out, `${stamp}.json`),
    `${JSON.stringify({ when, machine, sizes, duration: options.duration, rows }, null, 2)}\n`,
  );
  writeFileSync(join(options.out, `${stamp}.md`), `# Scale section, ${when}\n\n${machine}\n\n${table}\n`);
  writeLatest('-scale', `# Scale section, ${when}\n\n${machine}\n\n${table}\n`);
  process.stdout.write(`${table}\n`);
  log(`wrote ${join(options.out, `${stamp}.{json,md}`)}`);
}

/** `--cluster`: bench/cluster.ts; printed and written as bench/results/<timestamp>-cluster.{md,json}. */
async function clusterSection(): Promise<void> {
  const startScript = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const writers = Number(args.writers ?? 8);
  const duration = Number(args.duration ?? 20);
  const rows = await runCluster({
    root,
    nodeFlags: startScript.split(/\s+/).filter((word) => word.startsWith('--')),
    jwtSecret: JWT_SECRET,
    duration,
    writers,
    log,
  });
  const when = new Date().toISOString();
  const stamp = `${when.replace(/[:.]/g, '-')}-cluster`;
  const machine = describeMachine();
  const table = renderCluster(rows, writers, duration);
  writeFileSync(join(options.out, `${stamp}.json`), `${JSON.stringify({ when, machine, writers, duration, rows }, null, 2)}\n`);
  writeFileSync(join(options.out, `${stamp}.md`), `# Cluster section, ${when}\n\n${machine}\n\n${table}\n`);
  writeLatest('-cluster', `# Cluster section, ${when}\n\n${machine}\n\n${table}\n`);
  process.stdout.write(`${table}\n`);
  log(`wrote ${join(options.out, `${stamp}.{json,md}`)}`);
}

async function main(): Promise<void> {
  if (args.cluster) {
    mkdirSync(options.out, { recursive: true });
    await clusterSection();
    return;
  }
  if (args.scale) {
    mkdirSync(options.out, { recursive: true });
    await scaleSection();
    return;
  }
  const { url, seedSeconds } = await prepareDatabase();
  if (args.events) {
    await eventsSection(url);
    return;
  }
  // The abuse section sends documents of its own: it measures a service that runs any.
  const servers = await startServers(url, !args.abuse);
  try {
    if (args.abuse) {
      await abuseSection(servers);
      return;
    }
    const cases = await benchCases(servers.serviceBase, servers.baselineBase, servers.replicated !== undefined);
    const trainerCase = cases.find((c) => c.name === TRAINER_CASE)!;
    const results = await runRounds(cases, servers, await databaseProcess(url, log));
    if (wanted(STORM_CASE)) results.push(await runLoginStorm(trainerCase, servers.serviceBase));
    if (args.only) {
      process.stdout.write(
        `${results.map((r) => `${r.name}: ${Math.round(r.requestsPerSecond)} req/s p50 ${r.p50} p99 ${r.p99} SQL/req ${r.statementsPerRequest} CPU ms/req server ${r.serverCpuMs ?? '–'} database ${r.databaseCpuMs ?? '–'} ${r.note ?? ''}`).join('\n')}\n`,
      );
      return;
    }
    writeReport({
      when: new Date().toISOString(),
      mode: quick ? 'quick (SQLite)' : 'full (MySQL)',
      machine: describeMachine(),
      options: { ...options, out: undefined, nodeFlags: servers.nodeFlags },
      seedSeconds,
      results,
      ...(await measureMemory(trainerCase, servers)),
    });
  } finally {
    servers.service.kill('SIGTERM');
    servers.traced.kill('SIGTERM');
    servers.replicated?.kill('SIGTERM');
    servers.compared?.kill('SIGTERM');
    servers.federated.kill('SIGTERM');
    servers.baseline.kill('SIGTERM');
    servers.sink.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

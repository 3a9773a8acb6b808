// `npm run bench -- --scale`: the service on registries of different sizes (100,000 and 5,000,000
// trainers by default, one creature each, imported by plain SQL and reconciled as an operator
// would), side by side: seconds from start to ready and to a first list, RSS once idle and after
// the reads, and one-connection p50s of the reads that must not slow down as the data grows.
// See bench/README.md, "Scale".
import autocannon, { type Request as AutocannonRequest } from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createConnection } from 'mysql2/promise';
import { CursorCodec } from '../src/common/cursor';
import { freePort } from '../test/helpers/ports';
import { BENCH_PASSWORD, seed } from './seed';

export interface ScaleOptions {
  readonly root: string;
  /** A MySQL server URL without a database: each size gets a database of its own there. */
  readonly serverUrl: string;
  readonly sizes: readonly number[];
  readonly duration: number;
  readonly nodeFlags: readonly string[];
  readonly jwtSecret: string;
  readonly reseed: boolean;
  readonly log: (message: string) => void;
}

export interface ScaleRow {
  readonly trainers: number;
  readonly seedSeconds: number | null;
  readonly readySeconds: number;
  readonly firstListSeconds: number;
  readonly rssIdleMb: number;
  readonly rssAfterMb: number;
  /** One-connection p50 in ms, by read. */
  readonly p50: Record<string, number>;
  /** Exact counts checked against COUNT(*) of the table. */
  readonly countsExact: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/** The database for `trainers`, imported by plain SQL and reconciled unless it already holds that many. */
async function prepare(o: ScaleOptions, trainers: number): Promise<{ url: string; seedSeconds: number | null }> {
  const name = `registry_scale_${trainers}`;
  const url = `${o.serverUrl}/${name}`;
  const admin = await createConnection({ uri: o.serverUrl });
  try {
    if (!o.reseed) {
      const [rows] = await admin
        .query(`SELECT (SELECT COUNT(*) FROM \`${name}\`.trainer) AS t, (SELECT COUNT(*) FROM \`${name}\`.trainer_count) AS c`)
        .catch(() => [[{ t: -1, c: -1 }]] as const);
      const found = (rows as { t: number | string; c: number | string }[])[0];
      if (Number(found.t) === trainers && Number(found.c) > 0) return { url, seedSeconds: null };
    }
    await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  } finally {
    await admin.end();
  }
  o.log(`importing ${trainers} trainers and ${trainers} creatures by plain SQL, then npm run reconcile's work`);
  const { seconds } = await seed(url, trainers, trainers);
  o.log(`imported and reconciled in ${seconds.toFixed(1)} s`);
  return { url, seedSeconds: seconds };
}

/** One request of a read: a path, and for GraphQL a POST body. */
type Read = { path: string; method?: AutocannonRequest['method']; body?: string };

/** One connection for `seconds`: each answer's own time (autocannon's histogram keeps whole milliseconds). */
async function p50(url: string, request: () => Read, headers: Record<string, string>, seconds: number) {
  const times: number[] = [];
  let failed = 0;
  await new Promise<void>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: 1,
        duration: seconds,
        requests: [{ setupRequest: (req: AutocannonRequest) => ({ ...req, ...request(), headers: { ...req.headers, ...headers } }) }],
      },
      (error: unknown) => (error ? reject(error instanceof Error ? error : new Error('autocannon failed')) : resolve()),
    );
    void instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status === 200) times.push(ms);
      else failed += 1;
    });
  });
  if (failed > 0) throw new Error(`${failed} answers were not 200`);
  return median(times);
}

/**
 * Reads the trainer table's indexes once, so that the measured reads find them in the buffer pool
 * as on a database that has been serving (a fresh import leaves them on disk; random look-ups at
 * 5,000,000 trainers would then measure the disk, not the index).
 */
async function warm(url: string): Promise<void> {
  const connection = await createConnection({ uri: url });
  try {
    for (const index of ['PRIMARY', 'UQ_trainer_nickname_key', 'IX_trainer_team_id']) {
      await connection.query(`SELECT COUNT(*) FROM trainer FORCE INDEX (${index})`);
    }
  } finally {
    await connection.end();
  }
}

/** Bytes of the trainer table (rows and indexes) of the largest registry, as the server reports them. */
async function trainerTableBytes(o: ScaleOptions): Promise<number> {
  const admin = await createConnection({ uri: o.serverUrl });
  try {
    const [rows] = await admin.query(
      `SELECT COALESCE(MAX(data_length + index_length), 0) AS bytes FROM information_schema.tables WHERE table_name = 'trainer' AND table_schema = ?`,
      [`registry_scale_${Math.max(...o.sizes)}`],
    );
    return Number((rows as { bytes: number | string }[])[0].bytes);
  } finally {
    await admin.end();
  }
}

/**
 * The server's InnoDB buffer pool, raised for the run when it cannot hold the largest registry's
 * trainer table (an operator sizes it to the working set; MariaDB's default of 128 MB holds a
 * tenth of it at 5,000,000 trainers), and put back afterwards. Returns how to put it back, and a
 * line saying what was done.
 */
async function sizeBufferPool(o: ScaleOptions): Promise<{ restore: () => Promise<void>; note: string }> {
  const admin = await createConnection({ uri: o.serverUrl });
  try {
    const [rows] = await admin.query('SELECT @@innodb_buffer_pool_size AS size');
    const before = Number((rows as { size: number | string }[])[0].size);
    const needed = Math.ceil(((await trainerTableBytes(o)) * 1.5) / 2 ** 30) * 2 ** 30;
    const gb = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GB`;
    if (needed <= before) return { restore: async () => undefined, note: `InnoDB buffer pool ${gb(before)} (as found).` };
    await admin.query(`SET GLOBAL innodb_buffer_pool_size = ${needed}`);
    o.log(`InnoDB buffer pool raised from ${gb(before)} to ${gb(needed)} for the run (the largest trainer table with room)`);
    return {
      restore: async () => {
        const again = await createConnection({ uri: o.serverUrl });
        try {
          await again.query(`SET GLOBAL innodb_buffer_pool_size = ${before}`);
        } finally {
          await again.end();
        }
      },
      note: `InnoDB buffer pool ${gb(needed)} for the run (raised from ${gb(before)}, put back after); the trainer table's indexes read once before each size's reads.`,
    };
  } finally {
    await admin.end();
  }
}

/** A size's service, started and checked, with the reads to measure on it. */
interface Running {
  readonly row: Omit<ScaleRow, 'p50' | 'rssAfterMb'>;
  readonly base: string;
  readonly headers: Record<string, string>;
  readonly reads: Record<string, () => Read>;
  readonly pid: number;
  stop(): Promise<void>;
}

/** One number of the first row a statement answers. */
async function scalar(uri: string, sql: string): Promise<number> {
  const db = await createConnection({ uri });
  try {
    const [rows] = await db.query(sql);
    return Number(Object.values((rows as Record<string, unknown>[])[0])[0]);
  } finally {
    await db.end();
  }
}

/**
 * Starts the service on a size's registry (imported first when missing): seconds to ready and to
 * a first list, RSS once idle, whether every count is exact; the reads are measured by runScale.
 */
async function startSize(
  o: ScaleOptions,
  trainers: number,
  prepared: { url: string; seedSeconds: number | null } | undefined,
): Promise<Running> {
  const { url, seedSeconds } = prepared ?? (await prepare(o, trainers));
  await warm(url);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const service: ChildProcess = spawn(process.execPath, [...o.nodeFlags, 'dist/src/main.js'], {
    cwd: o.root,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: url,
      JWT_SECRET: o.jwtSecret,
      LOG_LEVEL: 'warn',
      LOGIN_IP_PER_MINUTE: '100000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const stop = async () => {
    service.kill('SIGTERM');
    if (service.exitCode === null) await new Promise((resolve) => service.once('exit', resolve));
  };
  try {
    while (
      (await fetch(`${base}/readyz`).then(
        (r) => r.status,
        () => 0,
      )) !== 200
    ) {
      if (service.exitCode !== null) throw new Error(`the service exited (${service.exitCode})`);
      await sleep(20);
    }
    const readySeconds = (performance.now() - started) / 1000;
    const login = (await fetch(`${base}/trainer/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench1@bench.test', password: BENCH_PASSWORD }),
    }).then((r) => r.json())) as { token: string };
    const auth = { authorization: `Bearer ${login.token}` };
    const first = await fetch(`${base}/trainer?limit=20`, { headers: auth });
    if (first.status !== 200) throw new Error(`first list: ${first.status}`);
    const firstPage = (await first.json()) as { totalCount: number };
    const firstListSeconds = (performance.now() - started) / 1000;
    await sleep(2000);
    const rssIdleMb = rssMb(service.pid!);

    // Exact counts: the API's against the table's.
    const all = await scalar(url, 'SELECT COUNT(*) AS n FROM trainer');
    const mystic = await scalar(url, "SELECT COUNT(*) AS n FROM trainer WHERE team = 'MYSTIC'");
    const maxId = await scalar(url, 'SELECT MAX(id) AS id FROM trainer');
    const team = (await fetch(`${base}/trainer?limit=1&team=MYSTIC`, { headers: auth }).then((r) => r.json())) as { totalCount: number };
    const probe = `_${Math.floor(trainers / 7)}`;
    const search = (await fetch(`${base}/trainer?limit=100&nicknameContains=${probe}`, { headers: auth }).then((r) => r.json())) as {
      totalCount: number;
    };
    const expectedSearch = Array.from({ length: trainers }, (_, i) => `bench_${i + 1}`).filter((n) => n.includes(probe)).length;
    const countsExact = firstPage.totalCount === all && team.totalCount === mystic && search.totalCount === expectedSearch;

    const random = () => 1 + Math.floor(Math.random() * trainers);
    const gql = (query: string, variables: Record<string, unknown>): Read => ({
      path: '/graphql',
      method: 'POST',
      body: JSON.stringify({ query, variables }),
    });
    const headers = { ...auth, 'content-type': 'application/json' };
    // A cursor page at the end: the cursor the service gives for the trainer 21 before the last (same secret).
    const endCursor = new CursorCodec(o.jwtSecret, 'trainers').encode(maxId - 21);
    const reads: Record<string, () => Read> = {
      'REST first page with totalCount': () => ({ path: '/trainer?limit=20' }),
      'GraphQL cursor page at the end': () =>
        gql('query($a: String) { trainers(limit: 20, after: $a) { items { id nickname } nextCursor } }', { a: endCursor }),
      'REST team page with totalCount': () => ({ path: '/trainer?limit=20&team=VALOR' }),
      'GraphQL nickname filter': () =>
        gql('query($n: String) { trainers(limit: 20, filter: { nickname: $n }) { totalCount items { id } } }', { n: `bench_${random()}` }),
      'GraphQL nicknameContains with totalCount': () =>
        gql('query($q: String) { trainers(limit: 20, filter: { nicknameContains: $q }) { totalCount items { id nickname } } }', {
          q: `_${random()}`,
        }),
      'GraphQL trainerByNickname': () =>
        gql('query($n: String!) { trainerByNickname(nickname: $n) { id team } }', { n: `bench_${random()}` }),
      'GraphQL trainer(id)': () =>
        gql('query($id: ID!) { trainer(id: $id) { id nickname firstName lastName team creaturesOwned createdAt } }', {
          id: String(random()),
        }),
    };
    return {
      row: { trainers, seedSeconds, readySeconds, firstListSeconds, rssIdleMb, countsExact },
      base,
      headers,
      reads,
      pid: service.pid!,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Rounds of each read, alternating the sizes, so that every size's p50 is taken under the same conditions. */
const ROUNDS = 3;

export async function runScale(o: ScaleOptions): Promise<{ rows: ScaleRow[]; note: string }> {
  const rows: ScaleRow[] = [];
  // The largest registry is imported first when it is missing, so that its table's size is known.
  const largest = Math.max(...o.sizes);
  const preparedLargest = await prepare(o, largest);
  const pool = await sizeBufferPool(o);
  const running: Running[] = [];
  try {
    for (const size of o.sizes) running.push(await startSize(o, size, size === largest ? preparedLargest : undefined));
    const p50s: Record<string, number>[] = running.map(() => ({}));
    for (const name of Object.keys(running[0].reads)) {
      const rounds = running.map(() => [] as number[]);
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const [i, size] of running.entries()) {
          // A short warm-up first, then the measured run.
          if (round === 0) await p50(size.base, size.reads[name], size.headers, 1);
          rounds[i].push(await p50(size.base, size.reads[name], size.headers, Math.max(1, o.duration / ROUNDS)));
        }
      }
      for (const [i, size] of running.entries()) {
        p50s[i][name] = median(rounds[i]);
        o.log(`${size.row.trainers} trainers, ${name}: p50 ${p50s[i][name].toFixed(2)} ms (median of ${ROUNDS} rounds)`);
      }
    }
    for (const [i, size] of running.entries()) rows.push({ ...size.row, p50: p50s[i], rssAfterMb: rssMb(size.pid) });
  } finally {
    for (const size of running) await size.stop();
    await pool.restore();
  }
  return { rows, note: `${pool.note} Each read's p50 is the median of ${ROUNDS} rounds alternating the sizes.` };
}

/** The sizes side by side, with the targets judged against the smallest size. */
export function renderScale(rows: readonly ScaleRow[]): string {
  const [small] = rows;
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const out = [
    line(['', ...rows.map((r) => `${r.trainers.toLocaleString('en')} trainers`), 'target (largest against smallest)']),
    line(['---', ...rows.map(() => '---:'), '---']),
  ];
  const last = rows[rows.length - 1];
  const verdict = (ok: boolean) => (ok ? 'met' : '**NOT met**');
  out.push(line(['import + reconcile (s)', ...rows.map((r) => (r.seedSeconds === null ? 'reused' : r.seedSeconds.toFixed(1))), '']));
  out.push(
    line([
      'start to ready (s)',
      ...rows.map((r) => r.readySeconds.toFixed(2)),
      `≤ +3 s: ${verdict(last.readySeconds - small.readySeconds <= 3)}`,
    ]),
  );
  out.push(line(['start to a first list (s, after ready and a login)', ...rows.map((r) => r.firstListSeconds.toFixed(2)), '']));
  out.push(
    line([
      'RSS idle (MB)',
      ...rows.map((r) => r.rssIdleMb.toFixed(0)),
      `within 10 MB, ≤ 150: ${verdict(Math.abs(last.rssIdleMb - small.rssIdleMb) <= 10 && last.rssIdleMb <= 150)}`,
    ]),
  );
  out.push(
    line([
      'RSS after the reads (MB)',
      ...rows.map((r) => r.rssAfterMb.toFixed(0)),
      `within 10 MB, ≤ 150: ${verdict(Math.abs(last.rssAfterMb - small.rssAfterMb) <= 10 && last.rssAfterMb <= 150)}`,
    ]),
  );
  out.push(line(['exact totalCount (all, team, search)', ...rows.map((r) => (r.countsExact ? 'yes' : '**no**')), '']));
  for (const name of Object.keys(small.p50)) {
    const ok = last.p50[name] <= 1.5 * small.p50[name];
    const contains = name.includes('nicknameContains') ? `, ≤ 25 ms: ${verdict(last.p50[name] <= 25)}` : '';
    out.push(line([`${name} p50 (ms)`, ...rows.map((r) => r.p50[name].toFixed(2)), `≤ 1.5×: ${verdict(ok)}${contains}`]));
  }
  return out.join('\n');
}

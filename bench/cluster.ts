// `npm run bench -- --cluster`: three instances of the service (as `npm start` runs it), each on
// its own node of a private three-node Galera cluster started for the run (test/helpers/galera.ts),
// writing through all three at once. What it measures is how often the cluster refuses a write
// as a conflict with another node's (db_lock_conflicts_total, from each instance's /metrics) and
// whether any write fails for it: for registrations (every one of a team adds to a few shared
// count rows), for creations of creatures of the writer's own trainer (no row shared between
// nodes), and for creations of one trainer's creatures through every node (its row numbers each
// event: a hot row by design). See bench/README.md, "Cluster".
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { GaleraCluster } from '../test/helpers/galera';
import { freePorts } from '../test/helpers/ports';

export interface ClusterOptions {
  readonly root: string;
  readonly nodeFlags: readonly string[];
  readonly jwtSecret: string;
  /** Seconds each load runs. */
  readonly duration: number;
  /** Writers per instance, each sending its next write once the last is answered. */
  readonly writers: number;
  readonly log: (message: string) => void;
}

export interface ClusterRow {
  readonly load: string;
  readonly writes: number;
  readonly perSecond: number;
  /** Answers by status (201, 409, 503...). */
  readonly statuses: Record<string, number>;
  /** Conflicts the instances retried, and writes that ran out of retries (503). */
  readonly retried: number;
  readonly gaveUp: number;
  /** What was checked in the database afterwards (through node 2): the rows stored against the 201s, or the counts. */
  readonly checked: string;
}

const DATABASE = 'registry_cluster';
/** Registrations at once per instance: about what its password hashing takes at a time. */
const REGISTRATION_WRITERS = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function conflicts(base: string): Promise<{ retried: number; gaveUp: number }> {
  const text = await fetch(`${base}/metrics`).then((r) => r.text());
  const count = (outcome: string) =>
    Number(new RegExp(`^db_lock_conflicts_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { retried: count('retried'), gaveUp: count('gave_up') };
}

async function post(url: string, body: unknown, token?: string, method = 'POST'): Promise<number> {
  const answer = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  await answer.arrayBuffer();
  return answer.status;
}

/** Rows found in the database against the writes answered 201. */
const stored = (rows: number, statuses: Record<string, number>): string => `${rows} rows for ${statuses['201'] ?? 0} answered 201`;

const patch = (url: string, body: unknown, token: string) => post(url, body, token, 'PATCH');

export async function runCluster(o: ClusterOptions): Promise<ClusterRow[]> {
  o.log('starting a three-node Galera cluster');
  const cluster = await GaleraCluster.start('the cluster section is');
  if (!cluster) throw new Error('no Galera cluster here (mariadbd, galera-4, rsync and a mysql user are needed)');
  const instances: { base: string; process: ChildProcess }[] = [];
  try {
    await cluster.query(0, `CREATE DATABASE ${DATABASE} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    const ports = await freePorts(3);
    for (const i of [0, 1, 2]) {
      const port = ports[i];
      const child = spawn(process.execPath, [...o.nodeFlags, 'dist/src/main.js'], {
        cwd: o.root,
        env: {
          PATH: process.env.PATH ?? '',
          NODE_ENV: 'production',
          PORT: String(port),
          HOST: '127.0.0.1',
          DATABASE_URL: cluster.url(i, DATABASE),
          JWT_SECRET: o.jwtSecret,
          LOG_LEVEL: 'error',
          // Every registration comes from this one address.
          REGISTER_IP_PER_HOUR: '1000000',
          LOGIN_IP_PER_MINUTE: '100000',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr?.on('data', (chunk: Buffer) => o.log(`instance ${i + 1}: ${chunk.toString().trim()}`));
      instances.push({ base: `http://127.0.0.1:${port}`, process: child });
    }
    // Started at once, each migrating through its own node.
    await Promise.all(
      instances.map(async ({ base, process: child }) => {
        const deadline = Date.now() + 120_000;
        while (
          (await fetch(`${base}/readyz`).then(
            (r) => r.status,
            () => 0,
          )) !== 200
        ) {
          if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${base} did not become ready`);
          await sleep(200);
        }
      }),
    );
    const bases = instances.map((i) => i.base);
    const registration = (nickname: string) => ({
      nickname,
      firstName: 'Bench',
      lastName: 'Cluster',
      email: `${nickname}@bench.test`,
      password: 'bench-password-1',
      team: 'VALOR',
    });
    const signUp = async (base: string): Promise<{ id: number; token: string }> => {
      const nickname = `c${randomBytes(6).toString('hex')}`;
      const body = registration(nickname);
      if ((await post(`${base}/trainer`, body)) !== 201) throw new Error('a trainer of the cluster section could not register');
      const answer = await fetch(`${base}/trainer/authenticate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: body.email, password: body.password }),
      });
      const { token, trainer } = (await answer.json()) as { token: string; trainer: { id: number } };
      return { id: trainer.id, token };
    };

    /** `write` by every writer of every instance for the duration, then the counts. */
    const load = async (
      name: string,
      write: (base: string, node: number, n: number) => Promise<number>,
      check: (statuses: Record<string, number>) => Promise<string>,
      writers = o.writers,
    ) => {
      const before = await Promise.all(bases.map(conflicts));
      const statuses: Record<string, number> = {};
      let n = 0;
      const started = performance.now();
      const until = Date.now() + o.duration * 1000;
      await Promise.all(
        bases.flatMap((base, node) =>
          Array.from({ length: writers }, async () => {
            while (Date.now() < until) {
              n += 1;
              const status = await write(base, node, n).catch(() => 0);
              statuses[status] = (statuses[status] ?? 0) + 1;
            }
          }),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      const after = await Promise.all(bases.map(conflicts));
      const writes = Object.values(statuses).reduce((a, b) => a + b, 0);
      const row: ClusterRow = {
        load: name,
        writes,
        perSecond: Math.round(writes / seconds),
        statuses,
        retried: after.reduce((sum, c, i) => sum + c.retried - before[i].retried, 0),
        gaveUp: after.reduce((sum, c, i) => sum + c.gaveUp - before[i].gaveUp, 0),
        checked: await check(statuses),
      };
      o.log(`${name}: ${JSON.stringify(row)}`);
      return row;
    };
    const count = async (sql: string, values: unknown[] = []) =>
      Number(((await cluster.query(1, sql, values)) as { n: number | string }[])[0].n);

    const rows: ClusterRow[] = [];
    const trainersBefore = await count(`SELECT COUNT(*) AS n FROM ${DATABASE}.trainer`);
    rows.push(
      await load(
        'registrations, one team, through 3 nodes',
        (base) => post(`${base}/trainer`, registration(`r${randomBytes(6).toString('hex')}`)),
        async (statuses) => stored((await count(`SELECT COUNT(*) AS n FROM ${DATABASE}.trainer`)) - trainersBefore, statuses),
        // Registrations wait for their password hash: more writers would only be refused (429).
        REGISTRATION_WRITERS,
      ),
    );
    // One after the other: each instance hashes a few passwords at a time and refuses more (429).
    const own: { id: number; token: string }[] = [];
    for (const base of bases) for (let i = 0; i < o.writers; i += 1) own.push(await signUp(base));
    const ownIds = own.map((t) => t.id);
    rows.push(
      await load(
        "creature creations, each writer its own trainer's",
        (base, node, n) => {
          const trainer = own[(n % o.writers) + node * o.writers];
          return post(`${base}/trainer/${trainer.id}/creature`, { name: `Own ${n}`, speciesId: 1 }, trainer.token);
        },
        async (statuses) =>
          stored(
            await count(`SELECT COUNT(*) AS n FROM ${DATABASE}.creature WHERE trainer_id IN (${ownIds.map(() => '?').join(',')})`, ownIds),
            statuses,
          ),
      ),
    );
    const teams = ['MYSTIC', 'VALOR', 'INSTINCT'];
    rows.push(
      await load(
        "team changes, each writer its own trainer's",
        (base, node, n) => {
          const trainer = own[(n % o.writers) + node * o.writers];
          return patch(`${base}/trainer/${trainer.id}`, { team: teams[n % 3] }, trainer.token);
        },
        // Each team's trainers counted once in trainer_count, whatever the moves.
        async () => {
          const counted = await Promise.all(
            teams.map(async (team) =>
              [
                await count(`SELECT COALESCE(SUM(n), 0) AS n FROM ${DATABASE}.trainer_count WHERE team = ?`, [team]),
                await count(`SELECT COUNT(*) AS n FROM ${DATABASE}.trainer WHERE team = ?`, [team]),
              ].join(' of '),
            ),
          );
          return `counted by team: ${counted.join(', ')}`;
        },
      ),
    );
    const shared = await signUp(bases[0]);
    rows.push(
      await load(
        "creature creations, one trainer's through 3 nodes",
        (base, _node, n) => post(`${base}/trainer/${shared.id}/creature`, { name: `Shared ${n}`, speciesId: 1 }, shared.token),
        async (statuses) =>
          stored(await count(`SELECT COUNT(*) AS n FROM ${DATABASE}.creature WHERE trainer_id = ?`, [shared.id]), statuses),
      ),
    );
    return rows;
  } finally {
    for (const instance of instances) instance.process.kill('SIGTERM');
    await sleep(500);
    await cluster.stop();
  }
}

export function renderCluster(rows: readonly ClusterRow[], writers: number, duration: number): string {
  const lines = [
    `Three instances, each on its own node of a three-node Galera cluster on this machine; ${writers} writers per instance, ${duration} s per load.`,
    '',
    '| load | writes | writes/s | answers | conflicts retried (per 100 writes) | ran out of retries (503) | checked in the database |',
    '|---|---:|---:|---|---:|---:|---:|',
  ];
  for (const row of rows) {
    const answers = Object.entries(row.statuses)
      .map(([status, n]) => `${status}: ${n}`)
      .join(', ');
    const per100 = row.writes > 0 ? ((row.retried / row.writes) * 100).toFixed(1) : '0';
    lines.push(
      `| ${row.load} | ${row.writes} | ${row.perSecond} | ${answers} | ${row.retried} (${per100}) | ${row.gaveUp} | ${row.checked} |`,
    );
  }
  return lines.join('\n');
}

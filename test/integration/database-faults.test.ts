import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { buildApp } from '../../src/app';
import { createTestDatabase, databases, TEST_JWT_SECRET, testConfig } from '../helpers/app';
import { createTrainer } from '../helpers/factories';
import { gql, type Problem } from '../helpers/graphql';
import { TcpProxy } from '../helpers/tcp-proxy';
import { freePort } from '../helpers/ports';

/*
 * MySQL going away and coming back, for real: the app talks to MariaDB through a TCP proxy
 * that the test cuts and restores. (SQLite is a file in the process: it cannot go away.)
 */

const root = join(__dirname, '..', '..');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const describeMysql = databases.includes('mysql') ? describe : describe.skip;

async function eventually<T>(probe: () => Promise<T>, ok: (value: T) => boolean, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  let last = await probe();
  while (!ok(last) && Date.now() < deadline) {
    await sleep(200);
    last = await probe();
  }
  return last;
}

describeMysql('database faults (MySQL through a TCP proxy)', () => {
  let database: { url: string; drop(): Promise<void> };
  let proxy: TcpProxy;
  let proxiedUrl: string;

  beforeAll(async () => {
    database = await createTestDatabase('mysql');
    const url = new URL(database.url);
    proxy = new TcpProxy(url.hostname, Number(url.port || 3306));
    url.port = String(await proxy.start());
    proxiedUrl = url.toString();
  });
  afterAll(async () => {
    await proxy.cut();
    await database.drop();
  });

  it('fails fast with SERVICE_UNAVAILABLE while MySQL is away, under load, and recovers by itself', async () => {
    const lines: string[] = [];
    const app = await buildApp(testConfig(proxiedUrl, { LOG_LEVEL: 'error' }), { logStream: { write: (line) => lines.push(line) } });
    try {
      const { trainer, token } = await createTrainer(app);
      const graphql = () => gql<{ me: { id: string } }>(app, '{ me { id creaturesOwned } }', {}, token);
      const rest = () => app.inject({ method: 'GET', url: `/trainer/${trainer.id}`, headers: { authorization: `Bearer ${token}` } });
      // Lists read their page while the index catches up: both fail together when the database goes.
      const list = () => app.inject({ method: 'GET', url: '/trainer?limit=20', headers: { authorization: `Bearer ${token}` } });
      const page = () => gql(app, '{ trainers(limit: 5) { totalCount items { id } } }', {}, token);
      expect((await graphql()).errors).toBeUndefined();

      // Load in flight while the database goes away.
      const load = Array.from({ length: 40 }, (_, i) =>
        [
          () => graphql().then((r) => r.errors?.[0]?.extensions?.code ?? 'OK'),
          () => rest().then((r) => (r.statusCode === 200 ? 'OK' : r.json<Problem>().code)),
          () => list().then((r) => (r.statusCode === 200 ? 'OK' : r.json<Problem>().code)),
          () => page().then((r) => r.errors?.[0]?.extensions?.code ?? 'OK'),
        ][i % 4](),
      );
      await proxy.cut();
      const during = await Promise.all(load);
      expect(during.filter((code) => code !== 'OK' && code !== 'SERVICE_UNAVAILABLE')).toEqual([]);
      const lists = await Promise.all([list(), page()]);
      expect([lists[0].json<Problem>().code, lists[1].errors?.[0]?.extensions?.code]).toEqual([
        'SERVICE_UNAVAILABLE',
        'SERVICE_UNAVAILABLE',
      ]);

      const started = Date.now();
      const down = await Promise.all([graphql(), rest(), app.inject({ method: 'GET', url: '/readyz' })]);
      expect(Date.now() - started).toBeLessThan(4000);
      expect(down[0].errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
      expect(down[1].statusCode).toBe(503);
      expect(down[1].json<Problem>().code).toBe('SERVICE_UNAVAILABLE');
      expect(down[2].statusCode).toBe(503);
      // The log names what the driver saw, not only the code the client got.
      const unavailable = lines.map((line) => JSON.parse(line) as { msg?: string; err?: { message?: string; type?: string } });
      const logged = unavailable.filter((entry) => entry.msg === 'database unavailable');
      expect(logged.length).toBeGreaterThan(0);
      expect(logged.every((entry) => entry.err?.type !== 'AppError')).toBe(true);

      await proxy.restore();
      const back = await eventually(graphql, (r) => r.errors === undefined, 5000);
      expect(back.data!.me.id).toBe(String(trainer.id));
      expect((await rest()).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await proxy.restore().catch(() => undefined);
      await app.close();
    }
  });

  it('starts while MySQL is away: alive, not ready, SERVICE_UNAVAILABLE, then ready on its own, and survives losing it under list load', async () => {
    await proxy.cut();
    const port = await freePort();
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: proxiedUrl,
        JWT_SECRET: TEST_JWT_SECRET,
        LOG_LEVEL: 'warn',
      },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const base = `http://127.0.0.1:${port}`;
    const get = (path: string) =>
      fetch(`${base}${path}`).then(
        (r) => r.status,
        () => 0,
      );
    try {
      expect(
        await eventually(
          () => get('/healthz'),
          (s) => s === 200,
          20_000,
        ),
      ).toBe(200);
      expect(await get('/readyz')).toBe(503);
      const early = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(early.status).toBe(503);
      expect(((await early.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe(
        'SERVICE_UNAVAILABLE',
      );
      expect(output).toMatch(/database unavailable; retrying/);

      await proxy.restore();
      expect(
        await eventually(
          () => get('/readyz'),
          (s) => s === 200,
          15_000,
        ),
      ).toBe(200);
      const later = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(later.status).toBe(200);
      expect(child.exitCode).toBeNull();

      // A list reads its page while the index catches up, in one round trip: when the database
      // goes away under their load, both fail together, and the process must neither crash (an
      // unhandled rejection ends a Node process) nor leave a request unanswered.
      const nickname = `fault_${Date.now()}`;
      const json = { 'content-type': 'application/json' };
      const registered = await fetch(`${base}/trainer`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({
          nickname,
          firstName: 'F',
          lastName: 'T',
          email: `${nickname}@example.test`,
          password: 'password-1',
          team: 'VALOR',
        }),
      });
      expect(registered.status).toBe(201);
      const login = await fetch(`${base}/trainer/authenticate`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ email: `${nickname}@example.test`, password: 'password-1' }),
      });
      const { token } = (await login.json()) as { token: string };
      const list = () =>
        fetch(`${base}/trainer?limit=20`, { headers: { authorization: `Bearer ${token}` } }).then(
          (r) => r.status,
          () => 0,
        );
      expect(await list()).toBe(200);
      const load = Array.from({ length: 40 }, list);
      await proxy.cut();
      const statuses = await Promise.all(load);
      expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
      expect(statuses).toContain(503);
      await sleep(300);
      expect(child.exitCode).toBeNull();
      expect(await get('/healthz')).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.on('exit', resolve));
      await proxy.restore().catch(() => undefined);
    }
  });
});

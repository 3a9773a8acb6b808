import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { loadDatabaseConfig } from '../../src/config';
import { createDataSource } from '../../src/db/data-source';
import { migrations } from '../../src/db/migrations/index';
import { createTestDatabase, databases, TEST_JWT_SECRET } from '../helpers/app';
import { freePort } from '../helpers/ports';

/*
 * `npm run migrate` and MIGRATE_ON_START, as an operator runs them: real processes (through
 * ts-node, so no build is needed) on a database of their own; what ran is read from the
 * migrations table.
 */

const root = join(__dirname, '..', '..');
const ALL = migrations.map((m) => m.name);
const LAST = ALL[ALL.length - 1];

interface Ran {
  code: number | null;
  output: string;
}

function run(entry: string, env: Record<string, string>): { child: ChildProcess; done: Promise<Ran>; output: () => string } {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', entry], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const done = new Promise<Ran>((resolve) => child.on('exit', (code) => resolve({ code, output })));
  return { child, done, output: () => output };
}

const migrate = (url: string) => run('src/migrate.ts', { DATABASE_URL: url }).done;

/** The migrations recorded in the database's migrations table, oldest first. */
async function recorded(url: string): Promise<string[]> {
  const dataSource = createDataSource(loadDatabaseConfig({ DATABASE_URL: url }));
  await dataSource.initialize();
  try {
    const rows = await dataSource.query<{ name: string }[]>('SELECT name FROM migrations ORDER BY id').catch(() => []);
    return rows.map((r) => r.name);
  } finally {
    await dataSource.destroy();
  }
}

/** Migrates fully, then reverts the newest migration: a database one migration behind the code. */
async function oneBehind(url: string): Promise<void> {
  const dataSource = createDataSource(loadDatabaseConfig({ DATABASE_URL: url }));
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  await dataSource.undoLastMigration({ transaction: 'each' });
  await dataSource.destroy();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(databases)('migrations on %s', (kind) => {
  let url: string;
  let drop: () => Promise<void>;
  const children: ChildProcess[] = [];
  beforeEach(async () => {
    const database = await createTestDatabase(kind);
    url = database.url;
    drop = () => database.drop();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    await drop();
  });

  it('npm run migrate runs every pending migration, records each once, and finds nothing left a second time', async () => {
    const first = await migrate(url);
    expect(first.code).toBe(0);
    expect(first.output).toContain(`migrate: ran ${ALL.length} migration(s)`);
    expect(await recorded(url)).toEqual(ALL);

    const second = await migrate(url);
    expect(second.code).toBe(0);
    expect(second.output).toContain('migrate: the schema is current; nothing to run');
    expect(await recorded(url)).toEqual(ALL);
  });

  it('runs only what is pending', async () => {
    await oneBehind(url);
    expect(await recorded(url)).toEqual(ALL.slice(0, -1));
    const ran = await migrate(url);
    expect(ran.code).toBe(0);
    expect(ran.output).toContain(`"ran":["${LAST}"]`);
    expect(await recorded(url)).toEqual(ALL);
  });

  if (kind === 'mysql') {
    it('two migrate commands at once take turns through the named lock: both succeed, each migration runs once', async () => {
      const [a, b] = await Promise.all([migrate(url), migrate(url)]);
      expect([a.code, b.code]).toEqual([0, 0]);
      expect(await recorded(url)).toEqual(ALL);
    });
  }

  it('MIGRATE_ON_START=false against an older schema: serves nothing (503, a log line naming the pending migration) until npm run migrate has run', async () => {
    await oneBehind(url);
    const port = await freePort();
    const instance = run('src/main.ts', {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: url,
      JWT_SECRET: TEST_JWT_SECRET,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      MIGRATE_ON_START: 'false',
    });
    children.push(instance.child);
    const get = (path: string) =>
      fetch(`http://127.0.0.1:${port}${path}`).then(
        async (r) => ({ status: r.status, body: await r.text() }),
        () => ({ status: 0, body: '' }),
      );
    for (let i = 0; i < 150 && (await get('/healthz')).status !== 200; i += 1) await sleep(200);
    for (let i = 0; i < 100 && !instance.output().includes('pending migration'); i += 1) await sleep(100);

    expect(instance.output()).toMatch(new RegExp(`The database schema is behind: 1 pending migration\\(s\\) \\(${LAST}\\)`));
    expect(instance.output()).toContain('npm run migrate');
    expect((await get('/readyz')).status).toBe(503);
    const rest = await get('/trainer');
    expect(rest.status).toBe(503);
    expect(JSON.parse(rest.body)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', detail: expect.stringMatching(/migrations/) });
    const graphql = await fetch(`http://127.0.0.1:${port}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ trainers { totalCount } }' }),
    });
    expect(graphql.status).toBe(503);
    expect(((await graphql.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe(
      'SERVICE_UNAVAILABLE',
    );
    // The instance ran nothing itself.
    expect(await recorded(url)).toEqual(ALL.slice(0, -1));

    // The deploy's migration step: the instance serves by itself once it is done (it checks again within 5 s).
    expect((await migrate(url)).code).toBe(0);
    let ready = 0;
    for (let i = 0; i < 100 && ready !== 200; i += 1) {
      ready = (await get('/readyz')).status;
      if (ready !== 200) await sleep(100);
    }
    expect(ready).toBe(200);
    const registered = await fetch(`http://127.0.0.1:${port}/trainer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        nickname: 'deployed',
        firstName: 'Dee',
        lastName: 'Ploy',
        email: 'deployed@example.test',
        password: 'migrated-first',
        team: 'VALOR',
      }),
    });
    expect(registered.status).toBe(201);
    instance.child.kill('SIGTERM');
    expect((await instance.done).code).toBe(0);
  });

  it('by default an instance migrates by itself at start', async () => {
    await oneBehind(url);
    const port = await freePort();
    const instance = run('src/main.ts', {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: url,
      JWT_SECRET: TEST_JWT_SECRET,
      LOG_LEVEL: 'warn',
    });
    children.push(instance.child);
    let ready = 0;
    for (let i = 0; i < 150 && ready !== 200; i += 1) {
      ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (ready !== 200) await sleep(200);
    }
    expect(ready).toBe(200);
    expect(await recorded(url)).toEqual(ALL);
    instance.child.kill('SIGTERM');
    expect((await instance.done).code).toBe(0);
  });
});

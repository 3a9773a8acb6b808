import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createTestDatabase, databases, TEST_JWT_SECRET } from '../helpers/app';

/*
 * Graceful shutdown of the real process: SIGTERM during a burst of requests over both
 * transports. /readyz turns 503 at once, every request the server accepted is answered
 * normally (slow logins in flight included), and the process exits 0 within 10 s.
 */

const root = join(__dirname, '..', '..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

interface Answer {
  status?: number;
  error?: string;
  body: string;
  startedAt: number;
  endedAt: number;
}

/** One request on a new connection (no keep-alive), so that each is accepted or refused on its own. */
function send(port: number, method: string, path: string, body?: unknown, token?: string): Promise<Answer> {
  const startedAt = Date.now();
  return new Promise((resolve) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: {
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode, body: text, startedAt, endedAt: Date.now() }));
        res.on('error', (error) => resolve({ error: error.message, body: text, startedAt, endedAt: Date.now() }));
      },
    );
    req.on('error', (error) => resolve({ error: error.message, body: '', startedAt, endedAt: Date.now() }));
    req.end(payload);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(databases)('graceful shutdown on %s', (kind) => {
  let child: ChildProcess | undefined;
  let output = '';
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await drop?.();
  });

  it('drains on SIGTERM: readiness fails at once, accepted requests all succeed, exit 0 within 10 s', async () => {
    const database = await createTestDatabase(kind);
    drop = database.drop;
    const port = await freePort();
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
        SHUTDOWN_DELAY_MS: '600',
        // Many logins of one trainer in flight at once would otherwise count against its failure limit.
        LOGIN_MAX_FAILURES: '1000',
      },
    });
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
      child!.on('exit', (code) => resolve({ code, at: Date.now() })),
    );

    // The process serves at once and connects to the database in the background.
    for (let i = 0; i < 100 && (await send(port, 'GET', '/readyz')).status !== 200; i += 1) await sleep(200);
    expect((await send(port, 'GET', '/readyz')).status).toBe(200);

    const email = `shutdown${Date.now()}@example.test`;
    const registered = await send(port, 'POST', '/trainer', {
      nickname: `down_${Date.now()}`,
      firstName: 'Shut',
      lastName: 'Down',
      email,
      password: 'graceful-exit',
      team: 'MYSTIC',
    });
    expect(registered.status).toBe(201);
    const id = JSON.parse(registered.body).id as number;
    const token = JSON.parse((await send(port, 'POST', '/trainer/authenticate', { email, password: 'graceful-exit' })).body).token as string;

    const burst: Promise<Answer>[] = [];
    let sigtermAt = 0;
    let readyDuringDrain: Answer | undefined;
    const burstStart = Date.now();
    // Requests keep coming during the drain delay (600 ms), and stop 200 ms before the server stops
    // accepting: the ones still in flight then (slow logins) must be answered.
    for (let i = 0; !sigtermAt || Date.now() - sigtermAt < 400; i += 1) {
      if (i % 3 === 0) burst.push(send(port, 'POST', '/trainer/authenticate', { email, password: 'graceful-exit' }));
      else if (i % 3 === 1) burst.push(send(port, 'GET', `/trainer/${id}`, undefined, token));
      else burst.push(send(port, 'POST', '/graphql', { query: '{ me { id creaturesOwned } }' }, token));
      if (!sigtermAt && Date.now() - burstStart > 300) {
        sigtermAt = Date.now();
        child.kill('SIGTERM');
        readyDuringDrain = await send(port, 'GET', '/readyz');
      }
      await sleep(15);
    }
    const answers = await Promise.all(burst);
    const { code, at } = await exited;

    expect(readyDuringDrain?.status).toBe(503);
    const failures = answers.filter((a) => a.error !== undefined || a.status !== 200);
    expect(failures).toEqual([]);
    expect(answers.length).toBeGreaterThan(30);
    // Some of them were still being answered once the server had stopped accepting.
    expect(answers.some((a) => a.endedAt > sigtermAt + 600)).toBe(true);
    expect(code).toBe(0);
    expect(at - sigtermAt).toBeLessThan(10_000);
    expect(output).toContain('shut down');
    // Once closed, nothing is accepted any more.
    expect((await send(port, 'GET', '/healthz')).error).toMatch(/ECONNREFUSED/);
  });
});

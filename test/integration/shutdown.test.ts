import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { createTestDatabase, databases, TEST_JWT_SECRET } from '../helpers/app';
import { freePort } from '../helpers/ports';

/*
 * Graceful shutdown of the real process: SIGTERM during a burst of requests over both
 * transports. /readyz turns 503 at once, every request the server accepted is answered
 * normally (slow logins in flight included), and the process exits 0 within 10 s.
 */

const root = join(__dirname, '..', '..');

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

/**
 * A request whose body is held back: its headers are sent now, its body when `finish` is
 * called. The server has accepted it (it is in flight) for as long as it waits.
 */
function heldRequest(port: number, path: string, body: unknown, token?: string): { finish(): void; answer: Promise<Answer> } {
  const startedAt = Date.now();
  const payload = JSON.stringify(body);
  let finish = () => undefined as void;
  const answer = new Promise<Answer>((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode, body: text, startedAt, endedAt: Date.now() }));
      },
    );
    req.on('error', (error) => resolve({ error: error.message, body: '', startedAt, endedAt: Date.now() }));
    req.flushHeaders();
    req.write(payload.slice(0, 10));
    finish = () => void req.end(payload.slice(10));
  });
  return { finish: () => finish(), answer };
}

describe.each(databases)('graceful shutdown on %s', (kind) => {
  let child: ChildProcess | undefined;
  let output = '';
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await drop?.();
  });

  it('drains on SIGTERM: readiness fails at once, every accepted request succeeds, in-flight ones too, exit 0 within 10 s', async () => {
    const database = await createTestDatabase(kind);
    drop = () => database.drop();
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
        SHUTDOWN_DELAY_MS: '1000',
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
    const id = (JSON.parse(registered.body) as { id: number }).id;
    const token = (
      JSON.parse((await send(port, 'POST', '/trainer/authenticate', { email, password: 'graceful-exit' })).body) as { token: string }
    ).token;

    // Counted, not timed: the same mix of requests before and after the signal, whatever the machine's speed.
    const mix = (i: number) =>
      i % 3 === 0
        ? send(port, 'POST', '/trainer/authenticate', { email, password: 'graceful-exit' })
        : i % 3 === 1
          ? send(port, 'GET', `/trainer/${id}`, undefined, token)
          : send(port, 'POST', '/graphql', { query: '{ me { id creaturesOwned } }' }, token);
    const held = [
      heldRequest(port, '/trainer/authenticate', { email, password: 'graceful-exit' }),
      heldRequest(port, '/graphql', { query: '{ me { id } }' }, token),
    ];
    // Answered only once the server has read the held requests' headers, sent earlier on their own
    // connections: from then on they are requests in flight, not idle connections (which a closing
    // server may drop; on a loaded machine 100 ms was not always enough for that read).
    await Promise.all([0, 1, 2].map(() => send(port, 'GET', '/healthz')));
    const before = Array.from({ length: 15 }, (_, i) => mix(i));
    await sleep(100);
    const sigtermAt = Date.now();
    child.kill('SIGTERM');
    // The signal arrives between two turns of the server's event loop: readiness fails from then on.
    let readyDuringDrain = await send(port, 'GET', '/readyz');
    for (let i = 0; i < 20 && readyDuringDrain.status === 200; i += 1) readyDuringDrain = await send(port, 'GET', '/readyz');
    // Sent during the drain delay: whether each arrives before the server stops accepting depends
    // on the machine, so only those the server accepted are counted.
    const during = Array.from({ length: 15 }, (_, i) => mix(i));

    // Once a new connection is refused, the server has stopped accepting: the held requests are
    // still in flight, and must be answered normally when their bodies arrive.
    let refused = false;
    for (let i = 0; i < 200 && !refused; i += 1) {
      refused = /ECONNREFUSED/.test((await send(port, 'GET', '/healthz')).error ?? '');
      if (!refused) await sleep(25);
    }
    expect(refused).toBe(true);
    for (const request of held) request.finish();
    const heldAnswers = await Promise.all(held.map((request) => request.answer));
    const beforeAnswers = await Promise.all(before);
    const duringAnswers = await Promise.all(during);
    const { code, at } = await exited;

    expect(readyDuringDrain.status).toBe(503);
    expect(heldAnswers.map((a) => [a.status, a.error])).toEqual([
      [200, undefined],
      [200, undefined],
    ]);
    expect(JSON.parse(heldAnswers[1].body)).toEqual({ data: { me: { id: String(id) } } });
    expect(beforeAnswers.filter((a) => a.status !== 200)).toEqual([]);
    const accepted = duringAnswers.filter((a) => !/ECONNREFUSED/.test(a.error ?? ''));
    expect(accepted.filter((a) => a.status !== 200)).toEqual([]);
    expect(code).toBe(0);
    expect(at - sigtermAt).toBeLessThan(10_000);
    expect(output).toContain('shut down');
    // Once closed, nothing is accepted any more.
    expect((await send(port, 'GET', '/healthz')).error).toMatch(/ECONNREFUSED/);
  });
});

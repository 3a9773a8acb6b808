import { connect } from 'node:net';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';
import { createTrainer, TEST_PASSWORD, type TrainerFixture } from '../helpers/factories';

interface LogLine {
  msg: string;
  reqId?: string;
  route?: string;
  statusCode?: number;
  operationName?: string;
  trainerId?: number;
  responseTime?: number;
}

describe.each(databases)('logs and metrics on %s', (kind) => {
  const lines: string[] = [];
  let t: TestApp;
  let me: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind, { LOG_LEVEL: 'info' }, { logStream: { write: (line) => lines.push(line) } });
    me = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  const completed = () => lines.map((l) => JSON.parse(l) as LogLine).filter((l) => l.msg === 'request completed');

  it('logs one line per GraphQL request with its id, operation name, trainer and status, and no token', async () => {
    lines.length = 0;
    await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}`, 'x-request-id': 'req-graphql-1' },
      payload: { query: 'query WhoAmI { me { id } }', operationName: 'WhoAmI' },
    });
    expect(completed()).toEqual([
      expect.objectContaining({
        reqId: 'req-graphql-1',
        route: '/graphql',
        statusCode: 200,
        operationName: 'WhoAmI',
        trainerId: me.trainer.id,
      }),
    ]);
    expect(lines.join('\n')).not.toContain(me.token);
  });

  it('logs REST requests with their route and trainer, and never a password', async () => {
    lines.length = 0;
    await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}`, headers: { authorization: `Bearer ${me.token}` } });
    await t.app.inject({ method: 'POST', url: '/trainer/authenticate', payload: { email: me.email, password: TEST_PASSWORD } });
    await t.app.inject({ method: 'POST', url: '/trainer/authenticate', payload: { email: me.email, password: 'wrong-password-xyz' } });
    expect(completed()).toEqual([
      expect.objectContaining({ route: '/trainer/:trainerId', statusCode: 200, trainerId: me.trainer.id }),
      expect.objectContaining({ route: '/trainer/authenticate', statusCode: 200 }),
      expect.objectContaining({ route: '/trainer/authenticate', statusCode: 401 }),
    ]);
    const text = lines.join('\n');
    expect(text).not.toContain(TEST_PASSWORD);
    expect(text).not.toContain('wrong-password-xyz');
  });

  it('counts requests and their latency by route, operation and status at /metrics', async () => {
    await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
      payload: { query: 'query CountMe { me { id } }' },
    });
    await t.app.inject({ method: 'GET', url: '/trainer/abc', headers: { authorization: `Bearer ${me.token}` } });
    // Statements at once (readiness pings, one each): the pool opens connections beyond the one it has had since start.
    await Promise.all(Array.from({ length: 8 }, () => t.app.inject({ method: 'GET', url: '/readyz' })));
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.body;
    expect(text).toMatch(/^http_requests_total\{method="POST",route="\/graphql",operation="CountMe",status="200"\} 1$/m);
    expect(text).toMatch(/^http_requests_total\{method="GET",route="\/trainer\/:trainerId",operation="",status="400"\} 1$/m);
    expect(text).toMatch(
      /^http_request_duration_seconds_bucket\{le="0\.1",method="POST",route="\/graphql",operation="CountMe",status="200"\} 1$/m,
    );
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    if (kind === 'mysql') {
      // mysql2 opened a connection and handed it out, counted from its public pool events.
      expect(text).toMatch(/^db_pool_events_total\{event="connection"\} [1-9]\d*$/m);
      expect(text).toMatch(/^db_pool_events_total\{event="acquire"\} [1-9]\d*$/m);
    }
  });

  it('counts and logs a request whose client closed the connection before its answer, apart from the answered ones', async () => {
    const origin = new URL(await listen(t));
    const metric = (text: string, name: string) =>
      Number(new RegExp(`^${name}\\{method="POST",route="/trainer/authenticate",[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    const metrics = async () => (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const before = await metrics();
    lines.length = 0;
    // A login whose body never arrives whole: the client gives up and closes the connection.
    const socket = connect(Number(origin.port), origin.hostname);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /trainer/authenticate HTTP/1.1\r\nHost: ${origin.host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
    let after = before;
    for (
      let tries = 0;
      tries < 100 && metric(after, 'http_requests_abandoned_total') === metric(before, 'http_requests_abandoned_total');
      tries += 1
    ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await metrics();
    }
    expect(metric(after, 'http_requests_abandoned_total') - metric(before, 'http_requests_abandoned_total')).toBe(1);
    expect(after).toMatch(/^http_requests_abandoned_total\{method="POST",route="\/trainer\/authenticate",operation=""\} \d+$/m);
    // Not counted as answered, with any status.
    const answered = (text: string) =>
      [...text.matchAll(/^http_requests_total\{method="POST",route="\/trainer\/authenticate",[^}]*\} (\d+)$/gm)].reduce(
        (sum, m) => sum + Number(m[1]),
        0,
      );
    expect(answered(after)).toBe(answered(before));
    const logged = lines.map((l) => JSON.parse(l) as LogLine);
    expect(logged.filter((l) => l.msg === 'request abandoned by the client')).toEqual([
      expect.objectContaining({ route: '/trainer/authenticate' }),
    ]);
    expect(logged.filter((l) => l.msg === 'request completed' && l.route === '/trainer/authenticate')).toEqual([]);
  });

  it('shows the password hashes under way at /metrics while logins are checked, and none after', async () => {
    const hashes = async (): Promise<Record<string, number>> => {
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      return Object.fromEntries([...text.matchAll(/^password_hashes\{state="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
    };
    let answered = false;
    const logins = Promise.all(
      Array.from({ length: 3 }, () =>
        t.app.inject({ method: 'POST', url: '/trainer/authenticate', payload: { email: me.email, password: TEST_PASSWORD } }),
      ),
    ).finally(() => (answered = true));
    let busiest = 0;
    while (!answered) {
      const now = await hashes();
      busiest = Math.max(busiest, now.running + now.waiting_login);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect((await logins).map((res) => res.statusCode)).toEqual([200, 200, 200]);
    expect(busiest).toBeGreaterThan(0);
    expect(await hashes()).toEqual({ running: 0, waiting_login: 0, waiting_registration: 0 });
  });
});

describe.each(databases)('slow SQL statements on %s', (kind) => {
  const logged = async (env: Record<string, string>) => {
    const lines: string[] = [];
    const t = await startTestApp(kind, { LOG_LEVEL: 'warn', ...env }, { logStream: { write: (line) => lines.push(line) } });
    try {
      const me = await createTrainer(t.app);
      lines.length = 0;
      await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}`, headers: { authorization: `Bearer ${me.token}` } });
      return lines.map((l) => JSON.parse(l) as { msg: string; sql?: string; timeMs?: number });
    } finally {
      await t.close();
    }
  };

  it('are logged against SLOW_QUERY_MS, its own setting (0: every statement), with the SQL and without its values', async () => {
    const slow = (await logged({ SLOW_QUERY_MS: '0' })).filter((l) => l.msg === 'slow SQL statement');
    expect(slow.length).toBeGreaterThan(0);
    expect(slow[0]).toEqual(expect.objectContaining({ sql: expect.stringMatching(/^SELECT /), timeMs: expect.any(Number) }));
  });

  it('are not logged below the default threshold of 500 ms', async () => {
    expect((await logged({})).filter((l) => l.msg === 'slow SQL statement')).toEqual([]);
  });
});

describe.each(databases)('metrics behind METRICS_TOKEN on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { METRICS_TOKEN: 'scrape-token-0123456789' });
  });
  afterAll(async () => t.close());

  it('answers /metrics only with Authorization: Bearer <METRICS_TOKEN>; 401 problem otherwise', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789', 'scrape-token-0123456789', 'Bearer scrape-token-012345678']) {
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
      expect([authorization, res.statusCode, res.json<{ code: string }>().code]).toEqual([authorization, 401, 'UNAUTHENTICATED']);
      expect(res.body).not.toContain('http_requests_total');
    }
    const ok = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-token-0123456789' } });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('http_requests_total');
  });
});

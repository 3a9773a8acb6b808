// `npm run bench -- --abuse`: what anonymous attackers cost the service, measured from outside
// against the same production process as the other cases (TRUST_PROXY=true, so that one client
// can pose as many addresses through X-Forwarded-For). Every figure is a ratio or a time measured
// in this one run, next to its target. See bench/README.md, "Abuse".
import autocannon, { type Request as AutocannonRequest, type Result } from 'autocannon';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { cpuMs as processCpuMs } from './proc';
import { BENCH_PASSWORD } from './seed';

export interface AbuseRow {
  readonly what: string;
  readonly measured: string;
  readonly target: string;
  readonly ok: boolean;
}

interface Options {
  readonly base: string;
  readonly pid: number;
  readonly duration: number;
  readonly token: string;
  readonly trainers: number;
  readonly log: (message: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const json = { 'content-type': 'application/json' };
const randomAddress = () => `10.${randomBytes(3).join('.')}`;
const fresh = () => `ab${randomBytes(6).toString('hex')}`;
const distinctFragments = (count: number, fields: string) =>
  `{ ${Array.from({ length: count }, (_, i) => `...F${i}`).join(' ')} } ${Array.from({ length: count }, (_, i) => `fragment F${i} on Query { ${fields} }`).join(' ')}`;

function load(
  url: string,
  requests: AutocannonRequest[],
  connections: number,
  duration: number,
): { result: Promise<Result>; stop(): void } {
  let instance: autocannon.Instance | undefined;
  const result = new Promise<Result>((resolve, reject) => {
    instance = autocannon({ url, connections, duration, requests }, (error: unknown, r) =>
      error ? reject(error instanceof Error ? error : new Error('autocannon failed')) : resolve(r),
    );
  });
  return { result, stop: () => instance?.stop() };
}

const statuses = (result: Result) =>
  Object.entries((result as Result & { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {})
    .map(([status, { count }]) => `${count} × ${status}`)
    .join(', ');

/** CPU ms the service has used (user + system); this section runs on Linux only. */
function serverCpuMs(pid: number): number {
  const used = processCpuMs(pid);
  if (used === undefined) throw new Error(`no /proc/${pid}/stat: the abuse section reads the service's CPU from /proc`);
  return used;
}

const ratio = (value: number, base: number) => `${(value / base).toFixed(2)}×`;

/** One request over a raw socket, timed: the status line and the milliseconds it took. */
async function timedFetch(url: string, init: RequestInit): Promise<{ status: number; ms: number; code?: string }> {
  const started = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  const ms = performance.now() - started;
  let code: string | undefined;
  try {
    const body = JSON.parse(text) as { code?: string; errors?: { extensions?: { code?: string } }[] };
    code = body.code ?? body.errors?.[0]?.extensions?.code;
  } catch {
    code = undefined;
  }
  return { status: res.status, ms, code };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function runAbuse(o: Options): Promise<AbuseRow[]> {
  const rows: AbuseRow[] = [];
  const add = (row: AbuseRow) => {
    rows.push(row);
    o.log(`abuse: ${row.what}: ${row.measured} (target ${row.target}) ${row.ok ? 'ok' : 'MISSED'}`);
  };
  const login: AutocannonRequest = {
    method: 'POST',
    path: '/trainer/authenticate',
    headers: json,
    body: JSON.stringify({ email: 'bench1@bench.test', password: BENCH_PASSWORD }),
  };
  const registration = (forwarded: boolean): AutocannonRequest => ({
    method: 'POST',
    path: '/trainer',
    headers: json,
    setupRequest: (req) => {
      const nickname = fresh();
      return {
        ...req,
        headers: { ...json, ...(forwarded ? { 'x-forwarded-for': randomAddress() } : {}) },
        body: JSON.stringify({
          nickname,
          firstName: 'Flood',
          lastName: 'Er',
          email: `${nickname}@flood.test`,
          password: 'flooding-1234',
          team: 'VALOR',
        }),
      };
    },
  });

  // Correct logins, one at a time: idle, then while 50 clients flood registration.
  const idle = await load(o.base, [login], 1, o.duration).result;
  for (const [label, forwarded] of [
    ['one address', false],
    ['many addresses (X-Forwarded-For)', true],
  ] as const) {
    const flood = load(o.base, [registration(forwarded)], 50, o.duration + 5);
    await sleep(1000);
    const during = await load(o.base, [login], 1, o.duration).result;
    flood.stop();
    const flooded = await flood.result;
    add({
      what: `correct login p99 while 50 clients flood registration from ${label}`,
      measured: `${during.latency.p99} ms vs ${idle.latency.p99} ms idle = ${ratio(during.latency.p99, idle.latency.p99)} (flood: ${statuses(flooded)})`,
      target: '≤ 3× idle p99',
      ok: during.latency.p99 <= 3 * idle.latency.p99,
    });
  }

  // A refused duplicate registration against a plain read and a hash (each from fresh addresses, one connection).
  const duplicate = await load(
    o.base,
    [
      {
        method: 'POST',
        path: '/trainer',
        setupRequest: (req) => ({
          ...req,
          headers: { ...json, 'x-forwarded-for': randomAddress() },
          body: JSON.stringify({
            nickname: fresh(),
            firstName: 'Dup',
            lastName: 'Er',
            email: 'bench2@bench.test',
            password: 'duplicate-1234',
            team: 'MYSTIC',
          }),
        }),
      },
    ],
    1,
    o.duration,
  ).result;
  const read = await load(
    o.base,
    [
      {
        method: 'GET',
        headers: { authorization: `Bearer ${o.token}` },
        setupRequest: (req) => ({ ...req, path: `/trainer/${1 + Math.floor(Math.random() * o.trainers)}` }),
      },
    ],
    1,
    o.duration,
  ).result;
  // At one connection, a request's time is 1 / its rate (autocannon's latencies are whole milliseconds).
  const each = (result: Result) => 1000 / result.requests.average;
  add({
    what: 'a 409 registration (email taken) against a plain read and a hash, one connection each',
    measured: `${each(duplicate).toFixed(2)} ms per request (${statuses(duplicate)}); a read (GET /trainer/:id): ${each(read).toFixed(2)} ms (${statuses(read)}); a login (one hash): ${each(idle).toFixed(0)} ms, ${ratio(each(idle), each(duplicate))} the 409`,
    target: 'close to a read, far below a hash',
    ok: each(duplicate) <= 3 * each(read) && each(duplicate) * 20 < each(idle),
  });

  // The most expensive documents that fit the body and token limits, anonymous.
  const documents: Record<string, string> = {
    'the same field 249 times': `{ ${'me { id } '.repeat(249)}}`,
    'one fragment spread 300 times': `query { ${'...F '.repeat(300)}} fragment F on Query { __typename }`,
    '300 distinct aliases': `{ ${Array.from({ length: 300 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
    'a chain of 150 fragments': `query { ...F0 } ${Array.from({ length: 150 }, (_, i) => `fragment F${i} on Query { __typename ${i < 149 ? `...F${i + 1}` : ''} }`).join(' ')}`,
    '200 variables': `query(${Array.from({ length: 200 }, (_, i) => `$v${i}: Int`).join(' ')}) { __typename }`,
    'depth 9 through fragments': `query { ...A } fragment A on Query { trainers { items { creatures { trainer { creatures { trainer { creatures { trainer { id } } } } } } } } }`,
    '250 directives': `{ __typename ${'@include(if: true) '.repeat(250)}}`,
    '300 unknown fields': `{ ${Array.from({ length: 300 }, (_, i) => `nope${i}`).join(' ')} }`,
    '120 unused fragments': `{ __typename } ${Array.from({ length: 120 }, (_, i) => `fragment F${i} on Query { __typename }`).join(' ')}`,
    '150 operations of one name': Array.from({ length: 150 }, () => 'query A { __typename }').join(' '),
    // The fragment families: as many distinct fragments as the limit takes, and one more.
    '20 distinct fragments of one field': distinctFragments(20, 'me { id }'),
    '20 distinct fragments of one field 3 times': distinctFragments(20, 'me { id } me { id } me { id }'),
    '20 fragments spreading each other (a chain)': `{ ...F0 } ${Array.from({ length: 20 }, (_, i) => `fragment F${i} on Query { me { id } ${i < 19 ? `...F${i + 1}` : ''} }`).join(' ')}`,
    '20 fragments spreading each other (a tree)': `{ ...F0 } ${Array.from({ length: 20 }, (_, i) => `fragment F${i} on Query { me { id } ${2 * i + 1 < 20 ? `...F${2 * i + 1}` : ''} ${2 * i + 2 < 20 ? `...F${2 * i + 2}` : ''} }`).join(' ')}`,
    '83 distinct fragments of one field (over the limit)': distinctFragments(83, 'me { id }'),
    '300 unknown fields after a 30 KB comment': `#${'x'.repeat(30_000)}\n{ ${Array.from({ length: 300 }, (_, i) => `nope${i}`).join(' ')} }`,
    'a 90 KB comment (over the length limit)': `#${'x'.repeat(90_000)}\n{ __typename }`,
  };
  // Every request's text is new (a comment numbered apart), so no cache of the service's helps.
  let sent = 0;
  const newText = (query: string) => `${query}\n#${(sent += 1)}`;
  const bodies: Record<string, () => string> = Object.fromEntries(
    Object.entries(documents).map(([name, query]) => [name, () => JSON.stringify({ query: newText(query) })]),
  );
  bodies['an operationName of 95 KB of spaces'] = () =>
    JSON.stringify({ query: newText('{ __typename }'), operationName: ' '.repeat(95_000) });
  const asRequest = (body: () => string): AutocannonRequest => ({
    method: 'POST',
    path: '/graphql',
    headers: json,
    setupRequest: (request) => ({ ...request, body: body() }),
  });
  const costs: { name: string; cpuMs: number; p50: number; status: string }[] = [];
  for (const [name, body] of Object.entries(bodies)) {
    const before = serverCpuMs(o.pid);
    const result = await load(o.base, [asRequest(body)], 1, 3).result;
    const cpuMs = (serverCpuMs(o.pid) - before) / Math.max(1, result.requests.total);
    costs.push({ name, cpuMs, p50: result.latency.p50, status: statuses(result) });
  }
  const worst = costs.reduce((a, b) => (b.cpuMs > a.cpuMs ? b : a));
  add({
    what: 'anonymous worst-case documents: server CPU per request',
    measured: costs.map((c) => `${c.name}: ${c.cpuMs.toFixed(2)} ms CPU, p50 ${c.p50} ms (${c.status})`).join('; '),
    target: '≤ ~10 ms each before execution',
    ok: costs.every((c) => c.cpuMs <= 10),
  });
  const healthIdle = await load(o.base, [{ method: 'GET', path: '/healthz' }], 1, 3).result;
  const attack = load(o.base, [asRequest(bodies[worst.name])], 4, o.duration + 2);
  await sleep(500);
  const health = await load(o.base, [{ method: 'GET', path: '/healthz' }], 1, o.duration).result;
  attack.stop();
  const attacked = await attack.result;
  add({
    what: `/healthz p50 while 4 clients send the costliest document (${worst.name})`,
    measured: `${health.latency.p50} ms (idle ${healthIdle.latency.p50} ms; attackers got ${Math.round(attacked.requests.average)} answers/s)`,
    target: 'p50 < 20 ms',
    ok: health.latency.p50 < 20,
  });

  // Nested input far past 64 levels.
  const nested = [];
  for (let i = 0; i < 20; i += 1) {
    nested.push(
      await timedFetch(`${o.base}/graphql`, {
        method: 'POST',
        headers: json,
        body: `{"query":"query($x: Int) { __typename }","variables":{"x":${'['.repeat(5000)}${']'.repeat(5000)}}}`,
      }),
    );
  }
  add({
    what: 'a variable nested 5,000 arrays deep',
    measured: `${nested[0].status} ${nested[0].code ?? ''}, median ${median(nested.map((n) => n.ms)).toFixed(1)} ms`,
    target: '400 BAD_USER_INPUT in milliseconds',
    ok: nested.every((n) => n.status === 400 && n.code === 'BAD_USER_INPUT') && median(nested.map((n) => n.ms)) < 50,
  });

  // Slow headers and a slow body, one byte a second.
  const url = new URL(o.base);
  for (const [label, head, drip] of [
    ['headers', 'GET /healthz HTTP/1.1\r\nHost: bench\r\n', 'X-Slow: '],
    [
      'body',
      'POST /trainer/authenticate HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
      '{"email":',
    ],
  ] as const) {
    const outcome = await new Promise<{ seconds: number; answer: string }>((resolve) => {
      const started = performance.now();
      let answer = '';
      const socket: Socket = connect(Number(url.port), url.hostname, () => socket.write(head));
      let i = 0;
      const timer = setInterval(() => socket.write(drip[i++ % drip.length]), 1000);
      socket.on('data', (chunk) => (answer += chunk.toString()));
      const finish = () => {
        clearInterval(timer);
        resolve({ seconds: (performance.now() - started) / 1000, answer: answer.split('\r\n')[0] || '(nothing)' });
      };
      socket.on('close', finish);
      socket.on('error', () => undefined);
      setTimeout(() => socket.destroy(), 30_000);
    });
    add({
      what: `${label} sent one byte a second`,
      measured: `closed after ${outcome.seconds.toFixed(1)} s, answer: ${outcome.answer}`,
      target: 'closed within 10 s, 408 where possible',
      ok: outcome.seconds <= 10.5,
    });
  }

  // 500 sockets that connect and say nothing.
  const idleHealth = await load(o.base, [{ method: 'GET', path: '/healthz' }], 1, 3).result;
  const sockets: Socket[] = [];
  let closed = 0;
  let answered = 0;
  const opened = performance.now();
  for (let i = 0; i < 500; i += 1) {
    const socket = connect(Number(url.port), url.hostname);
    socket.once('data', () => (answered += 1));
    socket.on('close', () => (closed += 1));
    socket.on('error', () => undefined);
    sockets.push(socket);
  }
  await sleep(500);
  const withIdle = await load(o.base, [{ method: 'GET', path: '/healthz' }], 1, o.duration).result;
  await sleep(Math.max(0, 15_000 - (performance.now() - opened)));
  const closedAfter = closed;
  sockets.forEach((s) => s.destroy());
  add({
    what: '/healthz p50 with 500 idle sockets open',
    measured: `${withIdle.latency.p50} ms (without: ${idleHealth.latency.p50} ms); after 15 s the server had closed ${closedAfter} of the 500 (${answered} with a 408)`,
    target: 'not slower; closed within 10 s',
    ok: withIdle.latency.p50 <= Math.max(2 * idleHealth.latency.p50, idleHealth.latency.p50 + 2) && closedAfter === 500,
  });
  return rows;
}

export function renderAbuse(rows: AbuseRow[]): string {
  const lines = ['| what | measured | target | met |', '| --- | --- | --- | --- |'];
  for (const row of rows) lines.push(`| ${row.what} | ${row.measured} | ${row.target} | ${row.ok ? 'yes' : '**no**'} |`);
  return lines.join('\n');
}

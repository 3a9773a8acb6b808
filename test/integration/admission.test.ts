import type { FastifyInstance } from 'fastify';
import { connect, type Socket } from 'node:net';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { WAITING_LIMIT } from '../../src/db/data-source';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';
import { graphqlDriver, restDriver, value } from '../helpers/drivers';
import { createTrainer, type TrainerFixture } from '../helpers/factories';

/*
 * Admission (src/http/admission.ts): while every database connection has a statement, or while
 * the requests let in weigh the budget, a request of the API waits at the door for its turn, and is
 * answered once one is free; past WAITING_LIMIT waiting requests, SERVICE_UNAVAILABLE. SQLite is
 * never busy and has no budget: nothing waits there.
 */

const waitingOf = async (app: FastifyInstance): Promise<number> => {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  return Number(/^http_requests_waiting (\d+)$/m.exec(text)?.[1]);
};

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; tries < 400; tries += 1) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never: ${what}`);
}

describe.each(databases)('admission on %s', (kind) => {
  let t: TestApp;
  let app: FastifyInstance;
  let owner: TrainerFixture;
  let viewer: TrainerFixture;

  beforeAll(async () => {
    t = await startTestApp(kind);
    app = t.app;
    owner = await createTrainer(app);
    viewer = await createTrainer(app);
  });
  afterAll(() => t.close());

  const creatureRows = async (): Promise<number> => {
    const [row] = await app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature WHERE trainer_id = ?', [
      owner.trainer.id,
    ]);
    return Number(row.n);
  };

  const mysqlOnly = kind === 'mysql' ? it : it.skip;
  const sqliteOnly = kind === 'sqlite' ? it : it.skip;

  /**
   * Every connection of the pool taken: the owner's row locked, ten creature writes (`${prefix} i`)
   * each wait for it on a connection of their own until the lock is released.
   */
  async function holdEveryConnection(prefix: string) {
    const blocker: Connection = await createConnection({ uri: t.config.database.type === 'mysql' ? t.config.database.url : '' });
    await blocker.query('START TRANSACTION');
    await blocker.query('SELECT id FROM trainer WHERE id = ? FOR UPDATE', [owner.trainer.id]);
    const rest = restDriver(app);
    const writes = Array.from({ length: 10 }, (_, i) =>
      rest.createCreature(owner.token, String(owner.trainer.id), { name: `${prefix} ${i}`, speciesId: 1 }),
    );
    await until('ten writes waiting for the lock', async () => {
      const [rows] = await blocker.query<RowDataPacket[]>(
        "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'UPDATE trainer % creatures_owned = %'",
      );
      return Number(rows[0].n) >= 10;
    });
    return { blocker, writes };
  }

  mysqlOnly(
    'holds requests at the door while every connection has a statement, answers them all once one is free, and refuses past the limit with 503',
    async () => {
      const before = await creatureRows();
      const { blocker, writes } = await holdEveryConnection('held');
      let released = false;
      try {
        // Every connection is taken: a read waits at the door, not in the pool.
        let answered = false;
        const read = graphqlDriver(app)
          .getTrainer(viewer.token, String(owner.trainer.id))
          .finally(() => (answered = true));
        await until('the read waiting', async () => (await waitingOf(app)) === 1);
        expect(answered).toBe(false);

        // The queue filled to its limit, one more is refused at once on both transports.
        const queued = Array.from({ length: WAITING_LIMIT - 1 }, () =>
          app.inject({ method: 'GET', url: `/trainer/${owner.trainer.id}`, headers: { authorization: `Bearer ${viewer.token}` } }),
        );
        await until('the queue full', async () => (await waitingOf(app)) === WAITING_LIMIT);
        const refused = await app.inject({
          method: 'GET',
          url: `/trainer/${owner.trainer.id}`,
          headers: { authorization: `Bearer ${viewer.token}` },
        });
        expect(refused.statusCode).toBe(503);
        expect(refused.headers['retry-after']).toBe('1');
        expect(refused.json<{ code: string }>().code).toBe('SERVICE_UNAVAILABLE');
        const refusedGraphQL = await app.inject({
          method: 'POST',
          url: '/graphql',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${viewer.token}` },
          payload: { query: '{ me { id } }' },
        });
        expect(refusedGraphQL.statusCode).toBe(503);
        expect(refusedGraphQL.json<{ errors: { extensions: { code: string } }[] }>().errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
        expect(answered).toBe(false);

        await blocker.query('ROLLBACK');
        released = true;
        const created = (await Promise.all(writes)).map(value);
        expect(created.map((creature) => creature.name).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `held ${i}`).sort());
        expect(await creatureRows()).toBe(before + 10);
        expect(value(await read).id).toBe(owner.trainer.id);
        const statuses = new Set((await Promise.all(queued)).map((res) => res.statusCode));
        expect([...statuses]).toEqual([200]);
        expect(await waitingOf(app)).toBe(0);
      } finally {
        if (!released) await blocker.query('ROLLBACK');
        await blocker.end();
      }
    },
  );

  mysqlOnly('does not run a request whose client went away while it waited at the door', async () => {
    const before = await creatureRows();
    const origin = await listen(t);
    const { blocker, writes } = await holdEveryConnection('kept');
    let released = false;
    try {
      // A creature write over a real connection waits at the door, then its client gives up.
      const client = new AbortController();
      // (GraphQL checks its caller lazily, after the door; REST routes that need a session read it before.)
      const abandoned = fetch(`${origin}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
        body: JSON.stringify({
          query: 'mutation($trainerId: ID!, $input: CreateCreatureInput!) { createCreature(trainerId: $trainerId, input: $input) { id } }',
          variables: { trainerId: String(owner.trainer.id), input: { name: 'abandoned', speciesId: 1 } },
        }),
        signal: client.signal,
      }).catch((error: unknown) => error);
      await until('the abandoned write waiting', async () => (await waitingOf(app)) === 1);
      client.abort();
      expect(((await abandoned) as { name?: string }).name).toBe('AbortError');
      // It leaves the queue as soon as its connection closes.
      await until('the abandoned write gone from the queue', async () => (await waitingOf(app)) === 0);
      // One more, whose client stays.
      const read = app.inject({ method: 'GET', url: `/trainer/${owner.trainer.id}`, headers: { authorization: `Bearer ${viewer.token}` } });
      await until('the read waiting', async () => (await waitingOf(app)) === 1);

      await blocker.query('ROLLBACK');
      released = true;
      expect((await Promise.all(writes)).map((answer) => value(answer).name).sort()).toEqual(
        Array.from({ length: 10 }, (_, i) => `kept ${i}`).sort(),
      );
      expect((await read).statusCode).toBe(200);
      expect(await waitingOf(app)).toBe(0);
      const [row] = await app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature WHERE name = ?', [
        'abandoned',
      ]);
      expect(Number(row.n)).toBe(0);
      expect(await creatureRows()).toBe(before + 10);
    } finally {
      if (!released) await blocker.query('ROLLBACK');
      await blocker.end();
    }
  });

  mysqlOnly(
    'with a budget of 1, lets one request in at a time, answers every one, and frees its place whether the answer is sent or the client left',
    async () => {
      // A client that gives up while its request is in progress: it leaves once the pipeline has taken its document.
      let leaveNow: (() => void) | undefined;
      const narrow = await startTestApp(
        kind,
        {},
        {
          admissionBudget: 1,
          documentChecks: [
            ({ operation }) => {
              if (operation.name?.value === 'Leaving') leaveNow?.();
              return undefined;
            },
          ],
        },
      );
      try {
        const a = await createTrainer(narrow.app);
        const b = await createTrainer(narrow.app);
        const headers = { authorization: `Bearer ${b.token}` };
        const page = 'query($o: Int!) { trainers(limit: 5, offset: $o) { items { id creatures(limit: 2) { id } } } }';
        const origin = await listen(narrow);
        // Clients that give up at once: some leave the queue, some are let in first and leave after.
        const leaving = Array.from({ length: 5 }, () => {
          const client = new AbortController();
          const sent = fetch(`${origin}/trainer?limit=20`, { headers, signal: client.signal }).catch((error: unknown) => error);
          setImmediate(() => client.abort());
          return sent;
        });
        const answers = await Promise.all([
          ...Array.from({ length: 10 }, (_, i) =>
            narrow.app.inject({
              method: 'POST',
              url: '/graphql',
              headers: { ...headers, 'content-type': 'application/json' },
              payload: { query: page, variables: { o: i } },
            }),
          ),
          ...Array.from({ length: 10 }, () => narrow.app.inject({ method: 'GET', url: '/trainer?limit=20', headers })),
          ...Array.from({ length: 10 }, () => narrow.app.inject({ method: 'GET', url: `/trainer/${a.trainer.id}`, headers })),
          (async () => {
            await until('requests waiting behind the one let in', async () => (await waitingOf(narrow.app)) > 0);
            return undefined;
          })(),
        ]);
        answers.pop();
        expect(answers.map((answer) => answer?.statusCode)).toEqual(Array.from({ length: 30 }, () => 200));
        expect(answers.slice(0, 10).every((answer) => answer?.json<{ errors?: unknown }>().errors === undefined)).toBe(true);
        expect(answers.slice(20).map((answer) => answer?.json<{ id: string }>().id)).toEqual(
          Array.from({ length: 10 }, () => a.trainer.id),
        );
        await Promise.all(leaving);
        const client = new AbortController();
        leaveNow = () => client.abort();
        const left = await fetch(`${origin}/graphql`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ query: 'query Leaving { trainers(limit: 5) { items { id } } }' }),
          signal: client.signal,
        }).catch((error: unknown) => error);
        expect((left as { name?: string }).name).toBe('AbortError');
        // Had any of them kept its place, nothing would be let in again.
        const after = await narrow.app.inject({ method: 'GET', url: `/trainer/${a.trainer.id}`, headers });
        expect(after.statusCode).toBe(200);
        expect(await waitingOf(narrow.app)).toBe(0);
      } finally {
        await narrow.close();
      }
    },
  );

  mysqlOnly(
    'weighs a REST page by its limit: with a write in progress, a page of 39 fits a budget of 40 and one of 40 waits for it',
    async () => {
      const narrow = await startTestApp(kind, {}, { admissionBudget: 40 });
      const blocker: Connection = await createConnection({
        uri: narrow.config.database.type === 'mysql' ? narrow.config.database.url : '',
      });
      try {
        const writer = await createTrainer(narrow.app);
        const headers = { authorization: `Bearer ${writer.token}` };
        // The write (weight 1) waits for the trainer's row, and stays in progress while it is locked.
        await blocker.query('START TRANSACTION');
        await blocker.query('SELECT id FROM trainer WHERE id = ? FOR UPDATE', [writer.trainer.id]);
        const write = narrow.app.inject({
          method: 'POST',
          url: `/trainer/${writer.trainer.id}/creature`,
          headers,
          payload: { name: 'weighed', speciesId: 1 },
        });
        await until('the write waiting for the lock', async () => {
          const [rows] = await blocker.query<RowDataPacket[]>(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'UPDATE trainer % creatures_owned = %'",
          );
          return Number(rows[0].n) >= 1;
        });
        const fits = await narrow.app.inject({ method: 'GET', url: '/trainer?limit=39', headers });
        expect(fits.statusCode).toBe(200);
        let heavyAnswered = false;
        const heavy = narrow.app.inject({ method: 'GET', url: '/trainer?limit=40', headers }).then((answer) => {
          heavyAnswered = true;
          return answer;
        });
        await until('the page of 40 waiting at the door', async () => (await waitingOf(narrow.app)) === 1);
        expect(heavyAnswered).toBe(false);
        await blocker.query('ROLLBACK');
        expect((await write).statusCode).toBe(201);
        expect((await heavy).statusCode).toBe(200);
        expect(await waitingOf(narrow.app)).toBe(0);
      } finally {
        await blocker.query('ROLLBACK').catch(() => undefined);
        await blocker.end();
        await narrow.close();
      }
    },
  );

  mysqlOnly('lets requests in past open event streams, which weigh nothing, with a budget of 1', async () => {
    const narrow = await startTestApp(kind, {}, { admissionBudget: 1 });
    const streams = new AbortController();
    try {
      const watcher = await createTrainer(narrow.app);
      const origin = await listen(narrow);
      const subscribe = () =>
        fetch(`${origin}/graphql/stream`, {
          method: 'POST',
          headers: { accept: 'text/event-stream', 'content-type': 'application/json', authorization: `Bearer ${watcher.token}` },
          body: JSON.stringify({
            query: 'subscription($t: ID!) { creatureEvents(trainerId: $t) { sequence } }',
            variables: { t: watcher.trainer.id },
          }),
          signal: streams.signal,
        });
      const timeout = () => new Promise<undefined>((resolve) => setTimeout(resolve, 5000));
      // Two streams open at once (had one weighed 1, the second would wait behind it for good).
      const opened = await Promise.race([Promise.all([subscribe(), subscribe()]), timeout()]);
      expect(opened?.map((answer) => answer.status)).toEqual([200, 200]);
      const headers = { authorization: `Bearer ${watcher.token}` };
      const answers = await Promise.race([
        Promise.all([
          narrow.app.inject({ method: 'GET', url: `/trainer/${watcher.trainer.id}`, headers }),
          narrow.app.inject({
            method: 'POST',
            url: '/graphql',
            headers: { ...headers, 'content-type': 'application/json' },
            payload: { query: 'query($id: ID!) { trainer(id: $id) { id } }', variables: { id: watcher.trainer.id } },
          }),
        ]),
        timeout(),
      ]);
      expect(answers?.map((answer) => answer.statusCode)).toEqual([200, 200]);
      expect(await waitingOf(narrow.app)).toBe(0);
    } finally {
      streams.abort();
      await narrow.close();
    }
  });

  it('answers dozens of requests pipelined on one connection without a listener per request on it', async () => {
    const own = await startTestApp(kind);
    try {
      const reader = await createTrainer(own.app);
      const origin = new URL(await listen(own));
      // The most 'close' listeners the connection had at once, on the server's side: past 10,
      // Node warns of a possible leak (MaxListenersExceededWarning) in the service's log.
      let most = 0;
      own.app.server.once('connection', (accepted: Socket) =>
        accepted.on('newListener', (event) => {
          if (event === 'close') most = Math.max(most, accepted.listenerCount('close') + 1);
        }),
      );
      const socket = connect(Number(origin.port), origin.hostname);
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      const read = `GET /trainer/${reader.trainer.id} HTTP/1.1\r\nHost: ${origin.host}\r\nAuthorization: Bearer ${reader.token}\r\n\r\n`;
      socket.write(read.repeat(30));
      await until('30 answers', async () => (received.match(/HTTP\/1\.1 \d{3} /g) ?? []).length >= 30);
      expect(received.match(/HTTP\/1\.1 \d{3}/g)).toEqual(Array.from({ length: 30 }, () => 'HTTP/1.1 200'));
      expect(received.split(`"nickname":"${reader.trainer.nickname}"`).length - 1).toBe(30);
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(10);
      socket.destroy();
      await until('no request counted as waiting', async () => (await waitingOf(own.app)) === 0);
    } finally {
      await own.close();
    }
  });

  mysqlOnly('frees the place of a pipelined request whose connection closes while its answer waits behind another', async () => {
    // Room for a write and a page of 20; a page's place kept by mistake leaves no room for a page of 21.
    const narrow = await startTestApp(kind, {}, { admissionBudget: 40 });
    const blocker: Connection = await createConnection({ uri: narrow.config.database.type === 'mysql' ? narrow.config.database.url : '' });
    try {
      const writer = await createTrainer(narrow.app);
      const origin = new URL(await listen(narrow));
      const body = JSON.stringify({ name: 'pipelined', speciesId: 1 });
      const write =
        `POST /trainer/${writer.trainer.id}/creature HTTP/1.1\r\nHost: ${origin.host}\r\nAuthorization: Bearer ${writer.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      const page = `GET /trainer?limit=20 HTTP/1.1\r\nHost: ${origin.host}\r\nAuthorization: Bearer ${writer.token}\r\n\r\n`;
      // The write waits for the trainer's row; the page behind it on the same connection is read,
      // and its answer waits for the write's.
      await blocker.query('START TRANSACTION');
      await blocker.query('SELECT id FROM trainer WHERE id = ? FOR UPDATE', [writer.trainer.id]);
      const socket = connect(Number(origin.port), origin.hostname);
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(write + page);
      await until('the write waiting for the lock', async () => {
        const [rows] = await blocker.query<RowDataPacket[]>(
          "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'UPDATE trainer % creatures_owned = %'",
        );
        return Number(rows[0].n) >= 1;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      socket.destroy();
      await blocker.query('ROLLBACK');
      const next = await Promise.race([
        narrow.app.inject({ method: 'GET', url: '/trainer?limit=21', headers: { authorization: `Bearer ${writer.token}` } }),
        new Promise<undefined>((resolve) => setTimeout(resolve, 5000)),
      ]);
      expect(next?.statusCode).toBe(200);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
      await narrow.close();
    }
  });

  sqliteOnly('holds nothing on SQLite, which runs each statement in the process', async () => {
    const before = await creatureRows();
    const rest = restDriver(app);
    const graphql = graphqlDriver(app);
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) =>
        rest.createCreature(owner.token, String(owner.trainer.id), { name: `burst ${i}`, speciesId: 1 }),
      ),
      ...Array.from({ length: 30 }, () => graphql.getTrainer(viewer.token, String(owner.trainer.id))),
      waitingOf(app),
    ]);
    expect(answers.pop()).toBe(0);
    expect(answers.every((answer) => typeof answer === 'object' && answer.ok)).toBe(true);
    expect(await creatureRows()).toBe(before + 20);
  });
});

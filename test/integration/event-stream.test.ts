import { createClient, type Client } from 'graphql-sse';
import WebSocket from 'ws';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';
import { RESUMED_EVENTS, until } from '../helpers/events';
import { createThroughApi, createTrainer, signIn, type TrainerFixture } from '../helpers/factories';

/*
 * Creature events over Server-Sent Events (graphql-sse, distinct connections mode) at
 * /graphql/stream, driven by graphql-sse's own client and plain fetch: the same subscription as
 * over WebSocket, with its token in the Authorization header, the same refusals, limits and
 * session rules.
 */

interface Seen {
  events: { kind: string; sequence: number; creature: { name: string } }[];
  errors: { message: string; extensions?: { code?: string } }[];
  completed: boolean;
}

/** A graphql-sse client subscribed to `trainerId`'s events (after `after`, when given). */
function stream(origin: string, token: string, trainerId: number, after?: number): { client: Client; seen: Seen } {
  const client = createClient({
    url: `${origin}/graphql/stream`,
    headers: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
  });
  const seen: Seen = { events: [], errors: [], completed: false };
  client.subscribe<{ creatureEvents: Seen['events'][number] }>(
    { query: RESUMED_EVENTS, variables: { trainerId: String(trainerId), ...(after === undefined ? {} : { after }) } },
    {
      next: (value) => {
        if (value.data) seen.events.push(value.data.creatureEvents);
        if (value.errors) seen.errors.push(...(value.errors as readonly Seen['errors'][number][]));
      },
      error: (error) => {
        if (Array.isArray(error)) seen.errors.push(...(error as Seen['errors']));
        else seen.errors.push({ message: String(error) });
        seen.completed = true;
      },
      complete: () => void (seen.completed = true),
    },
  );
  return { client, seen };
}

const create = (t: TestApp, owner: TrainerFixture, name: string) => createThroughApi(t.app, owner, name, 4);

/** A raw event-stream request (POST) of `trainerId`'s events, as `token`. */
const openStream = (origin: string, token: string, trainerId: number, signal?: AbortSignal, headers: Record<string, string> = {}) =>
  fetch(`${origin}/graphql/stream`, {
    method: 'POST',
    headers: { accept: 'text/event-stream', 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    body: SUBSCRIBE(trainerId),
    signal,
  });

const SUBSCRIBE = (trainerId: number) =>
  JSON.stringify({
    query: 'subscription($t: ID!) { creatureEvents(trainerId: $t) { sequence } }',
    variables: { t: String(trainerId) },
  });

describe.each(databases)('creature events over Server-Sent Events on %s', (kind) => {
  let t: TestApp;
  let origin: string;
  let watcher: TrainerFixture;
  const clients: Client[] = [];
  beforeAll(async () => {
    t = await startTestApp(kind, { CORS_ORIGINS: 'https://app.example.com' }, { sessionCheckMs: 200 });
    origin = await listen(t);
    watcher = await createTrainer(t.app);
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.dispose();
  });
  afterAll(async () => t.close());

  it('delivers a trainer’s events to a graphql-sse client, and resumes one with after', async () => {
    const owner = await createTrainer(t.app);
    const live = stream(origin, watcher.token, owner.trainer.id);
    clients.push(live.client);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await create(t, owner, 'Sse one');
    await create(t, owner, 'Sse two');
    await until(() => live.seen.events.length === 2, 'two events over SSE');
    expect(live.seen.events.map((e) => [e.kind, e.creature.name, e.sequence])).toEqual([
      ['CREATED', 'Sse one', 1],
      ['CREATED', 'Sse two', 2],
    ]);
    const resumed = stream(origin, watcher.token, owner.trainer.id, 1);
    clients.push(resumed.client);
    await until(() => resumed.seen.events.length === 1, 'the replayed event');
    await create(t, owner, 'Sse three');
    await until(() => resumed.seen.events.length === 2 && live.seen.events.length === 3, 'the live event on both');
    expect(resumed.seen.events.map((e) => e.sequence)).toEqual([2, 3]);
    expect(resumed.seen.errors).toEqual([]);
  });

  it('answers a stream with the headers of an event stream, no-store, and the request id', async () => {
    const owner = await createTrainer(t.app);
    const controller = new AbortController();
    const res = await openStream(origin, watcher.token, owner.trainer.id, controller.signal);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    controller.abort();
  });

  it('refuses without a token (401), with another Accept (406), a query or mutation (400) and an unknown trainer (NOT_FOUND)', async () => {
    const post = (body: string, headers: Record<string, string>) =>
      fetch(`${origin}/graphql/stream`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const anonymous = await post(SUBSCRIBE(watcher.trainer.id), { accept: 'text/event-stream' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await anonymous.json()) as Seen).errors[0].extensions?.code).toBe('UNAUTHENTICATED');
    const auth = { authorization: `Bearer ${watcher.token}` };
    const json = await post(SUBSCRIBE(watcher.trainer.id), { accept: 'application/json', ...auth });
    expect(json.status).toBe(406);
    const query = await post(JSON.stringify({ query: '{ me { id } }' }), { accept: 'text/event-stream', ...auth });
    expect(query.status).toBe(400);
    expect(((await query.json()) as Seen).errors[0].extensions?.code).toBe('BAD_USER_INPUT');
    const unknown = stream(origin, watcher.token, 987654321);
    clients.push(unknown.client);
    await until(() => unknown.seen.errors.length > 0, 'the refusal');
    expect(unknown.seen.errors[0].extensions?.code).toBe('NOT_FOUND');
  });

  it('refuses a page of an Origin outside CORS_ORIGINS (403 FORBIDDEN), and takes the listed one', async () => {
    const owner = await createTrainer(t.app);
    const evil = await openStream(origin, watcher.token, owner.trainer.id, undefined, { origin: 'https://evil.example' });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as Seen).errors[0].extensions?.code).toBe('FORBIDDEN');
    const listed = await openStream(origin, watcher.token, owner.trainer.id, undefined, { origin: 'https://app.example.com' });
    expect(listed.status).toBe(200);
    await listed.body?.cancel();
  });

  it('ends a stream with UNAUTHENTICATED when its session logs out', async () => {
    const owner = await createTrainer(t.app);
    const session = await signIn(t.app, watcher.trainer.id);
    const live = stream(origin, session.token, owner.trainer.id);
    clients.push(live.client);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const out = await t.app.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${session.token}` } });
    expect(out.statusCode).toBe(204);
    await until(() => live.seen.completed, 'the end of the stream', 2000);
    expect(live.seen.errors[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('counts event streams and WebSockets together against the 50 connections of one address', async () => {
    const owner = await createTrainer(t.app);
    const controllers: AbortController[] = [];
    // Held until the end: fetch cancels the body of a Response that is garbage collected, which
    // closed a stream now and then before the 51st was asked for (200 instead of 429).
    const open: Response[] = [];
    try {
      for (let i = 0; i < 50; i += 1) {
        const controller = new AbortController();
        controllers.push(controller);
        const response = await openStream(origin, watcher.token, owner.trainer.id, controller.signal);
        open.push(response);
        expect(response.status).toBe(200);
      }
      expect((await openStream(origin, watcher.token, owner.trainer.id)).status).toBe(429);
      const socket = new WebSocket(`${origin.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
      const status = await new Promise<number>((resolve) => socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)));
      expect(status).toBe(429);
    } finally {
      for (const controller of controllers) controller.abort();
      open.length = 0;
    }
    // Once they have gone, a stream opens again.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const again = await openStream(origin, watcher.token, owner.trainer.id);
    expect(again.status).toBe(200);
    await again.body?.cancel();
  });
});

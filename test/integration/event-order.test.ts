import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { databases, listen, startTestApp, startTestInstances, type TestApp } from '../helpers/app';
import { watch, until, type Received, type Watch } from '../helpers/events';
import { createTrainer, type TrainerFixture } from '../helpers/factories';
import { gql } from '../helpers/graphql';
import { redisReachable, REDIS_TEST_URL } from '../helpers/redis';

/*
 * Creature events in commit order: each trainer's writes are numbered in their transaction, and
 * every subscriber, on any instance, gets them by number: consecutive, each once, and never an
 * event of a creature after its DELETED, however the writes raced.
 */

type Outcome = { status: number; id?: number };

/** Writes of one trainer's creatures through one app, over REST or GraphQL; the status and the creature's id. */
function writer(app: FastifyInstance, owner: TrainerFixture) {
  const auth = { authorization: `Bearer ${owner.token}` };
  const path = `/trainer/${owner.trainer.id}/creature`;
  return {
    async create(name: string, over: 'rest' | 'graphql'): Promise<Outcome> {
      if (over === 'rest') {
        const res = await app.inject({ method: 'POST', url: path, headers: auth, payload: { name, speciesId: 7 } });
        return { status: res.statusCode, id: res.statusCode === 201 ? res.json<{ id: number }>().id : undefined };
      }
      const res = await gql<{ createCreature: { id: string } }>(
        app,
        'mutation($t: ID!, $n: String!) { createCreature(trainerId: $t, input: { name: $n, speciesId: 7 }) { id } }',
        { t: String(owner.trainer.id), n: name },
        owner.token,
      );
      return res.data ? { status: 201, id: Number(res.data.createCreature.id) } : { status: codeStatus(res.errors?.[0]?.extensions?.code) };
    },
    async update(id: number, level: number): Promise<Outcome> {
      const res = await app.inject({ method: 'PATCH', url: `${path}/${id}`, headers: auth, payload: { level } });
      return { status: res.statusCode, id };
    },
    async remove(id: number, over: 'rest' | 'graphql'): Promise<Outcome> {
      if (over === 'rest') return { status: (await app.inject({ method: 'DELETE', url: `${path}/${id}`, headers: auth })).statusCode, id };
      const res = await gql(app, 'mutation($id: ID!) { deleteCreature(id: $id) { id } }', { id: String(id) }, owner.token);
      return { status: res.errors ? codeStatus(res.errors[0].extensions?.code) : 200, id };
    },
  };
}

const codeStatus = (code: unknown) => ({ DUPLICATE_CREATURE: 409, NOT_FOUND: 404 })[String(code)] ?? 500;

/**
 * A race on one trainer's creatures: `count` creates at once, then for each creature an update
 * and a delete at once, spread over `apps` and both transports. The outcomes, in no order.
 */
async function race(apps: FastifyInstance[], owner: TrainerFixture, count: number): Promise<Outcome[]> {
  const via = (i: number) => writer(apps[i % apps.length], owner);
  const created = await Promise.all(Array.from({ length: count }, (_, i) => via(i).create(`Racer ${i}`, i % 2 === 0 ? 'rest' : 'graphql')));
  const ids = created.filter((c) => c.status === 201).map((c) => c.id!);
  const changed = await Promise.all(
    ids.flatMap((id, i) => [via(i).update(id, 50), via(i + 1).remove(id, i % 2 === 0 ? 'graphql' : 'rest')]),
  );
  return [...created, ...changed];
}

/** What a subscriber must have seen: numbers one after the other, and nothing of a creature after its DELETED. */
function expectCommitOrder(events: Received[]): void {
  const numbers = events.map((e) => e.sequence);
  expect(numbers).toEqual(numbers.map((_, i) => numbers[0] + i));
  const deleted = new Set<string>();
  for (const event of events) {
    expect(deleted.has(event.creature.id)).toBe(false);
    if (event.kind === 'DELETED') deleted.add(event.creature.id);
  }
}

const succeeded = (outcomes: Outcome[]) => outcomes.filter((o) => [200, 201, 204].includes(o.status)).length;

async function eventSeqOf(app: FastifyInstance, trainerId: number): Promise<number> {
  const [row] = await app.dataSource.query<{ seq: number | string }[]>('SELECT event_seq AS seq FROM trainer WHERE id = ?', [trainerId]);
  return Number(row.seq);
}

/**
 * Subscribes and writes probes until one's event arrives, so the subscription is live; returns
 * once the last probe's event is in too (probes written before the subscription started are not
 * delivered: events start after it).
 */
async function liveWatch(origin: string, app: FastifyInstance, owner: TrainerFixture, name: string): Promise<Watch> {
  const w = watch(origin, owner.token, String(owner.trainer.id));
  await w.connected;
  const deadline = Date.now() + 5000;
  let n = 0;
  while (w.events.length === 0) {
    if (Date.now() > deadline) throw new Error('the subscription never went live');
    expect((await writer(app, owner).create(`${name} ${(n += 1)}`, 'rest')).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await until(() => w.events.at(-1)!.creature.name === `${name} ${n}`, 'the last probe event');
  return w;
}

describe.each(databases)('creature events in commit order on %s', (kind) => {
  let t: TestApp;
  let origin: string;

  beforeAll(async () => {
    t = await startTestApp(kind);
    origin = await listen(t);
  });
  afterAll(async () => t?.close());

  it('numbers racing creates, updates and deletes one after the other, and delivers them in that order', async () => {
    const owner = await createTrainer(t.app);
    const w = await liveWatch(origin, t.app, owner, 'Probe');
    const probes = w.events.length;
    const last = w.events.at(-1)!.sequence;
    expect(await eventSeqOf(t.app, owner.trainer.id)).toBe(last);
    const outcomes = await race([t.app], owner, 12);
    expect(outcomes.filter((o) => ![200, 201, 204, 404].includes(o.status))).toEqual([]);
    const expected = probes + succeeded(outcomes);
    await until(() => w.events.length >= expected, `${expected} events`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(w.events).toHaveLength(expected);
    expectCommitOrder(w.events);
    // The numbers are the trainer's count of committed writes, kept in its row.
    expect(w.events[probes].sequence).toBe(last + 1);
    expect(await eventSeqOf(t.app, owner.trainer.id)).toBe(w.events.at(-1)!.sequence);
    await w.client.dispose();
  });

  it('does not count refused or rolled-back writes: the next event follows the last one', async () => {
    const owner = await createTrainer(t.app);
    const w = await liveWatch(origin, t.app, owner, 'Taken');
    const probes = w.events.length;
    const writes = writer(t.app, owner);
    expect((await writes.create('Taken 1', 'rest')).status).toBe(409);
    expect((await writes.create('Taken 1', 'graphql')).status).toBe(409);
    expect((await writes.update(999_999, 5)).status).toBe(404);
    const next = await writes.create('Free', 'graphql');
    expect(next.status).toBe(201);
    await until(() => w.events.length === probes + 1, 'the event of the write');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(w.events.slice(probes - 1).map((e) => [e.kind, e.creature.name, e.sequence - w.events[probes - 1].sequence])).toEqual([
      ['CREATED', w.events[probes - 1].creature.name, 0],
      ['CREATED', 'Free', 1],
    ]);
    await w.client.dispose();
  });
});

describe('creature events in commit order across two instances sharing one database and Redis', () => {
  let reachable = false;
  let instances: { apps: FastifyInstance[]; close(): Promise<void> } | undefined;
  const origins: string[] = [];

  beforeAll(async () => {
    reachable = await redisReachable('the two-instance event order test is');
    if (!reachable) return;
    instances = await startTestInstances(databases.includes('mysql') ? 'mysql' : 'sqlite', 2, { REDIS_URL: REDIS_TEST_URL });
    for (const app of instances.apps) {
      await app.listen({ port: 0, host: '127.0.0.1' });
      origins.push(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
    }
  });
  afterAll(async () => instances?.close());

  it('gives subscribers on both instances the same events in the same order, however the writes raced', async () => {
    if (!reachable) return;
    const [a, b] = instances!.apps;
    const owner = await createTrainer(a);
    const onA = await liveWatch(origins[0], a, owner, 'Probe A');
    const onB = await liveWatch(origins[1], b, owner, 'Probe B');
    const outcomes = await race([a, b], owner, 16);
    expect(outcomes.filter((o) => ![200, 201, 204, 404].includes(o.status))).toEqual([]);
    const last = await eventSeqOf(a, owner.trainer.id);
    await until(() => onA.events.at(-1)?.sequence === last && onB.events.at(-1)?.sequence === last, 'the last event on both instances');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expectCommitOrder(onA.events);
    expectCommitOrder(onB.events);
    // B subscribed later: from its first event on, both saw exactly the same.
    const key = (e: Received) => `${e.sequence} ${e.kind} ${e.creature.id} ${e.creature.level}`;
    expect(onA.events.slice(onA.events.findIndex((e) => e.sequence === onB.events[0].sequence)).map(key)).toEqual(onB.events.map(key));
    await Promise.all([onA.client.dispose(), onB.client.dispose()]);
  });
});

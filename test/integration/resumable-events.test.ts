import type { FastifyInstance } from 'fastify';
import type { Client } from 'graphql-ws';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../src/app';
import { databases, listen, startTestApp, startTestInstances, testConfig, type TestApp } from '../helpers/app';
import { RESUMED_EVENTS, until, watch, type Watch } from '../helpers/events';
import { createThroughApi, createTrainer, TEST_PASSWORD, type TrainerFixture } from '../helpers/factories';
import { RedisServer } from '../helpers/redis-server';

/*
 * Resumable creature events: a subscriber that gives the last sequence it saw (`after`) gets
 * what it missed from the kept events, then the live ones, with no gap and no duplicate; what is
 * no longer kept ends the subscription with EVENTS_EXPIRED. Driven with graphql-ws's own client.
 */

const create = createThroughApi;

const sequences = (w: Watch) => w.events.map((e) => e.sequence);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** A subscription's start: connected, and the subscribe message answered (a round trip on the same socket orders after it). */
async function started(w: Watch, open: Client[]): Promise<Watch> {
  open.push(w.client);
  await w.connected;
  await new Promise((resolve) => setTimeout(resolve, 150));
  return w;
}

async function keptRows(app: FastifyInstance, trainerId: number): Promise<number> {
  const [row] = await app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature_event WHERE trainer_id = ?', [
    trainerId,
  ]);
  return Number(row.n);
}

/** `count` old events of `trainerId` written by plain SQL (numbers 1..count, two days old), and the trainer's number set to match. */
async function oldEvents(app: FastifyInstance, trainerId: number, count: number): Promise<void> {
  const at = new Date(Date.now() - 2 * 86_400_000);
  const stamp = at.toISOString().replace('T', ' ').replace('Z', '');
  for (let first = 1; first <= count; first += 500) {
    const rows = range(first, Math.min(count, first + 499));
    await app.dataSource.query(
      `INSERT INTO creature_event (trainer_id, seq, kind, creature_id, name, species_id, level, created_at, at) VALUES ${rows.map(() => "(?, ?, 'CREATED', ?, ?, 1, 1, ?, ?)").join(', ')}`,
      rows.flatMap((seq) => [trainerId, seq, 1_000_000 + seq, `Old ${seq}`, stamp, stamp]),
    );
  }
  await app.dataSource.query('UPDATE trainer SET event_seq = ? WHERE id = ?', [count, trainerId]);
}

describe.each(databases)('resumable creature events on %s', (kind) => {
  let t: TestApp;
  let origin: string;
  let watcher: TrainerFixture;
  const open: Client[] = [];
  beforeAll(async () => {
    t = await startTestApp(kind);
    origin = await listen(t);
    watcher = await createTrainer(t.app);
  });
  afterEach(async () => {
    for (const client of open.splice(0)) await client.dispose();
  });
  afterAll(async () => t.close());

  it('sends what a subscriber missed while away, then the live events: no gap, no duplicate', async () => {
    const owner = await createTrainer(t.app);
    const first = await started(watch(origin, watcher.token, String(owner.trainer.id)), open);
    await create(t.app, owner, 'Before 1');
    await create(t.app, owner, 'Before 2');
    await until(() => first.events.length === 2, 'the first two events');
    await first.client.dispose();
    // Away: three writes (and an update and a delete of one of them) it does not hear.
    await create(t.app, owner, 'Away 1');
    const away = await create(t.app, owner, 'Away 2');
    const [row] = await t.app.dataSource.query<{ id: number | string }[]>('SELECT id FROM creature WHERE name = ?', [away]);
    const auth = { authorization: `Bearer ${owner.token}` };
    expect(
      (
        await t.app.inject({
          method: 'PATCH',
          url: `/trainer/${owner.trainer.id}/creature/${row.id}`,
          headers: auth,
          payload: { level: 9 },
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (await t.app.inject({ method: 'DELETE', url: `/trainer/${owner.trainer.id}/creature/${row.id}`, headers: auth })).statusCode,
    ).toBe(204);
    const last = first.events[1].sequence;
    const resumed = await started(watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: last }), open);
    await create(t.app, owner, 'Live 1');
    await until(() => resumed.events.length === 5, 'the four missed events and the live one');
    expect(resumed.errors).toEqual([]);
    expect(sequences(resumed)).toEqual(range(last + 1, last + 5));
    expect(resumed.events.map((e) => [e.kind, e.creature.name, e.creature.level])).toEqual([
      ['CREATED', 'Away 1', 1],
      ['CREATED', 'Away 2', 1],
      ['UPDATED', 'Away 2', 9],
      ['DELETED', 'Away 2', 9],
      ['CREATED', 'Live 1', 1],
    ]);
    // The replayed events are the ones that were delivered live: same times, same trainer.
    expect(resumed.events[0].creature.trainer.id).toBe(String(owner.trainer.id));
    expect(new Date(resumed.events[0].at).getTime()).toBeGreaterThan(new Date(first.events[1].at).getTime() - 1);
  });

  it('with after = the last sequence, only live events; with after = 0, everything kept since the start', async () => {
    const owner = await createTrainer(t.app);
    for (const name of ['A', 'B', 'C']) await create(t.app, owner, name);
    const upToDate = await started(watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: 3 }), open);
    const fromStart = await started(watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: 0 }), open);
    await create(t.app, owner, 'D');
    await until(() => upToDate.events.length === 1 && fromStart.events.length === 4, 'the live event, and all four');
    expect(sequences(upToDate)).toEqual([4]);
    expect(sequences(fromStart)).toEqual([1, 2, 3, 4]);
  });

  it('refuses an after the trainer has not reached, or below 0 (BAD_USER_INPUT), and an unknown trainer (NOT_FOUND)', async () => {
    const owner = await createTrainer(t.app);
    await create(t.app, owner, 'Only');
    const beyond = watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: 2 });
    const negative = watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: -1 });
    const unknown = watch(origin, watcher.token, '999999999', RESUMED_EVENTS, { after: 0 });
    open.push(beyond.client, negative.client, unknown.client);
    await until(() => beyond.errors.length > 0 && negative.errors.length > 0 && unknown.errors.length > 0, 'three refusals');
    expect(beyond.errors[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(negative.errors[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(unknown.errors[0].extensions?.code).toBe('NOT_FOUND');
  });

  it('keeps each trainer’s last 1,000 events however old, prunes older ones past the retention, and says EVENTS_EXPIRED for what is gone', async () => {
    const owner = await createTrainer(t.app);
    await oldEvents(t.app, owner.trainer.id, 1200);
    const young = await createTrainer(t.app);
    await create(t.app, young, 'Young');
    expect(await t.app.services.eventLog.prune()).toBe(200);
    expect(await keptRows(t.app, owner.trainer.id)).toBe(1000);
    expect(await keptRows(t.app, young.trainer.id)).toBe(1);
    // A second pruning reads only what came after the first one's mark: nothing more goes.
    expect(await t.app.services.eventLog.prune()).toBe(0);

    const expired = watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: 150 });
    open.push(expired.client);
    await until(() => expired.errors.length > 0, 'the refusal');
    expect(expired.errors[0].extensions?.code).toBe('EVENTS_EXPIRED');

    // The oldest kept one is 201: after = 200 still resumes, with the 1,000 kept events, then a live one.
    const resumed = await started(watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: 200 }), open);
    await create(t.app, owner, 'New');
    await until(() => resumed.events.length === 1001, 'the kept events and the new one', 15_000);
    expect(sequences(resumed)).toEqual(range(201, 1201));
    // The write pushed event 201 out of the last 1,000, and it is past the retention: it went with the write.
    expect(await keptRows(t.app, owner.trainer.id)).toBe(1000);
    const again = watch(origin, watcher.token, String(owner.trainer.id), RESUMED_EVENTS, { after: 200 });
    open.push(again.client);
    await until(() => again.errors.length > 0, 'the refusal');
    expect(again.errors[0].extensions?.code).toBe('EVENTS_EXPIRED');
  });

  it('erases a deleted trainer’s kept events with it', async () => {
    const owner = await createTrainer(t.app);
    for (const name of ['One', 'Two']) await create(t.app, owner, name);
    expect(await keptRows(t.app, owner.trainer.id)).toBe(2);
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/trainer/${owner.trainer.id}`,
      headers: { authorization: `Bearer ${owner.token}` },
      payload: { password: TEST_PASSWORD },
    });
    expect(res.statusCode).toBe(204);
    expect(await keptRows(t.app, owner.trainer.id)).toBe(0);
  });
});

describe.each(databases)('resumable creature events across instances, a restart and a Redis outage, on %s', (kind) => {
  let redis: RedisServer | undefined;
  let instances: { apps: FastifyInstance[]; url: string; close(): Promise<void> } | undefined;
  const origins: string[] = [];
  const open: Client[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start('the resumable events outage test is');
    if (!redis) return;
    instances = await startTestInstances(kind, 2, { REDIS_URL: redis.url });
    for (const app of instances.apps) {
      await app.listen({ port: 0, host: '127.0.0.1' });
      origins.push(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
    }
  });
  afterEach(async () => {
    for (const client of open.splice(0)) await client.dispose();
  });
  afterAll(async () => {
    await instances?.close();
    await redis?.kill();
  });

  it('resumes on a restarted instance with what was written through the other one meanwhile', async () => {
    if (!redis) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const owner = await createTrainer(b);
    const onA = await started(watch(origins[0], owner.token, String(owner.trainer.id)), open);
    await create(a, owner, 'Seen');
    await until(() => onA.events.length === 1, 'the first event');
    // The subscriber's instance stops (its socket with it); writes go on through the other one.
    await a.close();
    await create(b, owner, 'Missed 1');
    await create(b, owner, 'Missed 2');
    const restarted = await buildApp(testConfig(instances!.url, { REDIS_URL: redis.url }));
    instances!.apps[0] = restarted;
    await restarted.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${(restarted.server.address() as AddressInfo).port}`;
    const resumed = await started(
      watch(origin, owner.token, String(owner.trainer.id), RESUMED_EVENTS, { after: onA.events[0].sequence }),
      open,
    );
    await create(b, owner, 'Live through B');
    await until(() => resumed.events.length === 3, 'the two missed events and the live one');
    expect(resumed.events.map((e) => e.creature.name)).toEqual(['Missed 1', 'Missed 2', 'Live through B']);
    expect(sequences(resumed)).toEqual([2, 3, 4]);
  });

  it('delivers the events written through another instance while Redis was away, without a later write to show the gap', async () => {
    if (!redis) return;
    const [a] = instances!.apps as [FastifyInstance, FastifyInstance];
    const owner = await createTrainer(a);
    const onB = await started(watch(origins[1], owner.token, String(owner.trainer.id)), open);
    await create(a, owner, 'Before');
    await until(() => onB.events.length === 1, 'the first event through Redis');
    await redis.kill();
    try {
      await create(a, owner, 'During 1');
      await create(a, owner, 'During 2');
      // B cannot hear A now; its check of the trainers it follows finds them in the kept events.
      await until(() => onB.events.length === 3, 'the events written during the outage', 8000);
    } finally {
      await redis.restart();
    }
    await create(a, owner, 'After');
    await until(() => onB.events.length === 4, 'the event after Redis came back', 20_000);
    expect(onB.events.map((e) => e.creature.name)).toEqual(['Before', 'During 1', 'During 2', 'After']);
    expect(sequences(onB)).toEqual([1, 2, 3, 4]);
  });
});

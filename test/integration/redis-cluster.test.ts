import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { Cluster } from 'ioredis';
import { databases, startTestInstances, testConfig } from '../helpers/app';
import { until, watch, type Watch } from '../helpers/events';
import { createTrainer, deleteTrainer, signIn, TEST_PASSWORD } from '../helpers/factories';
import { gql } from '../helpers/graphql';
import { RedisCluster } from '../helpers/redis-cluster';

/*
 * Two instances on one database with REDIS_CLUSTER_NODES: a private three-master Redis Cluster
 * (test/helpers/redis-cluster.ts). Creature events, session endings and list changes travel over
 * sharded pub/sub, failed logins are counted on the cluster; with every master killed, /readyz
 * says so, and once they are back the relays work again by themselves.
 */

const listenOn = async (app: FastifyInstance): Promise<string> => {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
};

const readyz = async (app: FastifyInstance) =>
  (await app.inject({ method: 'GET', url: '/readyz' })).json<{ status: string; redis?: string }>();

const CREATE = 'mutation($t: ID!, $name: String!) { createCreature(trainerId: $t, input: { name: $name, speciesId: 1 }) { id } }';

describe('REDIS_CLUSTER_NODES', () => {
  it('is a list of host:port, and not together with REDIS_URL', () => {
    expect(testConfig('sqlite::memory:', { REDIS_CLUSTER_NODES: 'a:7000, b:7001' }).redisClusterNodes).toEqual([
      { host: 'a', port: 7000 },
      { host: 'b', port: 7001 },
    ]);
    expect(() => testConfig('sqlite::memory:', { REDIS_CLUSTER_NODES: 'redis://a:7000' })).toThrow(/REDIS_CLUSTER_NODES must be/);
    expect(() => testConfig('sqlite::memory:', { REDIS_CLUSTER_NODES: 'a:7000', REDIS_URL: 'redis://a:6379' })).toThrow(
      /REDIS_URL and REDIS_CLUSTER_NODES are both set/,
    );
  });
});

describe.each(databases)('two instances on a Redis Cluster, on %s', (kind) => {
  let cluster: RedisCluster | undefined;
  let instances: Awaited<ReturnType<typeof startTestInstances>> | undefined;
  let a: FastifyInstance;
  let b: FastifyInstance;
  let originA: string;
  let originB: string;
  const open: Watch[] = [];
  beforeAll(async () => {
    cluster = await RedisCluster.start('the Redis Cluster test is');
    if (!cluster) return;
    instances = await startTestInstances(kind, 2, { REDIS_CLUSTER_NODES: cluster.nodes, LOGIN_MAX_FAILURES: '3' });
    [a, b] = instances.apps as [FastifyInstance, FastifyInstance];
    originA = await listenOn(a);
    originB = await listenOn(b);
  }, 60_000);
  afterEach(async () => {
    for (const w of open.splice(0)) await w.client.dispose();
  });
  afterAll(async () => {
    await instances?.close();
    await cluster?.stop();
  });

  /** A subscriber on `origin` to `trainerId`'s creature events, registered. */
  const subscribed = async (origin: string, token: string, trainerId: number): Promise<Watch> => {
    const w = watch(origin, token, String(trainerId));
    open.push(w);
    await w.connected;
    // Registered once the server has answered the subscribe message (and followed its channel).
    await new Promise((resolve) => setTimeout(resolve, 200));
    return w;
  };

  it('delivers creature events made on one instance to a subscriber of the other, over sharded pub/sub', async () => {
    if (!cluster) return;
    const owner = await createTrainer(a);
    const watcher = await createTrainer(a);
    const onA = await subscribed(originA, watcher.token, owner.trainer.id);
    const onB = await subscribed(originB, watcher.token, owner.trainer.id);
    for (const [app, name] of [
      [b, 'Made on B'],
      [a, 'Made on A'],
    ] as const) {
      const created = await gql(app, CREATE, { t: String(owner.trainer.id), name }, owner.token);
      expect(created.errors).toBeUndefined();
    }
    await until(() => onA.events.length === 2 && onB.events.length === 2, 'both events on both instances');
    for (const w of [onA, onB]) expect(w.events.map((event) => event.creature.name)).toEqual(['Made on B', 'Made on A']);
    // Sharded: the channel is served by one master, and a plain PUBLISH would not reach it.
    const probe = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
    try {
      await new Promise((resolve) => probe.once('ready', resolve));
      const channels = (await Promise.all(probe.nodes('master').map((node) => node.call('PUBSUB', 'SHARDCHANNELS')))) as string[][];
      expect(channels.flat().some((channel) => channel.endsWith(String(owner.trainer.id)))).toBe(true);
    } finally {
      probe.disconnect();
    }
  });

  it('closes a socket on instance B within a second of a logout on instance A', async () => {
    if (!cluster) return;
    const owner = await createTrainer(a);
    const session = await signIn(a, owner.trainer.id);
    const w = await subscribed(originB, session.token, owner.trainer.id);
    const out = await a.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${session.token}` } });
    expect(out.statusCode).toBe(204);
    const loggedOut = Date.now();
    expect(await w.closed).toBe(4401);
    expect(Date.now() - loggedOut).toBeLessThan(1000);
  });

  it('shifts a page on instance B within 300 ms of a trainer before it leaving through instance A (list changes)', async () => {
    if (!cluster) return;
    const me = await createTrainer(a);
    for (let i = 0; i < 30; i += 1) await createTrainer(a);
    const sqlPage = async () =>
      (await a.dataSource.query<{ id: number | string }[]>('SELECT id FROM trainer ORDER BY id LIMIT 10 OFFSET 20')).map((row) =>
        String(row.id),
      );
    const page = async (app: FastifyInstance) =>
      (await app.inject({ method: 'GET', url: '/trainer?limit=10&offset=20', headers: { authorization: `Bearer ${me.token}` } }))
        .json<{ items: { id: number }[] }>()
        .items.map((trainer) => String(trainer.id));
    expect(await page(b)).toEqual(await sqlPage());
    const [{ id: leaving }] = await a.dataSource.query<{ id: number | string }[]>('SELECT id FROM trainer ORDER BY id LIMIT 1 OFFSET 5');
    await deleteTrainer(a, { id: Number(leaving) });
    const expected = await sqlPage();
    const deadline = Date.now() + 300;
    let seen = await page(b);
    while (JSON.stringify(seen) !== JSON.stringify(expected) && Date.now() < deadline) seen = await page(b);
    expect(seen).toEqual(expected);
  });

  it('counts failed logins on the cluster: failures on A and B add up', async () => {
    if (!cluster) return;
    const { email } = await createTrainer(a);
    const attempt = (app: FastifyInstance, password: string) =>
      app.inject({ method: 'POST', url: '/trainer/authenticate', remoteAddress: '203.0.113.9', payload: { email, password } });
    expect((await attempt(a, 'wrong-password-1')).statusCode).toBe(401);
    expect((await attempt(b, 'wrong-password-2')).statusCode).toBe(401);
    expect((await attempt(a, 'wrong-password-3')).statusCode).toBe(401);
    // The third failure (LOGIN_MAX_FAILURES=3) was counted across both: B refuses even the right password.
    const limited = await attempt(b, TEST_PASSWORD);
    expect([limited.statusCode, limited.json<{ code: string }>().code]).toEqual([429, 'RATE_LIMITED']);
  });

  it('answers a flood of /readyz with at most a ping per master a second', async () => {
    if (!cluster) return;
    const probe = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
    try {
      await new Promise((resolve) => probe.once('ready', resolve));
      const pings = async () =>
        Promise.all(
          probe
            .nodes('master')
            .map(async (node) => Number(/cmdstat_ping:calls=(\d+)/.exec(String(await node.call('INFO', 'commandstats')))?.[1] ?? 0)),
        );
      const before = await pings();
      const answers = await Promise.all(Array.from({ length: 50 }, () => readyz(a)));
      expect(answers.every((answer) => answer.redis === 'connected')).toBe(true);
      const after = await pings();
      // 50 answers within a second or two: one check, perhaps two, whatever the flood.
      expect(after.map((n, i) => n - before[i]).every((n) => n <= 2)).toBe(true);
    } finally {
      probe.disconnect();
    }
  });

  it('one master restarted: /readyz tells while it is away; the relays reconnect by themselves, subscriptions made before included', async () => {
    if (!cluster) return;
    const owner = await createTrainer(a);
    const watcher = await createTrainer(a);
    const onB = await subscribed(originB, watcher.token, owner.trainer.id);
    // The master that serves the owner's event channel.
    const probe = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
    let port: number | undefined;
    try {
      await new Promise((resolve) => probe.once('ready', resolve));
      for (const node of probe.nodes('master')) {
        const channels = (await node.call('PUBSUB', 'SHARDCHANNELS')) as string[];
        if (channels.some((channel) => channel.endsWith(String(owner.trainer.id)))) port = node.options.port;
      }
    } finally {
      probe.disconnect();
    }
    expect(port).toBeDefined();
    await cluster.kill(port!);
    try {
      await waitUntil(
        async () => (await readyz(a)).redis === 'unavailable' && (await readyz(b)).redis === 'unavailable',
        'both instances to notice',
        10_000,
      );
    } finally {
      await cluster.revive([port!]);
    }
    await waitUntil(
      async () => (await readyz(a)).redis === 'connected' && (await readyz(b)).redis === 'connected',
      'the relays to reconnect',
    );
    // The subscription B followed before the restart carries events again.
    await deliveredAgain(owner, onB, 'After restart');
  });

  it('with every master killed, /readyz says Redis is unavailable; once they are back the relays work again by themselves', async () => {
    if (!cluster) return;
    expect(await readyz(a)).toEqual({ status: 'ready', redis: 'connected' });
    await Promise.all(cluster.ports.map((port) => cluster!.kill(port)));
    try {
      await waitUntil(async () => (await readyz(a)).redis === 'unavailable', 'instance A to notice', 10_000).catch(() => undefined);
      expect(await readyz(a)).toEqual({ status: 'ready', redis: 'unavailable' });
    } finally {
      await cluster.revive(cluster.ports);
    }
    await waitUntil(
      async () => (await readyz(a)).redis === 'connected' && (await readyz(b)).redis === 'connected',
      'the relays to reconnect',
    );
    const owner = await createTrainer(a);
    const watcher = await createTrainer(a);
    const onB = await subscribed(originB, watcher.token, owner.trainer.id);
    await deliveredAgain(owner, onB, 'After the outage');
  });

  /**
   * Creatures made on A, one every 200 ms, until one reaches `w` on B: a relay is back. A message
   * published while B's subscriber is still on its way back to a master is not replayed (nothing
   * keeps it yet), so a later one must arrive.
   */
  async function deliveredAgain(owner: { trainer: { id: number }; token: string }, w: Watch, label: string): Promise<void> {
    let created = 0;
    await waitUntil(async () => {
      created += 1;
      const answer = await gql(a, CREATE, { t: String(owner.trainer.id), name: `${label} ${created}` }, owner.token);
      expect(answer.errors).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 200));
      return w.events.length > 0;
    }, `an event on B: ${label}`);
    // Only what was made after the relay's way back began, never an older event twice.
    expect(w.events.every((event) => event.creature.name.startsWith(`${label} `))).toBe(true);
  }
});

async function waitUntil(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

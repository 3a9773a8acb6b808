import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { buildApp } from '../../src/app';
import { testConfig } from '../helpers/app';
import { namedDrivers, type Driver } from '../helpers/drivers';
import { MariaDbPair } from '../helpers/mariadb-pair';

/*
 * Read replicas (DATABASE_REPLICA_URLS) against real replication: a private MariaDB primary and
 * replica (test/helpers/mariadb-pair.ts). The replica is made to lag by stopping its SQL thread
 * (it receives the primary's changes but applies none), or killed. What users see is checked
 * through both transports; where reads went, by /metrics's per-pool statement counter.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let pair: MariaDbPair | undefined;
/** Reads may lag up to a minute here: a stopped replica keeps serving others' reads for the whole test. */
let patient: FastifyInstance;
/** REPLICA_MAX_LAG=1s: a stopped replica is out of turn a second later. */
let strict: FastifyInstance;

async function poolStatements(app: FastifyInstance): Promise<{ primary: number; replica: number; lag: number }> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const read = (pattern: RegExp) => {
    const value = pattern.exec(text)?.[1];
    return value === '+Inf' ? Infinity : Number(value ?? NaN);
  };
  return {
    primary: read(/^db_pool_statements_total\{pool="primary"\} (\S+)/m),
    replica: read(/^db_pool_statements_total\{pool="replica1"\} (\S+)/m),
    lag: read(/^db_replica_lag_seconds\{pool="replica1"\} (\S+)/m),
  };
}

/** Until the app's probe has seen the replica caught up (it probes every 250 ms). */
async function replicaServing(app: FastifyInstance, maxLagSeconds: number): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    const { lag } = await poolStatements(app);
    if (lag <= maxLagSeconds) return;
    await sleep(100);
  }
  throw new Error('the replica never became healthy');
}

let counter = 0;
async function newTrainer(
  driver: Driver,
): Promise<{ id: string; nickname: string; email: string; password: string; token: string; refreshToken: string }> {
  counter += 1;
  const tag = `${randomBytes(3).toString('hex')}${counter}`;
  const email = `rep${tag}@example.test`;
  const password = 'replica-lag-1';
  const nickname = `rep_${tag}`;
  const registered = await driver.register({ nickname, firstName: 'Rep', lastName: 'Lica', email, password, team: 'VALOR' });
  if (!registered.ok) throw new Error(`register: ${registered.code}`);
  const login = await driver.authenticate(email, password);
  if (!login.ok) throw new Error(`authenticate: ${login.code}`);
  return { id: String(registered.value.id), nickname, email, password, token: login.value.token, refreshToken: login.value.refreshToken };
}

beforeAll(async () => {
  pair = await MariaDbPair.start('the read-replica tests');
  if (!pair) return;
  await pair.createDatabase('registry');
  const env = (maxLag: string) => ({ DATABASE_REPLICA_URLS: pair!.url('replica', 'registry'), REPLICA_MAX_LAG: maxLag });
  patient = await buildApp(testConfig(pair.url('primary', 'registry'), env('60s')));
  strict = await buildApp(testConfig(pair.url('primary', 'registry'), env('1s')));
  await pair.caughtUp();
  await replicaServing(patient, 60);
  await replicaServing(strict, 1);
}, 120_000);

afterAll(async () => {
  await patient?.close();
  await strict?.close();
  await pair?.stop();
});

const run = process.env.REGISTRY_TEST_MYSQL === 'off' ? describe.skip : describe;

run('read replicas (a private MariaDB primary and replica)', () => {
  it('while the replica is healthy, lists and searches are served by it', async () => {
    if (!pair) return;
    const [, make] = namedDrivers[0];
    const driver = make(patient);
    const caller = await newTrainer(driver);
    await pair.caughtUp();
    const before = await poolStatements(patient);
    for (const query of [{}, { filter: { nicknameContains: 'rep' } }, { filter: { team: 'VALOR' } }]) {
      const page = await driver.listTrainers(caller.token, { limit: 5, ...query });
      expect(page.ok).toBe(true);
    }
    const rest = namedDrivers[1][1](patient);
    expect((await rest.listTrainers(caller.token, { filter: { nicknameContains: 'rep' } })).ok).toBe(true);
    const after = await poolStatements(patient);
    // Each list is its page and its count: at least two statements each on the replica.
    expect(after.replica - before.replica).toBeGreaterThanOrEqual(8);
  });

  describe.each(namedDrivers)('with the replica lagging (its SQL thread stopped), through %s', (_name, make) => {
    afterEach(async () => {
      await pair?.resumeApplying();
    });

    it('a fresh login works at once, a trainer reads its own new creature and its own changes, others may see the old state until the lag passes', async () => {
      if (!pair) return;
      const driver = make(patient);
      const other = await newTrainer(driver);
      await pair.caughtUp();
      await pair.stopApplying();

      // Registered and logged in while the replica applies nothing: the token works at once.
      const fresh = await newTrainer(driver);
      const me = await driver.getTrainer(fresh.token, fresh.id);
      expect(me.ok && me.value.id).toBe(Number(fresh.id));

      // Its own new creature, its own changes, its own list and count.
      const created = await driver.createCreature(fresh.token, fresh.id, { name: 'Laggy', speciesId: 7, level: 3 });
      if (!created.ok) throw new Error(created.code);
      const creatureId = String(created.value.id);
      const own = await driver.getCreature(fresh.token, fresh.id, creatureId);
      expect(own.ok && own.value.name).toBe('Laggy');
      const renamed = await driver.updateCreature(fresh.token, fresh.id, creatureId, { name: 'Renamed', level: 9 });
      expect(renamed.ok).toBe(true);
      const again = await driver.getCreature(fresh.token, fresh.id, creatureId);
      expect(again.ok && [again.value.name, again.value.level]).toEqual(['Renamed', 9]);
      const ownList = await driver.listCreatures(fresh.token, fresh.id, {});
      expect(ownList.ok && [ownList.value.items.map((c) => c.name), ownList.value.totalCount]).toEqual([['Renamed'], 1]);
      const ownProfile = await driver.getTrainer(fresh.token, fresh.id);
      expect(ownProfile.ok && ownProfile.value.creaturesOwned).toBe(1);

      // Another trainer reads the replica, which has not applied any of it yet.
      expect((await driver.getTrainer(other.token, fresh.id)).ok).toBe(false);
      const othersView = await driver.listCreatures(other.token, fresh.id, {});
      expect(othersView.ok ? othersView.value.items : []).toEqual([]);

      // Once the replica has applied what it missed, everyone sees it.
      await pair.resumeApplying();
      const later = await driver.getTrainer(other.token, fresh.id);
      expect(later.ok && later.value.creaturesOwned).toBe(1);
      const laterList = await driver.listCreatures(other.token, fresh.id, {});
      expect(laterList.ok && laterList.value.items.map((c) => c.name)).toEqual(['Renamed']);
    });

    it('a logout takes effect at once, and a refresh never ends a live session', async () => {
      if (!pair) return;
      const driver = make(patient);
      const trainer = await newTrainer(driver);
      await pair.caughtUp();
      await pair.stopApplying();

      // Refreshes one after another, each with the token the one before gave: never a replay.
      let refreshToken = trainer.refreshToken;
      let token = trainer.token;
      for (let i = 0; i < 3; i += 1) {
        const refreshed = await driver.refresh(refreshToken);
        if (!refreshed.ok) throw new Error(`refresh ${i}: ${refreshed.code}`);
        ({ refreshToken, token } = refreshed.value);
        expect((await driver.getTrainer(token, trainer.id)).ok).toBe(true);
      }

      // Logged out: refused at once, though the replica still has the session open.
      expect((await driver.logout(token)).ok).toBe(true);
      const after = await driver.getTrainer(token, trainer.id);
      expect(after.ok ? 'accepted' : after.code).toBe('UNAUTHENTICATED');
      const refreshedAfter = await driver.refresh(refreshToken);
      expect(refreshedAfter.ok ? 'accepted' : refreshedAfter.code).toBe('UNAUTHENTICATED');
    });
  });

  it('a replica further behind than REPLICA_MAX_LAG gets no reads, and nothing fails; it serves again once caught up', async () => {
    if (!pair) return;
    const driver = namedDrivers[0][1](strict);
    const caller = await newTrainer(driver);
    await pair.caughtUp();
    await pair.stopApplying();
    const late = await newTrainer(driver);
    // Past REPLICA_MAX_LAG (1 s) and a probe or two.
    await sleep(2000);
    const before = await poolStatements(strict);
    expect(before.lag).toBeGreaterThan(1);
    const page = await driver.listTrainers(caller.token, { filter: { nickname: late.nickname } });
    expect(page.ok && page.value.totalCount).toBe(1);
    const profile = await driver.getTrainer(caller.token, late.id);
    expect(profile.ok).toBe(true);
    const after = await poolStatements(strict);
    expect(after.replica).toBe(before.replica);
    expect(after.primary).toBeGreaterThan(before.primary);

    await pair.resumeApplying();
    await replicaServing(strict, 1);
    const resumed = await poolStatements(strict);
    expect((await driver.listTrainers(caller.token, {})).ok).toBe(true);
    expect((await poolStatements(strict)).replica).toBeGreaterThan(resumed.replica);
  });

  it('a replica that is away gets no reads, and nothing fails', async () => {
    if (!pair) return;
    const drivers = namedDrivers.map(([, make]) => make(patient));
    const caller = await newTrainer(drivers[0]);
    await pair.caughtUp();
    await pair.killReplica();
    // Reads sent before the probe noticed fall back to the primary too.
    for (const driver of drivers) {
      const page = await driver.listTrainers(caller.token, { limit: 3 });
      expect(page.ok).toBe(true);
    }
    await sleep(800);
    const before = await poolStatements(patient);
    for (const driver of drivers) {
      expect((await driver.listTrainers(caller.token, { limit: 3 })).ok).toBe(true);
      expect((await driver.getTrainer(caller.token, caller.id)).ok).toBe(true);
    }
    const after = await poolStatements(patient);
    expect(after.replica).toBe(before.replica);
    expect(after.lag).toBe(Infinity);
  });
});

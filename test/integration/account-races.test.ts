import type { FastifyInstance } from 'fastify';
import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, signIn, TEST_PASSWORD, type TrainerFixture } from '../helpers/factories';
import { namedDrivers, restDriver } from '../helpers/drivers';
import { until } from '../helpers/events';

/*
 * A password sent to prove who is asking (changePassword's current one, deleteMe's) is checked
 * against the hash read before the check; what it allows is written only if, at the write, that
 * hash is still the stored one and the caller's session is still open. Two changes at once, a
 * change then a deletion with the old password, a logout while the password is being checked:
 * each is tried here with real requests, on both databases and both transports.
 */

const P1 = 'first-new-password';
const P2 = 'second-new-password';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const rowsOf = async (app: FastifyInstance, trainerId: number) => {
  const [trainer] = await app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM trainer WHERE id = ?', [trainerId]);
  const [creatures] = await app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature WHERE trainer_id = ?', [
    trainerId,
  ]);
  return { trainer: Number(trainer.n), creatures: Number(creatures.n) };
};

const storedHash = async (app: FastifyInstance, trainerId: number): Promise<string> => {
  const [row] = await app.dataSource.query<{ h: string }[]>('SELECT password_hash AS h FROM trainer WHERE id = ?', [trainerId]);
  return row.h;
};

/** Resolves once a password check or hash has been queued or started beyond `before` (the request is past its token check). */
const hashing = (app: FastifyInstance, before: number) =>
  until(() => {
    const { running, waiting } = app.services.hasher.load();
    return running + waiting.login > before;
  }, 'the password check');

describe.each(databases)('account races on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_IP_PER_MINUTE: '100000' });
  });
  afterAll(async () => t.close());

  describe.each(namedDrivers)('through %s', (_name, makeDriver) => {
    it('gives exactly one of two password changes at once from two sessions: its session goes on, the other is UNAUTHENTICATED', async () => {
      const api = makeDriver(t.app);
      const rest = restDriver(t.app);
      for (let round = 0; round < 10; round += 1) {
        const me = await createTrainer(t.app);
        const id = String(me.trainer.id);
        const other = await signIn(t.app, me.trainer.id);
        const results = await Promise.all([
          api.changePassword(me.token, id, TEST_PASSWORD, P1),
          api.changePassword(other.token, id, TEST_PASSWORD, P2),
        ]);
        expect(results.map((r) => r.ok).sort()).toEqual([false, true]);
        const won = results[0].ok ? 0 : 1;
        const [winner, loser] = won === 0 ? [me.token, other.token] : [other.token, me.token];
        expect(results[1 - won]).toMatchObject({ ok: false, code: 'UNAUTHENTICATED' });
        expect(await rest.getTrainer(winner, id)).toMatchObject({ ok: true });
        expect(await rest.getTrainer(loser, id)).toMatchObject({ ok: false, code: 'UNAUTHENTICATED' });
        const logins = [(await rest.authenticate(me.email, P1)).ok, (await rest.authenticate(me.email, P2)).ok];
        expect(logins).toEqual(won === 0 ? [true, false] : [false, true]);
      }
    }, 120_000);

    it('never lets a deletion with the old password succeed after a password change, at any spacing', async () => {
      const api = makeDriver(t.app);
      const probe = await createTrainer(t.app);
      const begun = performance.now();
      await t.app.services.hasher.verify(TEST_PASSWORD, await storedHash(t.app, probe.trainer.id));
      const hashMs = performance.now() - begun;
      for (const spacing of [0, hashMs / 2, hashMs, hashMs * 1.5, hashMs * 2, hashMs * 4]) {
        const me: TrainerFixture = await createTrainer(t.app);
        const id = String(me.trainer.id);
        const other = await signIn(t.app, me.trainer.id);
        await createCreature(t.app, me.trainer.id);
        await createCreature(t.app, me.trainer.id);
        const change = api.changePassword(me.token, id, TEST_PASSWORD, P1);
        await sleep(spacing);
        const deletion = await api.deleteMe(other.token, id, TEST_PASSWORD);
        const changed = await change;
        const outcome = `spacing ${Math.round(spacing)} ms: change ${JSON.stringify(changed)}, deletion ${JSON.stringify(deletion)}`;
        expect({ outcome, both: changed.ok && deletion.ok }).toEqual({ outcome, both: false });
        const rows = await rowsOf(t.app, me.trainer.id);
        if (deletion.ok) expect(rows).toEqual({ trainer: 0, creatures: 0 });
        else {
          expect(deletion).toMatchObject({ code: 'UNAUTHENTICATED' });
          expect(rows).toEqual({ trainer: 1, creatures: 2 });
        }
      }
    }, 120_000);
  });

  it('refuses a password change or deletion whose session is logged out while its password is checked, and changes nothing', async () => {
    const rest = restDriver(t.app);
    for (const operation of ['changePassword', 'deleteMe'] as const) {
      const me = await createTrainer(t.app);
      const id = String(me.trainer.id);
      const keeper = await signIn(t.app, me.trainer.id);
      await createCreature(t.app, me.trainer.id);
      const before = await storedHash(t.app, me.trainer.id);
      // Hashes queued first hold the request at its password check for a while.
      const decoy = await t.app.services.hasher.decoyHash();
      const queued = t.app.services.hasher.load();
      const ahead = Array.from({ length: 4 }, () => t.app.services.hasher.verify('x', decoy));
      const call =
        operation === 'changePassword' ? rest.changePassword(me.token, id, TEST_PASSWORD, P1) : rest.deleteMe(me.token, id, TEST_PASSWORD);
      await hashing(t.app, queued.running + queued.waiting.login + ahead.length);
      expect(await rest.logout(me.token)).toMatchObject({ ok: true });
      const answer = await call;
      await Promise.all(ahead);
      expect(answer).toMatchObject({ ok: false, code: 'UNAUTHENTICATED' });
      expect(await rowsOf(t.app, me.trainer.id)).toEqual({ trainer: 1, creatures: 1 });
      expect(await storedHash(t.app, me.trainer.id)).toBe(before);
      // The other session was not ended, and the password is the old one.
      expect(await rest.getTrainer(keeper.token, id)).toMatchObject({ ok: true });
      expect((await rest.authenticate(me.email, TEST_PASSWORD)).ok).toBe(true);
    }
  }, 60_000);
});

import { Creature } from '../../src/creatures/creature.entity';
import { ERROR_STATUS, type ErrorCode } from '../../src/errors';
import { Team } from '../../src/trainers/team';
import { Trainer } from '../../src/trainers/trainer.entity';
import { databases, startTestApp, type TestApp } from '../helpers/app';

import { value, namedDrivers, type Driver, type Outcome, type TrainerView } from '../helpers/drivers';
import jwt from 'jsonwebtoken';
import { MAX_SESSIONS_PER_TRAINER } from '../../src/auth/session.service';
import {
  createCreature,
  createTrainer,
  deleteTrainer,
  signIn,
  TEST_PASSWORD,
  tokenFor,
  unique,
  type TrainerFixture,
} from '../helpers/factories';
import { TEST_JWT_SECRET } from '../helpers/app';
import { gql } from '../helpers/graphql';

/*
 * Every behaviour of the contract, written once and run through both transports on both
 * databases. A behaviour that differs between GraphQL and REST fails here.
 */

/** The outcome failed with `code`; on REST also with the catalogue's HTTP status. */
function expectFailure<T>(driver: Driver, result: Outcome<T>, code: string, field?: string): void {
  expect(result).toMatchObject({ ok: false, code });
  if (driver.name === 'rest' && !result.ok) expect(result.status).toBe(ERROR_STATUS[code as ErrorCode]);
  if (field && !result.ok) expect(result.fields?.map((f) => f.field)).toContain(field);
}

const registration = (overrides: Record<string, unknown> = {}) => {
  const nickname = unique('Sc_');
  return {
    nickname,
    firstName: 'Gary',
    lastName: 'Oak',
    email: `${nickname}@Example.test`,
    password: 'eevee-forever',
    team: 'MYSTIC',
    ...overrides,
  };
};

/** Characters no name may hold (control, format, invisible), named for the test titles. */
const HIDDEN_IN_NAMES = [
  ['a C1 control', '\u0085'],
  ['a zero-width joiner', '\u200D'],
  ['a zero-width space', '\u200B'],
  ['a right-to-left override', '\u202E'],
  ['a bidi isolate', '\u2066'],
  ['the Hangul filler U+3164', '\u3164'],
  ['the Hangul choseong filler U+115F', '\u115F'],
  ['the Hangul jungseong filler U+1160', '\u1160'],
  ['the half-width Hangul filler U+FFA0', '\uFFA0'],
  ['a tag character', '\u{E0041}'],
  ['a line separator', '\u2028'],
];

/** REFRESH_REUSE_GRACE in these tests, and a wait that outlasts it. */
const REUSE_GRACE_MS = 1000;
const pastTheReuseGrace = () => new Promise((resolve) => setTimeout(resolve, REUSE_GRACE_MS + 200));

const MALFORMED_IDS = ['abc', '-1', '0', '007', '1.5', '1e3', '99999999999999999999', '1'.repeat(300), "1' OR '1'='1"];

describe.each(databases)('on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    // The sessions' logins and refreshes come from one address; the per-address limit has its own test.
    // A short reuse grace, so that the replay tests need not wait the default 10 s.
    t = await startTestApp(kind, { LOGIN_IP_PER_MINUTE: '100000', REFRESH_REUSE_GRACE: `${REUSE_GRACE_MS / 1000}s` });
  });
  afterAll(async () => t.close());

  describe.each(namedDrivers)('through %s', (_name, makeDriver) => {
    let api: Driver;
    let me: TrainerFixture;
    let other: TrainerFixture;
    beforeAll(async () => {
      api = makeDriver(t.app);
      me = await createTrainer(t.app);
      other = await createTrainer(t.app);
    });
    const trainers = () => t.app.dataSource.getRepository(Trainer);
    const creatures = () => t.app.dataSource.getRepository(Creature);
    const myId = () => String(me.trainer.id);

    describe('registering', () => {
      it('creates the trainer and answers with it, its own email included', async () => {
        const input = registration();
        const trainer = value(await api.register(input));
        expect(trainer).toMatchObject({ nickname: input.nickname, email: input.email.toLowerCase(), team: 'MYSTIC', creaturesOwned: 0 });
        expect(await trainers().countBy({ id: trainer.id, email: input.email.toLowerCase() })).toBe(1);
      });

      it('refuses an email or nickname already registered as TRAINER_ALREADY_EXISTS', async () => {
        const input = registration();
        value(await api.register(input));
        expectFailure(api, await api.register(registration({ email: input.email.toUpperCase() })), 'TRAINER_ALREADY_EXISTS');
        expectFailure(api, await api.register(registration({ nickname: input.nickname.toLowerCase() })), 'TRAINER_ALREADY_EXISTS');
      });

      it('measures first and last names after trimming, as stored', async () => {
        const trainer = value(await api.register(registration({ firstName: `Ash${' '.repeat(70)}` })));
        expect(trainer.firstName).toBe('Ash');
      });

      it.each([
        ['nickname', { nickname: 'x' }],
        ['email', { email: 'nope' }],
        ['password', { password: 'short' }],
        ['team', { team: 'ROCKET' }],
        ['firstName', { firstName: '  ' }],
        ['lastName', { lastName: 42 }],
      ])('refuses a bad %s as BAD_USER_INPUT and writes nothing', async (field, override) => {
        const input = registration(override);
        expectFailure(api, await api.register(input), 'BAD_USER_INPUT', field);
        expect(await trainers().countBy({ nickname: input.nickname })).toBe(0);
      });

      it('refuses a field the input does not know as BAD_USER_INPUT', async () => {
        expectFailure(api, await api.register(registration({ role: 'admin' })), 'BAD_USER_INPUT');
      });

      it.each(HIDDEN_IN_NAMES)('refuses first and last names with %s as BAD_USER_INPUT, and writes nothing', async (_what, hidden) => {
        for (const field of ['firstName', 'lastName']) {
          const input = registration({ [field]: `Ash${hidden}Ketchum` });
          expectFailure(api, await api.register(input), 'BAD_USER_INPUT', field);
          expect(await trainers().countBy({ nickname: input.nickname })).toBe(0);
        }
      });

      it('stores first and last names as given, trimmed and in NFC (not folded): ẞ, ﬀ and full-width letters stay', async () => {
        const input = registration({ firstName: ' Ｊｏ ẞ ', lastName: 'Pe\u0301rez Eﬀ' });
        const trainer = value(await api.register(input));
        expect(trainer).toMatchObject({ firstName: 'Ｊｏ ẞ', lastName: 'P\u00E9rez Eﬀ' });
        expect(await trainers().findOneBy({ id: trainer.id })).toMatchObject({ firstName: 'Ｊｏ ẞ', lastName: 'P\u00E9rez Eﬀ' });
      });
    });

    describe('authenticating', () => {
      it('gives a Bearer token for the right password, which then works', async () => {
        const auth = value(await api.authenticate(me.email, TEST_PASSWORD));
        expect(auth.tokenType).toBe('Bearer');
        expect(auth.trainer).toMatchObject({ id: me.trainer.id, email: me.email });
        expect(new Date(auth.expiresAt).getTime()).toBeGreaterThan(Date.now());
        expect(value(await api.getTrainer(auth.token, myId())).email).toBe(me.email);
      });

      it('answers a wrong password and an unknown email alike with UNAUTHENTICATED', async () => {
        const wrong = await api.authenticate(me.email, 'wrong-password');
        const unknown = await api.authenticate(`${unique('nobody')}@example.test`, TEST_PASSWORD);
        expectFailure(api, wrong, 'UNAUTHENTICATED');
        expect(unknown).toEqual(wrong);
      });
    });

    describe('reading trainers', () => {
      it('shows another trainer without its email, with its creature count', async () => {
        await createCreature(t.app, other.trainer.id);
        const seen = value(await api.getTrainer(me.token, String(other.trainer.id)));
        expect(seen).toMatchObject({ id: other.trainer.id, nickname: other.trainer.nickname, email: null });
        expect(seen.creaturesOwned).toBe(await creatures().countBy({ trainerId: other.trainer.id }));
      });

      it('answers NOT_FOUND for a trainer that does not exist', async () => {
        expectFailure(api, await api.getTrainer(me.token, '2147483647'), 'NOT_FOUND');
      });

      it.each(MALFORMED_IDS)('answers BAD_USER_INPUT for the malformed trainer id %j', async (id) => {
        expectFailure(api, await api.getTrainer(me.token, id), 'BAD_USER_INPUT');
      });

      it('pages trainers by id with the total, showing only the caller’s own email', async () => {
        const page = value(await api.listTrainers(me.token, { limit: 100, offset: 0 }));
        expect(page.totalCount).toBe(await trainers().count());
        expect(page.items.map((i) => i.id)).toEqual([...page.items.map((i) => i.id)].sort((a, b) => a - b));
        for (const item of page.items) expect(item.email).toBe(item.id === me.trainer.id ? me.email : null);
        const second = value(await api.listTrainers(me.token, { limit: 1, offset: 1 }));
        expect(second).toMatchObject({ limit: 1, offset: 1, items: [{ id: page.items[1].id }] });
        expect(value(await api.listTrainers(me.token, {}))).toMatchObject({ limit: 20, offset: 0 });
        // MAX_OFFSET (10000 by default) is the deepest offset: past the last trainer, an empty page.
        expect(value(await api.listTrainers(me.token, { limit: 5, offset: 10_000 }))).toMatchObject({
          items: [],
          totalCount: page.totalCount,
        });
      });

      it.each([
        ['limit', { limit: 0 }],
        ['limit', { limit: 101 }],
        ['limit', { limit: -1 }],
        ['limit', { limit: 1.5 }],
        ['offset', { offset: -1 }],
        ['offset', { offset: 10_001 }],
      ])('refuses %s out of bounds (%j) as BAD_USER_INPUT', async (field, query) => {
        expectFailure(api, await api.listTrainers(me.token, query), 'BAD_USER_INPUT', field);
      });
    });

    describe('searching and walking trainers', () => {
      /** Registers trainers whose nicknames share a fresh stem, so that filters find exactly them. */
      const family = async (stem: string, teams: string[]) => {
        const made: TrainerView[] = [];
        for (const [i, team] of teams.entries()) made.push(value(await api.register(registration({ nickname: `${stem}_${i}`, team }))));
        return made;
      };

      it('walks every trainer by cursor while trainers are added, none skipped or repeated, and ends with a null cursor', async () => {
        // Enough trainers for several pages, written as a registration writes them (no password to hash).
        const stem = unique('Walk').toLowerCase();
        for (let i = 0; i < 20; i += 1) await createTrainer(t.app, { nickname: `${stem}_${i}`, team: Team.VALOR });
        const before = (await trainers().find({ select: { id: true }, order: { id: 'ASC' } })).map((t) => t.id);
        const seen: number[] = [];
        const added: number[] = [];
        let page = value(await api.listTrainers(me.token, { limit: 7 }));
        for (let turn = 0; turn < 1000; turn += 1) {
          seen.push(...page.items.map((t) => t.id));
          if (page.nextCursor === null) break;
          expect(page.nextCursor).toEqual(expect.any(String));
          if (turn < 3) added.push(value(await api.register(registration())).id);
          if (api.name === 'rest') expect(page.link).toBe(`</trainer?limit=7&after=${encodeURIComponent(page.nextCursor!)}>; rel="next"`);
          page = value(await api.listTrainers(me.token, { limit: 7, after: page.nextCursor }));
        }
        expect(seen.length).toBeGreaterThan(14);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen).toEqual([...seen].sort((a, b) => a - b));
        for (const id of [...before, ...added]) expect(seen).toContain(id);
        if (api.name === 'rest') expect(page.link).toBeUndefined();
      });

      it('filters by exact nickname, by part of it and by team, any case, and counts only the matches', async () => {
        const stem = unique('Fam').toLowerCase();
        const made = await family(stem, ['VALOR', 'MYSTIC', 'VALOR']);
        const part = value(await api.listTrainers(me.token, { filter: { nicknameContains: stem.toUpperCase() } }));
        expect(part.items.map((t) => t.id)).toEqual(made.map((t) => t.id));
        expect(part).toMatchObject({ totalCount: 3, nextCursor: null });
        const valor = value(await api.listTrainers(me.token, { filter: { nicknameContains: stem, team: 'VALOR' } }));
        expect(valor.items.map((t) => t.id)).toEqual([made[0].id, made[2].id]);
        expect(valor.totalCount).toBe(2);
        const exact = value(await api.listTrainers(me.token, { filter: { nickname: `${stem}_1`.toUpperCase() } }));
        expect(exact.items.map((t) => t.id)).toEqual([made[1].id]);
        expect(exact.totalCount).toBe(1);
        const none = value(await api.listTrainers(me.token, { filter: { nickname: 'no such trainer' } }));
        expect(none).toMatchObject({ items: [], totalCount: 0, nextCursor: null });
      });

      it('treats _ and % in nicknameContains as characters, not wildcards', async () => {
        const stem = unique('Wild').toLowerCase();
        const [underscored] = await family(stem, ['INSTINCT']);
        await family(`${stem}x0`, ['INSTINCT']);
        const found = value(await api.listTrainers(me.token, { filter: { nicknameContains: `${stem}_0` } }));
        expect(found.items.map((t) => t.id)).toEqual([underscored.id]);
      });

      it('combines a filter with a cursor: the next page holds the matching trainers after it', async () => {
        const stem = unique('Cur').toLowerCase();
        const made = await family(stem, ['VALOR', 'VALOR', 'MYSTIC', 'VALOR', 'VALOR']);
        const first = value(await api.listTrainers(me.token, { limit: 2, filter: { nicknameContains: stem, team: 'VALOR' } }));
        expect(first.items.map((t) => t.id)).toEqual([made[0].id, made[1].id]);
        expect(first.totalCount).toBe(4);
        if (api.name === 'rest') expect(first.link).toContain(`nicknameContains=${stem}`);
        const second = value(
          await api.listTrainers(me.token, { limit: 2, after: first.nextCursor, filter: { nicknameContains: stem, team: 'VALOR' } }),
        );
        expect(second.items.map((t) => t.id)).toEqual([made[3].id, made[4].id]);
        expect(second.nextCursor).toBeNull();
      });

      it.each([
        ['a made-up cursor', 'abc'],
        ['an empty cursor', ''],
        ['a cursor with its id changed', 'tampered'],
      ])('refuses %s as BAD_USER_INPUT', async (_what, kind) => {
        let after = kind;
        if (kind === 'tampered') {
          const page = value(await api.listTrainers(me.token, { limit: 1 }));
          const [payload, signature] = page.nextCursor!.split('.');
          const id = Number(Buffer.from(payload, 'base64url').toString());
          after = `${Buffer.from(String(id + 1)).toString('base64url')}.${signature}`;
        }
        expectFailure(api, await api.listTrainers(me.token, { after }), 'BAD_USER_INPUT');
      });

      it('refuses a cursor with an offset, and a nicknameContains outside 2..32 characters of the nickname alphabet', async () => {
        const page = value(await api.listTrainers(me.token, { limit: 1 }));
        expectFailure(api, await api.listTrainers(me.token, { after: page.nextCursor, offset: 3 }), 'BAD_USER_INPUT', 'offset');
        for (const nicknameContains of ['a', 'x'.repeat(33), 'no spaces', '%%']) {
          expectFailure(api, await api.listTrainers(me.token, { filter: { nicknameContains } }), 'BAD_USER_INPUT');
        }
      });
    });

    describe('creatures', () => {
      it('creates one for the caller, trimmed, at level 1 by default, and stores it', async () => {
        const name = unique('Vulpix');
        const creature = value(await api.createCreature(me.token, myId(), { name: ` ${name} `, speciesId: 37 }));
        expect(creature).toMatchObject({ name, speciesId: 37, level: 1, trainerId: me.trainer.id });
        expect(await creatures().findOneBy({ id: creature.id })).toMatchObject({ name, trainerId: me.trainer.id });
        expect(value(await api.getCreature(me.token, myId(), String(creature.id)))).toEqual(creature);
      });

      it('measures a name after trimming: padding beyond 32 characters is fine when the name fits', async () => {
        const name = unique('Pad');
        const creature = value(await api.createCreature(me.token, myId(), { name: `${name}${' '.repeat(40)}`, speciesId: 1 }));
        expect(creature.name).toBe(name);
      });

      it.each(HIDDEN_IN_NAMES)('refuses a name with %s as BAD_USER_INPUT, and writes nothing', async (_what, hidden) => {
        const name = unique(`Hid${hidden}den`);
        expectFailure(api, await api.createCreature(me.token, myId(), { name, speciesId: 1 }), 'BAD_USER_INPUT', 'name');
        expect(await creatures().countBy({ trainerId: me.trainer.id, name })).toBe(0);
      });

      it.each([
        ['ẞ (capital sharp s)', 'Straẞe', ['Straße', 'STRASSE', 'strasse']],
        ['ß', 'Fuß', ['FUSS', 'fuss', 'FUẞ']],
        ['ﬀ (ligature)', 'Eﬀie', ['Effie', 'EFFIE']],
        ['full-width letters', 'Ｍｅｗ', ['Mew', 'mew', 'ＭＥＷ']],
        ['final sigma', 'Οδυσσευς', ['ΟΔΥΣΣΕΥΣ', 'οδυσσευσ']],
      ])('treats names with %s as the same name as their folded forms (DUPLICATE_CREATURE)', async (_what, name, others) => {
        const suffix = unique('');
        const stored = value(await api.createCreature(me.token, myId(), { name: `${name}${suffix}`, speciesId: 1 }));
        expect(stored.name).toBe(`${name}${suffix}`.normalize('NFC'));
        for (const same of others) {
          expectFailure(api, await api.createCreature(me.token, myId(), { name: `${same}${suffix}`, speciesId: 1 }), 'DUPLICATE_CREATURE');
        }
        expect(await creatures().countBy({ trainerId: me.trainer.id, name: stored.name })).toBe(1);
      });

      it('keeps the dotless ı apart from i, and stores a name as given (NFC), not in its folded form', async () => {
        const suffix = unique('');
        value(await api.createCreature(me.token, myId(), { name: `Kızıl${suffix}`, speciesId: 1 }));
        value(await api.createCreature(me.token, myId(), { name: `Kizil${suffix}`, speciesId: 1 }));
        const wide = value(await api.createCreature(me.token, myId(), { name: `Ｅﬀie ẞ${suffix}`, speciesId: 1 }));
        expect(wide.name).toBe(`Ｅﬀie ẞ${suffix}`);
        expect(await creatures().findOneBy({ id: wide.id })).toMatchObject({ name: `Ｅﬀie ẞ${suffix}` });
      });

      it('accepts a name whose folded form is 18 times longer (U+FDFA), and refuses its duplicate', async () => {
        const name = `${'\uFDFA'.repeat(31)}A`;
        expect(value(await api.createCreature(me.token, myId(), { name, speciesId: 1 })).name).toBe(name);
        expectFailure(api, await api.createCreature(me.token, myId(), { name: name.toLowerCase(), speciesId: 1 }), 'DUPLICATE_CREATURE');
      });

      it('refuses the same name again, in any case, as DUPLICATE_CREATURE', async () => {
        const name = unique('Growlithe');
        value(await api.createCreature(me.token, myId(), { name, speciesId: 58 }));
        expectFailure(api, await api.createCreature(me.token, myId(), { name: name.toUpperCase(), speciesId: 58 }), 'DUPLICATE_CREATURE');
      });

      it('gives one creature and 19 DUPLICATE_CREATURE for 20 concurrent identical creates', async () => {
        const input = { name: unique('Ditto'), speciesId: 132 };
        const results = await Promise.all(Array.from({ length: 20 }, () => api.createCreature(me.token, myId(), input)));
        expect(results.filter((r) => r.ok)).toHaveLength(1);
        expect(results.filter((r) => !r.ok && r.code === 'DUPLICATE_CREATURE')).toHaveLength(19);
        expect(await creatures().countBy({ trainerId: me.trainer.id, name: input.name })).toBe(1);
      });

      it('forbids creating for another trainer, and writes nothing', async () => {
        const name = unique('Theft');
        expectFailure(api, await api.createCreature(me.token, String(other.trainer.id), { name, speciesId: 1 }), 'FORBIDDEN');
        expect(await creatures().countBy({ name })).toBe(0);
      });

      it.each([
        ['level', { name: 'ok', speciesId: 1, level: 0 }],
        ['level', { name: 'ok', speciesId: 1, level: 101 }],
        ['level', { name: 'ok', speciesId: 1, level: '5' }],
        ['level', { name: 'ok', speciesId: 1, level: -5 }],
        ['level', { name: 'ok', speciesId: 1, level: 2.5 }],
        ['speciesId', { name: 'ok', speciesId: 0 }],
        ['speciesId', { name: 'ok', speciesId: '25' }],
        ['speciesId', { name: 'ok', speciesId: 100001 }],
        ['name', { name: '', speciesId: 1 }],
        ['name', { name: '   ', speciesId: 1 }],
        ['name', { name: 'x'.repeat(33), speciesId: 1 }],
        ['name', { name: 'nul\u0000byte', speciesId: 1 }],
      ])('refuses a bad %s (%j) as BAD_USER_INPUT, and writes nothing', async (field, input) => {
        const before = await creatures().countBy({ trainerId: me.trainer.id });
        expectFailure(api, await api.createCreature(me.token, myId(), input), 'BAD_USER_INPUT', field);
        expect(await creatures().countBy({ trainerId: me.trainer.id })).toBe(before);
      });

      it('refuses an unknown field or a missing name as BAD_USER_INPUT', async () => {
        expectFailure(api, await api.createCreature(me.token, myId(), { name: 'ok', speciesId: 1, shiny: true }), 'BAD_USER_INPUT');
        expectFailure(api, await api.createCreature(me.token, myId(), { speciesId: 1 }), 'BAD_USER_INPUT');
      });

      it('lists a trainer’s creatures oldest first, paged, with their total', async () => {
        const collector = await createTrainer(t.app);
        const made = [];
        for (let i = 0; i < 4; i += 1) made.push(await createCreature(t.app, collector.trainer.id, { name: `n${i}` }));
        const id = String(collector.trainer.id);
        const page = value(await api.listCreatures(me.token, id, { limit: 2, offset: 1 }));
        expect(page.totalCount).toBe(4);
        // GraphQL's Trainer.creatures is a plain list: only REST echoes limit and offset.
        if (api.name === 'rest') expect(page).toMatchObject({ limit: 2, offset: 1 });
        expect(page.items.map((c) => c.name)).toEqual(['n1', 'n2']);
        expect(page.items.every((c) => c.trainerId === collector.trainer.id)).toBe(true);
        expectFailure(api, await api.listCreatures(me.token, id, { limit: 101 }), 'BAD_USER_INPUT', 'limit');
        expectFailure(api, await api.listCreatures(me.token, '2147483647', {}), 'NOT_FOUND');
      });

      it('deletes the caller’s creature, which is then gone and its name free', async () => {
        const made = await createCreature(t.app, me.trainer.id);
        value(await api.deleteCreature(me.token, myId(), String(made.id)));
        expect(await creatures().countBy({ id: made.id })).toBe(0);
        expectFailure(api, await api.getCreature(me.token, myId(), String(made.id)), 'NOT_FOUND');
        expectFailure(api, await api.deleteCreature(me.token, myId(), String(made.id)), 'NOT_FOUND');
        value(await api.createCreature(me.token, myId(), { name: made.name, speciesId: 1 }));
      });

      it('forbids deleting another trainer’s creature, and keeps it', async () => {
        const theirs = await createCreature(t.app, other.trainer.id);
        expectFailure(api, await api.deleteCreature(me.token, String(other.trainer.id), String(theirs.id)), 'FORBIDDEN');
        expect(await creatures().countBy({ id: theirs.id })).toBe(1);
      });

      it.each(MALFORMED_IDS)('answers BAD_USER_INPUT for the malformed creature id %j', async (id) => {
        expectFailure(api, await api.getCreature(me.token, myId(), id), 'BAD_USER_INPUT');
        expectFailure(api, await api.deleteCreature(me.token, myId(), id), 'BAD_USER_INPUT');
      });
    });

    describe('sessions', () => {
      /** The session an access token names (its sid claim). */
      const sessionOf = (token: string): number => Number((jwt.decode(token) as { sid: string }).sid);
      const sessionRows = async (where: string, params: unknown[]) =>
        Number(
          (await t.app.dataSource.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM trainer_session WHERE ${where}`, params))[0].n,
        );
      const login = async (who: TrainerFixture = me) => value(await api.authenticate(who.email, TEST_PASSWORD));

      it('gives with every login a random refresh token, valid for 30 days, and an access token naming its session', async () => {
        const first = await login();
        const second = await login();
        expect(first.refreshToken).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
        expect(first.refreshToken).not.toBe(second.refreshToken);
        expect(new Date(first.refreshExpiresAt).getTime() - Date.now()).toBeGreaterThan(30 * 86400_000 - 60_000);
        expect(new Date(first.refreshExpiresAt).getTime() - Date.now()).toBeLessThanOrEqual(30 * 86400_000);
        expect(sessionOf(first.token)).not.toBe(sessionOf(second.token));
        // Stored only as hashes.
        const [row] = await t.app.dataSource.query<Record<string, unknown>[]>('SELECT * FROM trainer_session WHERE id = ?', [
          sessionOf(first.token),
        ]);
        const [family, secret] = first.refreshToken.split('.');
        expect(JSON.stringify(row)).not.toContain(family);
        expect(JSON.stringify(row)).not.toContain(secret);
      });

      it('rotates: a refresh gives a new pair that works, and the next refresh takes the new refresh token', async () => {
        const first = await login();
        const second = value(await api.refresh(first.refreshToken));
        expect(second.refreshToken).not.toBe(first.refreshToken);
        // Even within the same second as the login.
        expect(second.token).not.toBe(first.token);
        expect(second.tokenType).toBe('Bearer');
        expect(second.trainer).toMatchObject({ id: me.trainer.id, email: me.email });
        expect(sessionOf(second.token)).toBe(sessionOf(first.token));
        expect(value(await api.getTrainer(second.token, myId())).id).toBe(me.trainer.id);
        const third = value(await api.refresh(second.refreshToken));
        expect(value(await api.getTrainer(third.token, myId())).id).toBe(me.trainer.id);
      });

      it('ends the whole session when a spent refresh token comes back after the reuse grace: the thief and the user both fail next', async () => {
        const stolen = await login();
        const users = value(await api.refresh(stolen.refreshToken));
        await pastTheReuseGrace();
        expectFailure(api, await api.refresh(stolen.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.refresh(users.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(users.token, myId()), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(stolen.token, myId()), 'UNAUTHENTICATED');
        expect(await sessionRows('id = ?', [sessionOf(stolen.token)])).toBe(0);
        // The trainer's other sessions are not touched.
        value(await api.getTrainer(me.token, myId()));
      });

      it('spots a spent refresh token however many refreshes came after it', async () => {
        const stolen = await login();
        let current = stolen;
        for (let i = 0; i < 12; i += 1) current = value(await api.refresh(current.refreshToken));
        expectFailure(api, await api.refresh(stolen.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.refresh(current.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(current.token, myId()), 'UNAUTHENTICATED');
      });

      it('ends the session when its family comes with a made-up secret: only a holder of one of its tokens knows the family', async () => {
        const session = await login();
        const [family] = session.refreshToken.split('.');
        expectFailure(api, await api.refresh(`${family}.${'A'.repeat(43)}`), 'UNAUTHENTICATED');
        expectFailure(api, await api.refresh(session.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(session.token, myId()), 'UNAUTHENTICATED');
      });

      it('answers every one of concurrent refreshes with one token (two tabs), all with the same next refresh token, which works', async () => {
        const first = await login();
        const results = (await Promise.all([1, 2, 3, 4].map(() => api.refresh(first.refreshToken)))).map(value);
        expect(new Set(results.map((r) => r.refreshToken)).size).toBe(1);
        expect(results[0].refreshToken).not.toBe(first.refreshToken);
        for (const result of results) expect(value(await api.getTrainer(result.token, myId())).id).toBe(me.trainer.id);
        const next = value(await api.refresh(results[3].refreshToken));
        expect(value(await api.getTrainer(next.token, myId())).id).toBe(me.trainer.id);
        expect(value(await api.getTrainer(results[0].token, myId())).id).toBe(me.trainer.id);
      });

      it('answers a refresh retried within the reuse grace (its answer lost) with the same refresh token, and the session goes on', async () => {
        const first = await login();
        const lost = value(await api.refresh(first.refreshToken));
        const retried = value(await api.refresh(first.refreshToken));
        expect([retried.refreshToken, retried.refreshExpiresAt]).toEqual([lost.refreshToken, lost.refreshExpiresAt]);
        value(await api.getTrainer(retried.token, myId()));
        value(await api.getTrainer(lost.token, myId()));
        const next = value(await api.refresh(retried.refreshToken));
        value(await api.getTrainer(next.token, myId()));
        expect(await sessionRows('id = ?', [sessionOf(first.token)])).toBe(1);
      });

      it('takes a token two refreshes old for a replay even within the reuse grace', async () => {
        const first = await login();
        const second = value(await api.refresh(first.refreshToken));
        const third = value(await api.refresh(second.refreshToken));
        expectFailure(api, await api.refresh(first.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.refresh(third.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(third.token, myId()), 'UNAUTHENTICATED');
      });

      it('logs out: the next request with that access token and its refresh token are UNAUTHENTICATED, other sessions live on', async () => {
        const ending = await login();
        const staying = await login();
        value(await api.getTrainer(ending.token, myId()));
        expect(value(await api.logout(ending.token))).toBe(true);
        expectFailure(api, await api.getTrainer(ending.token, myId()), 'UNAUTHENTICATED');
        expectFailure(api, await api.listTrainers(ending.token, {}), 'UNAUTHENTICATED');
        expectFailure(api, await api.createCreature(ending.token, myId(), { name: unique('c'), speciesId: 1 }), 'UNAUTHENTICATED');
        expectFailure(api, await api.logout(ending.token), 'UNAUTHENTICATED');
        expectFailure(api, await api.refresh(ending.refreshToken), 'UNAUTHENTICATED');
        value(await api.getTrainer(staying.token, myId()));
        value(await api.refresh(staying.refreshToken));
      });

      it('logs out everywhere: every session of the trainer ends, another trainer’s do not', async () => {
        const who = await createTrainer(t.app);
        const sessions = [await login(who), await login(who)];
        expect(value(await api.logout(sessions[0].token, true))).toBe(true);
        for (const session of [...sessions, { token: who.token, refreshToken: '' }]) {
          expectFailure(api, await api.getTrainer(session.token, String(who.trainer.id)), 'UNAUTHENTICATED');
        }
        for (const session of sessions) expectFailure(api, await api.refresh(session.refreshToken), 'UNAUTHENTICATED');
        expect(await sessionRows('trainer_id = ?', [who.trainer.id])).toBe(0);
        value(await api.getTrainer(me.token, myId()));
      });

      it('refuses an expired refresh token, and the access tokens of its session', async () => {
        const session = await login();
        await t.app.dataSource.query('UPDATE trainer_session SET expires_at = created_at WHERE id = ?', [sessionOf(session.token)]);
        expectFailure(api, await api.refresh(session.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(session.token, myId()), 'UNAUTHENTICATED');
      });

      it('refuses correctly signed access tokens whose session is unknown, ended, another trainer’s, or missing', async () => {
        const ended = await login();
        value(await api.logout(ended.token));
        const theirs = await signIn(t.app, other.trainer.id);
        const claims = { sub: myId(), iss: 'creature-registry', aud: 'creature-registry', exp: Math.floor(Date.now() / 1000) + 600 };
        const forged = [
          jwt.sign({ ...claims, sid: '999999999' }, TEST_JWT_SECRET),
          jwt.sign({ ...claims, sid: String(sessionOf(ended.token)) }, TEST_JWT_SECRET),
          jwt.sign({ ...claims, sid: String(theirs.sessionId) }, TEST_JWT_SECRET),
          jwt.sign(claims, TEST_JWT_SECRET),
          tokenFor(me.trainer.id, 999999998),
        ];
        for (const token of forged) {
          expectFailure(api, await api.getTrainer(token, myId()), 'UNAUTHENTICATED');
          expectFailure(api, await api.getTrainer(token, String(other.trainer.id)), 'UNAUTHENTICATED');
          expectFailure(api, await api.listTrainers(token, {}), 'UNAUTHENTICATED');
          expectFailure(api, await api.logout(token, true), 'UNAUTHENTICATED');
        }
        // Nothing was ended by them.
        value(await api.getTrainer(theirs.token, myId()));
        value(await api.getTrainer(me.token, myId()));
      });

      it.each([
        ['an unknown token', `${'A'.repeat(22)}.${'B'.repeat(43)}`],
        ['a token of another shape', 'A'.repeat(43)],
        ['an access token', 'the access token'],
        ['an empty string', ''],
        ['a very long string', 'x'.repeat(50_000)],
      ])('answers UNAUTHENTICATED to a refresh with %s', async (_what, token) => {
        const refreshToken = token === 'the access token' ? me.token : token;
        expectFailure(api, await api.refresh(refreshToken), 'UNAUTHENTICATED');
      });

      it('answers BAD_USER_INPUT to a refresh token that is not a string, and UNAUTHENTICATED to a logout without a token', async () => {
        expectFailure(api, await api.refresh(12345), 'BAD_USER_INPUT');
        expectFailure(api, await api.refresh(null), 'BAD_USER_INPUT');
        expectFailure(api, await api.logout(undefined), 'UNAUTHENTICATED');
      });

      it(`keeps at most ${MAX_SESSIONS_PER_TRAINER} sessions per trainer: signing in once more ends the oldest`, async () => {
        const who = await createTrainer(t.app);
        for (let i = 1; i < MAX_SESSIONS_PER_TRAINER; i += 1) await signIn(t.app, who.trainer.id);
        value(await api.getTrainer(who.token, String(who.trainer.id)));
        const newest = await login(who);
        expect(await sessionRows('trainer_id = ?', [who.trainer.id])).toBe(MAX_SESSIONS_PER_TRAINER);
        expectFailure(api, await api.getTrainer(who.token, String(who.trainer.id)), 'UNAUTHENTICATED');
        value(await api.getTrainer(newest.token, String(who.trainer.id)));
      });
    });

    describe('updating creatures', () => {
      const mine = async (overrides: { name?: string; level?: number } = {}) => createCreature(t.app, me.trainer.id, overrides);
      const update = (id: number, change: unknown, token = me.token) => api.updateCreature(token, myId(), String(id), change);

      it('renames and re-levels, leaves other fields alone, and answers with the creature as it now is', async () => {
        const made = await mine({ level: 5 });
        const renamed = value(await update(made.id, { name: '  Sparky  ' }));
        expect(renamed).toMatchObject({ id: made.id, name: 'Sparky', level: 5, speciesId: made.speciesId, trainerId: me.trainer.id });
        const levelled = value(await update(made.id, { level: 42 }));
        expect(levelled).toMatchObject({ name: 'Sparky', level: 42 });
        const both = value(await update(made.id, { name: 'Volt', level: 100 }));
        expect(both).toMatchObject({ name: 'Volt', level: 100 });
        expect(await creatures().findOneByOrFail({ id: made.id })).toMatchObject({ name: 'Volt', nameKey: 'volt', level: 100 });
        expect(value(await api.getCreature(me.token, myId(), String(made.id)))).toMatchObject({ name: 'Volt', level: 100 });
      });

      it('frees the old name and takes the new one: creating with them then succeeds and fails', async () => {
        const made = await mine();
        const newName = unique('nn_');
        value(await update(made.id, { name: newName }));
        value(await api.createCreature(me.token, myId(), { name: made.name, speciesId: 1 }));
        expectFailure(api, await api.createCreature(me.token, myId(), { name: newName.toUpperCase(), speciesId: 1 }), 'DUPLICATE_CREATURE');
      });

      it('refuses a name another of the trainer’s creatures has, in any case, as DUPLICATE_CREATURE, and changes nothing', async () => {
        const first = await mine();
        const second = await mine();
        expectFailure(api, await update(second.id, { name: first.name.toUpperCase(), level: 9 }), 'DUPLICATE_CREATURE', 'name');
        expect(await creatures().findOneByOrFail({ id: second.id })).toMatchObject({ name: second.name, level: second.level });
      });

      it('allows renaming a creature to its own name in another case', async () => {
        const made = await mine({ name: unique('case_') });
        expect(value(await update(made.id, { name: made.name.toUpperCase() })).name).toBe(made.name.toUpperCase());
      });

      it('allows another trainer’s creature name', async () => {
        const theirs = await createCreature(t.app, other.trainer.id);
        const made = await mine();
        expect(value(await update(made.id, { name: theirs.name })).name).toBe(theirs.name);
      });

      it.each([0, 101, -1, 1.5, '5', null])('refuses the level %j as BAD_USER_INPUT and changes nothing', async (level) => {
        const made = await mine({ level: 7 });
        expectFailure(api, await update(made.id, { level }), 'BAD_USER_INPUT', 'level');
        expect((await creatures().findOneByOrFail({ id: made.id })).level).toBe(7);
      });

      it.each([
        ['an empty patch', {}],
        ['a null name', { name: null }],
        ['a blank name', { name: '   ' }],
        ['a name of 33 characters', { name: 'x'.repeat(33) }],
        ['a field that cannot change', { speciesId: 3 }],
      ])('refuses %s as BAD_USER_INPUT', async (_what, change) => {
        const made = await mine();
        expectFailure(api, await update(made.id, change), 'BAD_USER_INPUT');
        expect(await creatures().findOneByOrFail({ id: made.id })).toMatchObject({ name: made.name, speciesId: made.speciesId });
      });

      it('forbids changing another trainer’s creature, and keeps it as it was', async () => {
        const theirs = await createCreature(t.app, other.trainer.id);
        expectFailure(
          api,
          await api.updateCreature(me.token, String(other.trainer.id), String(theirs.id), { name: 'Mine now' }),
          'FORBIDDEN',
        );
        expect((await creatures().findOneByOrFail({ id: theirs.id })).name).toBe(theirs.name);
      });

      it('answers NOT_FOUND for a creature that does not exist, or no longer does', async () => {
        const made = await mine();
        value(await api.deleteCreature(me.token, myId(), String(made.id)));
        expectFailure(api, await update(made.id, { level: 3 }), 'NOT_FOUND');
        expectFailure(api, await update(2147483647, { level: 3 }), 'NOT_FOUND');
      });

      it('gives one success and one DUPLICATE_CREATURE to two concurrent renames to the same name', async () => {
        const [a, b] = [await mine(), await mine()];
        const name = unique('race_');
        const results = await Promise.all([update(a.id, { name }), update(b.id, { name: name.toUpperCase() })]);
        expect(results.filter((r) => r.ok)).toHaveLength(1);
        expectFailure(
          api,
          results.find((r) => !r.ok)!,
          'DUPLICATE_CREATURE',
        );
      });

      it('answers UNAUTHENTICATED without a valid token, and after logout', async () => {
        const made = await mine();
        expectFailure(api, await update(made.id, { level: 3 }, 'not-a-token'), 'UNAUTHENTICATED');
        const session = await signIn(t.app, me.trainer.id);
        value(await api.logout(session.token));
        expectFailure(api, await update(made.id, { level: 3 }, session.token), 'UNAUTHENTICATED');
        expect((await creatures().findOneByOrFail({ id: made.id })).level).toBe(made.level);
      });

      it.each(MALFORMED_IDS)('answers BAD_USER_INPUT for the malformed creature id %j', async (id) => {
        expectFailure(api, await api.updateCreature(me.token, myId(), id, { level: 2 }), 'BAD_USER_INPUT');
      });
    });

    describe('changing the own account', () => {
      const NEW_PASSWORD = 'a-new-password-42';
      /** What another trainer's reads show about lists: totals by filter. */
      const totals = async (filter: { nickname?: string; nicknameContains?: string; team?: string } = {}) =>
        value(await api.listTrainers(other.token, { limit: 100, filter })).totalCount;
      const byNickname = async (nickname: string) => {
        const res = await gql<{ trainerByNickname: { id: string } | null }>(
          t.app,
          'query($n: String!) { trainerByNickname(nickname: $n) { id } }',
          { n: nickname },
          other.token,
        );
        return res.data?.trainerByNickname?.id ?? null;
      };
      const suffixRows = async (id: number) => {
        const [row] = await t.app.dataSource.query<{ n: number | string }[]>(
          'SELECT COUNT(*) AS n FROM trainer_nickname_suffix WHERE trainer_id = ?',
          [id],
        );
        return Number(row.n);
      };

      it('changes nickname, names and team, answers the trainer as it now is with its email, and every read shows it at once', async () => {
        const mine = await createTrainer(t.app);
        const id = String(mine.trainer.id);
        const oldNickname = mine.trainer.nickname;
        const nickname = unique('Re_');
        const before = { all: await totals(), valor: await totals({ team: 'VALOR' }), mystic: await totals({ team: 'MYSTIC' }) };

        const changed = value(
          await api.updateMe(mine.token, id, { nickname, firstName: '  Misty ', lastName: 'Waterflower', team: 'VALOR' }),
        );
        expect(changed).toMatchObject({
          id: mine.trainer.id,
          nickname,
          firstName: 'Misty',
          lastName: 'Waterflower',
          team: 'VALOR',
          email: mine.email,
          creaturesOwned: 0,
        });

        expect(value(await api.getTrainer(other.token, id))).toMatchObject({ nickname, firstName: 'Misty', team: 'VALOR', email: null });
        expect(await byNickname(nickname.toUpperCase())).toBe(id);
        expect(await byNickname(oldNickname)).toBeNull();
        expect(value(await api.listTrainers(other.token, { filter: { nickname } })).items.map((i) => i.id)).toEqual([mine.trainer.id]);
        expect(await totals({ nickname: oldNickname })).toBe(0);
        expect(await totals({ nicknameContains: nickname.slice(3) })).toBe(1);
        expect(await totals({ nicknameContains: oldNickname.slice(3) })).toBe(0);
        expect(await totals()).toBe(before.all);
        expect(await totals({ team: 'VALOR' })).toBe(before.valor + 1);
        expect(await totals({ team: 'MYSTIC' })).toBe(before.mystic - 1);
        expect(await suffixRows(mine.trainer.id)).toBe(nickname.length - 1);
        expect(await trainers().findOneByOrFail({ id: mine.trainer.id })).toMatchObject({ nickname, nicknameKey: nickname.toLowerCase() });
      });

      it('frees the old nickname at once, allows a change of case of its own, and refuses another trainer’s in any case', async () => {
        const mine = await createTrainer(t.app);
        const id = String(mine.trainer.id);
        const oldNickname = mine.trainer.nickname;
        const taken = (await createTrainer(t.app)).trainer.nickname;
        expectFailure(
          api,
          await api.updateMe(mine.token, id, { nickname: taken.toUpperCase(), team: 'VALOR' }),
          'TRAINER_ALREADY_EXISTS',
          'nickname',
        );
        expect(await trainers().findOneByOrFail({ id: mine.trainer.id })).toMatchObject({ nickname: oldNickname, team: 'MYSTIC' });

        expect(value(await api.updateMe(mine.token, id, { nickname: oldNickname.toUpperCase() })).nickname).toBe(oldNickname.toUpperCase());
        value(await api.updateMe(mine.token, id, { nickname: unique('Mv_') }));
        const next = await createTrainer(t.app);
        expect(value(await api.updateMe(next.token, String(next.trainer.id), { nickname: oldNickname })).nickname).toBe(oldNickname);
        expect(await byNickname(oldNickname)).toBe(String(next.trainer.id));
      });

      it.each([
        ['email', { email: 'new@example.test' }],
        ['password', { password: 'a-long-new-password' }],
        ['no field', {}],
        ['a null nickname', { nickname: null }],
        ['a short nickname', { nickname: 'x' }],
        ['a blank firstName', { firstName: '   ' }],
        ['a firstName with a hidden character', { firstName: 'Mi\u200Bsty' }],
        ['an unknown team', { team: 'ROCKET' }],
        ['an unknown field beside a good one', { nickname: 'fine_name', role: 'admin' }],
      ])('refuses %s as BAD_USER_INPUT and changes nothing', async (_what, change) => {
        const mine = await createTrainer(t.app);
        const row = await trainers().findOneByOrFail({ id: mine.trainer.id });
        expectFailure(api, await api.updateMe(mine.token, String(mine.trainer.id), change), 'BAD_USER_INPUT');
        expect(await trainers().findOneByOrFail({ id: mine.trainer.id })).toEqual(row);
      });

      it('answers UNAUTHENTICATED without a valid token, and after logout', async () => {
        const mine = await createTrainer(t.app);
        const id = String(mine.trainer.id);
        expectFailure(api, await api.updateMe('not-a-token', id, { team: 'VALOR' }), 'UNAUTHENTICATED');
        const session = await signIn(t.app, mine.trainer.id);
        value(await api.logout(session.token));
        expectFailure(api, await api.updateMe(session.token, id, { team: 'VALOR' }), 'UNAUTHENTICATED');
        expectFailure(api, await api.changePassword(session.token, id, TEST_PASSWORD, NEW_PASSWORD), 'UNAUTHENTICATED');
        expectFailure(api, await api.deleteMe(session.token, id, TEST_PASSWORD), 'UNAUTHENTICATED');
        expect(await trainers().countBy({ id: mine.trainer.id, team: Team.MYSTIC })).toBe(1);
      });

      it('changes the password: every other session ends at once, the caller’s goes on, and the new password logs in', async () => {
        const mine = await createTrainer(t.app);
        const id = String(mine.trainer.id);
        const caller = await signIn(t.app, mine.trainer.id);
        const elsewhere = await signIn(t.app, mine.trainer.id);
        expect(value(await api.changePassword(caller.token, id, TEST_PASSWORD, NEW_PASSWORD))).toBe(true);

        expectFailure(api, await api.getTrainer(elsewhere.token, id), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(mine.token, id), 'UNAUTHENTICATED');
        expectFailure(api, await api.refresh(elsewhere.refreshToken), 'UNAUTHENTICATED');
        expect(value(await api.getTrainer(caller.token, id)).email).toBe(mine.email);
        expect(await t.app.dataSource.query('SELECT id FROM trainer_session WHERE trainer_id = ?', [mine.trainer.id])).toEqual([
          { id: caller.sessionId },
        ]);
        value(await api.refresh(caller.refreshToken));
        expectFailure(api, await api.authenticate(mine.email, TEST_PASSWORD), 'UNAUTHENTICATED');
        expect(value(await api.authenticate(mine.email, NEW_PASSWORD)).trainer.id).toBe(mine.trainer.id);
      });

      it('refuses a wrong current password as BAD_USER_INPUT naming it, counted as a failed login of the account', async () => {
        const mine = await createTrainer(t.app);
        const id = String(mine.trainer.id);
        const hash = () => t.app.dataSource.query('SELECT password_hash AS h FROM trainer WHERE id = ?', [mine.trainer.id]);
        const stored = await hash();
        // LOGIN_MAX_FAILURES (5) for this account from this address, then RATE_LIMITED, before any hash.
        for (let i = 0; i < 5; i += 1) {
          expectFailure(
            api,
            await api.changePassword(mine.token, id, `wrong-guess-${i}`, NEW_PASSWORD),
            'BAD_USER_INPUT',
            'currentPassword',
          );
        }
        expectFailure(api, await api.changePassword(mine.token, id, TEST_PASSWORD, NEW_PASSWORD), 'RATE_LIMITED');
        expectFailure(api, await api.deleteMe(mine.token, id, TEST_PASSWORD), 'RATE_LIMITED');
        expectFailure(api, await api.authenticate(mine.email, TEST_PASSWORD), 'RATE_LIMITED');
        expect(await hash()).toEqual(stored);
        expect(await trainers().countBy({ id: mine.trainer.id })).toBe(1);
      });

      it('refuses a new password outside the rules as BAD_USER_INPUT naming it, and changes nothing', async () => {
        const mine = await createTrainer(t.app);
        const id = String(mine.trainer.id);
        expectFailure(api, await api.changePassword(mine.token, id, TEST_PASSWORD, 'short'), 'BAD_USER_INPUT', 'newPassword');
        expectFailure(api, await api.changePassword(mine.token, id, TEST_PASSWORD, 'bad\u0000password'), 'BAD_USER_INPUT', 'newPassword');
        expect(value(await api.authenticate(mine.email, TEST_PASSWORD)).trainer.id).toBe(mine.trainer.id);
      });

      it('refuses deletion with a wrong password as BAD_USER_INPUT naming it, and removes nothing', async () => {
        const mine = await createTrainer(t.app);
        const creature = await createCreature(t.app, mine.trainer.id);
        expectFailure(api, await api.deleteMe(mine.token, String(mine.trainer.id), 'not-my-password'), 'BAD_USER_INPUT', 'password');
        expect(value(await api.getTrainer(mine.token, String(mine.trainer.id))).creaturesOwned).toBe(1);
        expect(await creatures().countBy({ id: creature.id })).toBe(1);
      });

      it('deletes the trainer with its creatures and sessions: nothing of it answers anywhere, and its nickname and email are free again', async () => {
        const mine = await createTrainer(t.app);
        const id = String(mine.trainer.id);
        const made = [await createCreature(t.app, mine.trainer.id), await createCreature(t.app, mine.trainer.id)];
        const elsewhere = await signIn(t.app, mine.trainer.id);
        const before = { all: await totals(), mystic: await totals({ team: 'MYSTIC' }) };

        expect(value(await api.deleteMe(mine.token, id, TEST_PASSWORD))).toBe(true);

        expectFailure(api, await api.getTrainer(other.token, id), 'NOT_FOUND');
        expect(await byNickname(mine.trainer.nickname)).toBeNull();
        expect(await totals({ nickname: mine.trainer.nickname })).toBe(0);
        expect(await totals({ nicknameContains: mine.trainer.nickname.slice(3) })).toBe(0);
        expect(await totals()).toBe(before.all - 1);
        expect(await totals({ team: 'MYSTIC' })).toBe(before.mystic - 1);
        for (const creature of made) expectFailure(api, await api.getCreature(other.token, id, String(creature.id)), 'NOT_FOUND');
        expectFailure(api, await api.listCreatures(other.token, id, {}), 'NOT_FOUND');
        expectFailure(api, await api.getTrainer(mine.token, String(other.trainer.id)), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(elsewhere.token, String(other.trainer.id)), 'UNAUTHENTICATED');
        expectFailure(api, await api.refresh(elsewhere.refreshToken), 'UNAUTHENTICATED');
        expectFailure(api, await api.authenticate(mine.email, TEST_PASSWORD), 'UNAUTHENTICATED');
        expect(await trainers().countBy({ id: mine.trainer.id })).toBe(0);
        expect(await creatures().countBy({ trainerId: mine.trainer.id })).toBe(0);
        expect(await t.app.dataSource.query('SELECT id FROM trainer_session WHERE trainer_id = ?', [mine.trainer.id])).toEqual([]);
        expect(await suffixRows(mine.trainer.id)).toBe(0);

        const again = value(await api.register(registration({ nickname: mine.trainer.nickname, email: mine.email })));
        expect(await byNickname(mine.trainer.nickname)).toBe(String(again.id));
        expect(await totals()).toBe(before.all);
      });
    });

    describe('without a valid token', () => {
      it('answers UNAUTHENTICATED everywhere but register and authenticate', async () => {
        const { trainer, token } = await createTrainer(t.app);
        const creature = await createCreature(t.app, trainer.id);
        await deleteTrainer(t.app, (await createTrainer(t.app)).trainer);
        const id = String(trainer.id);
        for (const bad of [undefined, 'not-a-token', `${token}x`]) {
          expectFailure(api, await api.getTrainer(bad, id), 'UNAUTHENTICATED');
          expectFailure(api, await api.listTrainers(bad, {}), 'UNAUTHENTICATED');
          expectFailure(api, await api.createCreature(bad, id, { name: 'x', speciesId: 1 }), 'UNAUTHENTICATED');
          expectFailure(api, await api.getCreature(bad, id, String(creature.id)), 'UNAUTHENTICATED');
          expectFailure(api, await api.listCreatures(bad, id, {}), 'UNAUTHENTICATED');
          expectFailure(api, await api.deleteCreature(bad, id, String(creature.id)), 'UNAUTHENTICATED');
        }
        expect(await creatures().countBy({ id: creature.id })).toBe(1);
      });

      it('answers UNAUTHENTICATED to the token of a trainer that was deleted', async () => {
        const gone = await createTrainer(t.app);
        const other = await createTrainer(t.app);
        await deleteTrainer(t.app, gone.trainer);
        expectFailure(api, await api.listTrainers(gone.token, {}), 'UNAUTHENTICATED');
        // Single-trainer reads check the caller in the same statement as the lookup.
        expectFailure(api, await api.getTrainer(gone.token, String(other.trainer.id)), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(gone.token, String(gone.trainer.id)), 'UNAUTHENTICATED');
        expectFailure(api, await api.getTrainer(gone.token, '2147483647'), 'UNAUTHENTICATED');
      });
    });
  });
});

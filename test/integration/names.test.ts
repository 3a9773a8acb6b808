import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDatabaseConfig } from '../../src/config';
import { nameKey } from '../../src/common/text';
import { Creature } from '../../src/creatures/creature.entity';
import { createDataSource } from '../../src/db/data-source';
import { runMigrations } from '../../src/db/migrate';
import { migrations } from '../../src/db/migrations/index';
import { frozenNameKey, NameKeysWithoutSelectors1796100000000 } from '../../src/db/migrations/1796100000000-NameKeysWithoutSelectors';
import { ERROR_STATUS, type ErrorCode } from '../../src/errors';
import { Trainer } from '../../src/trainers/trainer.entity';
import { createTestDatabase, databases, startTestApp, type TestApp } from '../helpers/app';
import { value, namedDrivers, type Driver, type Outcome } from '../helpers/drivers';
import { createTrainer, unique, type TrainerFixture } from '../helpers/factories';
import { gql } from '../helpers/graphql';

/*
 * Names that look the same are one name: variation selectors, tag characters and a combining
 * mark first are refused in every name, and the creature name key leaves the first two out
 * (the NameKeysWithoutSelectors migration re-keys stored rows). A nickname outside the nickname
 * rules finds nobody, by trainerByNickname and by the nickname filter alike. The name lengths
 * openapi.json states (its patterns) are the ones the server applies.
 */

function expectFailure<T>(driver: Driver, result: Outcome<T>, code: string, field: string): void {
  expect(result).toMatchObject({ ok: false, code });
  if (result.ok) return;
  if (driver.name === 'rest') expect(result.status).toBe(ERROR_STATUS[code as ErrorCode]);
  expect(result.fields?.map((f) => f.field)).toContain(field);
}

/** Names that looked like another (or like nothing) and were accepted, named for the test titles. */
const LOOKALIKES = [
  ['a variation selector', 'Mew\uFE00'],
  ['a supplementary variation selector', 'Mew\u{E0100}'],
  ['29 supplementary variation selectors', `Mew${'\u{E0101}'.repeat(29)}`],
  ['a space and an emoji variation selector', 'Ab \uFE0F'],
  ['an emoji with its variation selector', '\u2764\uFE0F'],
  ['a tag character', 'Mew\u{E0041}'],
  ['only a combining mark', '\u0301'],
  ['a combining mark first, after spaces', '  \u0301Mew'],
] as const;

const ROOT = join(__dirname, '..', '..');
type Schema = { pattern?: string; maxLength?: number };
const openapi = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: { properties: Record<string, Schema> } }> } }>>;
};
/** Whether openapi.json's rule for a request body field takes `text` (JSON Schema patterns are ECMA-262, unicode mode). */
function documentTakes(path: string, method: string, field: string, text: string): boolean {
  const { pattern, maxLength } = openapi.paths[path][method].requestBody.content['application/json'].schema.properties[field];
  return (pattern === undefined || new RegExp(pattern, 'u').test(text)) && (maxLength === undefined || [...text].length <= maxLength);
}

describe.each(databases)('names and nicknames on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_IP_PER_MINUTE: '100000' });
  });
  afterAll(async () => t.close());

  describe.each(namedDrivers)('through %s', (driverName, makeDriver) => {
    let api: Driver;
    let me: TrainerFixture;
    const registration = (overrides: Record<string, unknown> = {}) => {
      const nickname = unique('Nm_');
      return {
        nickname,
        firstName: 'Gary',
        lastName: 'Oak',
        email: `${nickname}@example.test`,
        password: 'eevee-forever',
        team: 'MYSTIC',
        ...overrides,
      };
    };
    beforeAll(async () => {
      api = makeDriver(t.app);
      me = await createTrainer(t.app);
      for (const name of ['Mew', 'Ab', '\u2764'])
        value(await api.createCreature(me.token, String(me.trainer.id), { name, speciesId: 151 }));
    });
    const creatures = () => t.app.dataSource.getRepository(Creature);

    it.each(LOOKALIKES)('refuses a creature name with %s as BAD_USER_INPUT naming the field, and writes nothing', async (_what, name) => {
      expectFailure(api, await api.createCreature(me.token, String(me.trainer.id), { name, speciesId: 151 }), 'BAD_USER_INPUT', 'name');
      const [mew] = await creatures().findBy({ trainerId: me.trainer.id, name: 'Mew' });
      expectFailure(api, await api.updateCreature(me.token, String(me.trainer.id), String(mew.id), { name }), 'BAD_USER_INPUT', 'name');
      expect((await creatures().findBy({ trainerId: me.trainer.id })).map((c) => c.name).sort()).toEqual(['Ab', 'Mew', '\u2764']);
    });

    it.each(LOOKALIKES)(
      'refuses first and last names with %s as BAD_USER_INPUT naming the field, and writes nothing',
      async (_what, name) => {
        for (const field of ['firstName', 'lastName']) {
          const input = registration({ [field]: name });
          expectFailure(api, await api.register(input), 'BAD_USER_INPUT', field);
          expect(await t.app.dataSource.getRepository(Trainer).countBy({ nickname: input.nickname })).toBe(0);
        }
      },
    );

    it('still takes a combining mark after a letter, and a name ending in one', async () => {
      const created = value(
        await api.createCreature(me.token, String(me.trainer.id), { name: `Ze\u0301${unique('')}e\u0301`, speciesId: 1 }),
      );
      expect(created.name.startsWith('Z\u00E9')).toBe(true);
    });

    describe('name lengths, as openapi.json states them', () => {
      const around = (length: number) => ` \u3000${'a'.repeat(length)}  `;

      it.each(['firstName', 'lastName'])(
        'takes a %s of 64 characters between spaces and refuses 65, as the document says',
        async (field) => {
          expect([documentTakes('/trainer', 'post', field, around(64)), documentTakes('/trainer', 'post', field, around(65))]).toEqual([
            true,
            false,
          ]);
          const taken = value(await api.register(registration({ [field]: around(64) })));
          expect(taken[field as 'firstName' | 'lastName']).toBe('a'.repeat(64));
          expectFailure(api, await api.register(registration({ [field]: around(65) })), 'BAD_USER_INPUT', field);
        },
      );

      it('takes a creature name of 32 characters between spaces and refuses 33, on create and update, as the document says', async () => {
        const path = '/trainer/{trainerId}/creature';
        expect([documentTakes(path, 'post', 'name', around(32)), documentTakes(path, 'post', 'name', around(33))]).toEqual([true, false]);
        expect([
          documentTakes(`${path}/{creatureId}`, 'patch', 'name', around(32)),
          documentTakes(`${path}/{creatureId}`, 'patch', 'name', around(33)),
        ]).toEqual([true, false]);
        const name = (length: number) => ` ${unique('L').padEnd(length, 'x')}\u3000`;
        const created = value(await api.createCreature(me.token, String(me.trainer.id), { name: name(32), speciesId: 1 }));
        expect([...created.name]).toHaveLength(32);
        expectFailure(
          api,
          await api.createCreature(me.token, String(me.trainer.id), { name: name(33), speciesId: 1 }),
          'BAD_USER_INPUT',
          'name',
        );
        const renamed = value(await api.updateCreature(me.token, String(me.trainer.id), String(created.id), { name: name(32) }));
        expect([...renamed.name]).toHaveLength(32);
        expectFailure(
          api,
          await api.updateCreature(me.token, String(me.trainer.id), String(created.id), { name: name(33) }),
          'BAD_USER_INPUT',
          'name',
        );
      });
    });

    describe('nickname lookups', () => {
      let mbob: TrainerFixture;
      let short: TrainerFixture;
      let odd: TrainerFixture;
      beforeAll(async () => {
        mbob = await createTrainer(t.app, { nickname: unique('kbob') });
        // Rows no registration could make (plain SQL, older rules): a lookup outside the rules finds none of them either.
        short = await createTrainer(t.app, { nickname: `${driverName[0]}1`, nicknameKey: `${driverName[0]}1` });
        const bang = `${unique('o')}!`;
        odd = await createTrainer(t.app, { nickname: bang, nicknameKey: bang });
      });

      /** What trainerByNickname (GraphQL) and the nickname filter (this transport) find for `nickname`: ids. */
      async function found(nickname: string): Promise<{ byNickname?: number | null; filtered: number[]; totalCount: number }> {
        const page = value(await api.listTrainers(me.token, { filter: { nickname } }));
        const result = { filtered: page.items.map((item) => item.id), totalCount: page.totalCount };
        if (api.name === 'rest') return result;
        const res = await gql<{ trainerByNickname: { id: string } | null }>(
          t.app,
          'query($n: String!) { trainerByNickname(nickname: $n) { id } }',
          { n: nickname },
          me.token,
        );
        expect(res.errors).toBeUndefined();
        const byId = res.data!.trainerByNickname;
        return { ...result, byNickname: byId === null ? null : Number(byId.id) };
      }
      const nobody = () => (api.name === 'rest' ? { filtered: [], totalCount: 0 } : { byNickname: null, filtered: [], totalCount: 0 });

      it('finds a nickname that follows the rules, in any case', async () => {
        const id = mbob.trainer.id;
        expect(await found(mbob.trainer.nickname.toUpperCase())).toEqual(
          api.name === 'rest' ? { filtered: [id], totalCount: 1 } : { byNickname: id, filtered: [id], totalCount: 1 },
        );
      });

      it.each([
        ['trailing spaces', (n: string) => `${n}   `],
        ['a trailing tab', (n: string) => `${n}\t`],
        ['leading spaces', (n: string) => `   ${n}`],
        ['too many characters', (n: string) => `${n}${'x'.repeat(33 - n.length)}`],
        ['the Kelvin sign for its k', (n: string) => `\u212A${n.slice(1)}`],
      ])('finds nobody for a nickname with %s, by either query', async (_what, make) => {
        expect(await found(make(mbob.trainer.nickname))).toEqual(nobody());
      });

      it('finds nobody for a nickname too short or of other characters, even when such a row is stored', async () => {
        expect(await found(short.trainer.nickname)).toEqual(nobody());
        expect(await found(odd.trainer.nickname)).toEqual(nobody());
      });

      it('takes an empty nickname as no condition of the list (a cleared search box), and trainerByNickname finds nobody by it', async () => {
        const empty = await found('');
        expect(empty.totalCount).toBeGreaterThanOrEqual(3);
        expect(empty.filtered).toEqual(expect.arrayContaining([mbob.trainer.id, short.trainer.id, odd.trainer.id]));
        if (api.name !== 'rest') expect(empty).toMatchObject({ byNickname: null });
      });
    });
  });
});

describe('the frozen name key of the NameKeysWithoutSelectors migration', () => {
  it('is the service’s name key', () => {
    const names = [
      'Mew',
      'Mew\uFE00',
      'Mew\u{E0100}',
      'Ab \uFE0F',
      'Straẞe',
      'Ｍｅｗ',
      'Οδυσσευς',
      'Kızıl',
      'İstanbul',
      '\uFDFA',
      'e\uFE00\u0301',
      'ǅ',
    ];
    expect(names.map(frozenNameKey)).toEqual(names.map(nameKey));
  });
});

describe.each(databases)('the name-key migration without variation selectors on %s', (kind) => {
  it('re-keys stored names without variation selectors and tags, keeps both creatures where two became one name, and says so', async () => {
    const database = await createTestDatabase(kind);
    const warnings: string[] = [];
    const open = (upTo: number) =>
      createDataSource(loadDatabaseConfig({ DATABASE_URL: database.url }), { warn: (_, message) => warnings.push(message) }).setOptions({
        migrations: migrations.slice(0, upTo),
      });
    // Keys as the code before this migration made them (selectors and tags kept).
    const old: [string, string][] = [
      ['Mew', 'mew'],
      ['Mew\uFE00', 'mew\uFE00'],
      ['Mew\u{E0100}', 'mew\u{E0100}'],
      [`Mew${'\u{E0101}'.repeat(29)}`, `mew${'\u{E0101}'.repeat(29)}`],
      ['Ab', 'ab'],
      ['Ab \uFE0F', 'ab \uFE0F'],
      ['Pi\u{E0041}ka', 'pi\u{E0041}ka'],
      ['Solo\uFE0F', 'solo\uFE0F'],
    ];
    const before = open(migrations.indexOf(NameKeysWithoutSelectors1796100000000));
    let trainerId: number;
    try {
      await before.initialize();
      await runMigrations(before);
      await before.query(
        "INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES ('sel', 'sel', 'A', 'B', 'sel@example.com', 'x', 'VALOR', '2026-01-01 00:00:00.000')",
      );
      [{ id: trainerId }] = await before.query<{ id: number }[]>("SELECT id FROM trainer WHERE nickname = 'sel'");
      for (const [name, key] of old) {
        await before.query('INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) VALUES (?, ?, 1, 1, ?, ?)', [
          name,
          key,
          trainerId,
          '2026-01-01 00:00:00.000',
        ]);
      }
      expect(warnings).toEqual([]);
    } finally {
      await before.destroy();
    }
    const after = open(migrations.length);
    try {
      await after.initialize();
      await runMigrations(after);
      const rows = await after.query<{ id: number; name: string; name_key: string }[]>(
        'SELECT id, name, name_key FROM creature ORDER BY id',
      );
      expect(rows.map((row) => row.name)).toEqual(old.map(([name]) => name));
      const row = (name: string) => rows.find((r) => r.name === name)!;
      const own = (key: string, name: string) => `${key}\u0000${row(name).id}`;
      expect(rows.map((r) => [r.name, r.name_key])).toEqual([
        ['Mew', 'mew'],
        ['Mew\uFE00', own('mew', 'Mew\uFE00')],
        ['Mew\u{E0100}', own('mew', 'Mew\u{E0100}')],
        [`Mew${'\u{E0101}'.repeat(29)}`, own('mew', `Mew${'\u{E0101}'.repeat(29)}`)],
        ['Ab', 'ab'],
        ['Ab \uFE0F', own('ab', 'Ab \uFE0F')],
        ['Pi\u{E0041}ka', 'pika'],
        ['Solo\uFE0F', 'solo'],
      ]);
      const ids = (...names: string[]) => names.map((name) => `${row(name).id} ${JSON.stringify(name)}`).join(', ');
      expect(warnings).toEqual([
        expect.stringContaining(
          `trainer ${trainerId} has creatures that are the same name without variation selectors or tag characters; ${ids('Mew')} keeps it, kept under keys of their own: ${ids('Mew\uFE00', 'Mew\u{E0100}', `Mew${'\u{E0101}'.repeat(29)}`)}`,
        ),
        expect.stringContaining(`${ids('Ab')} keeps it, kept under keys of their own: ${ids('Ab \uFE0F')}`),
        expect.stringContaining('6 name keys recomputed without variation selectors or tag characters'),
      ]);
      const pending = await after.driver.createSchemaBuilder().log();
      expect(pending.upQueries.map((q) => q.query)).toEqual([]);
    } finally {
      await after.destroy();
      await database.drop();
    }
  });
});

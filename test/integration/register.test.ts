import { Trainer } from '../../src/trainers/trainer.entity';
import type { TrainerView } from '../helpers/drivers';
import { databases, startTestApp, type TestApp } from '../helpers/app';
import { unique } from '../helpers/factories';
import { errorCode, document, gql } from '../helpers/graphql';

/** A trainer as GraphQL answers it: the REST view's fields, with the id as a string. */
type GraphQLTrainer = Omit<TrainerView, 'id'> & { id: string };

const REGISTER = document<{ registerTrainer: GraphQLTrainer }>(`mutation Register($input: RegisterTrainerInput!) {
  registerTrainer(input: $input) { id nickname firstName lastName email team creaturesOwned createdAt }
}`);

function newTrainerInput(overrides: Record<string, unknown> = {}) {
  const nickname = unique('Ash_');
  return {
    nickname,
    firstName: 'Ash',
    lastName: 'Ketchum',
    email: `${nickname}@Example.TEST`,
    password: 'pikachu-is-best',
    team: 'VALOR',
    ...overrides,
  };
}

describe.each(databases)('registerTrainer on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => t.close());

  const rowsWithEmail = (email: string) => t.app.dataSource.getRepository(Trainer).countBy({ email: email.toLowerCase() });

  it('creates the trainer, returns it with its own email, and stores only a scrypt hash of the password', async () => {
    const input = newTrainerInput();
    const res = await gql(t.app, REGISTER, { input });
    expect(res.errors).toBeUndefined();
    const trainer = res.data!.registerTrainer;
    expect(trainer).toMatchObject({
      nickname: input.nickname,
      firstName: 'Ash',
      lastName: 'Ketchum',
      email: input.email.toLowerCase(),
      team: 'VALOR',
      creaturesOwned: 0,
    });
    expect(trainer.id).toMatch(/^[1-9]\d*$/);
    expect(new Date(trainer.createdAt).toISOString()).toBe(trainer.createdAt);

    const row = await t.app.dataSource
      .getRepository(Trainer)
      .findOne({ where: { id: Number(trainer.id) }, select: { email: true, passwordHash: true } });
    expect(row?.email).toBe(input.email.toLowerCase());
    expect(row?.passwordHash).toMatch(/^scrypt\$32768\$8\$3\$/);
    expect(row?.passwordHash).not.toContain(input.password);
  });

  it('trims first and last names and keeps unicode and SQL-looking text as typed', async () => {
    const input = newTrainerInput({ firstName: "  Zoë 🐉 Robert'); DROP TABLE trainer;--  ", lastName: ' 山田 ' });
    const res = await gql(t.app, REGISTER, { input });
    expect(res.errors).toBeUndefined();
    expect(res.data!.registerTrainer.firstName).toBe("Zoë 🐉 Robert'); DROP TABLE trainer;--");
    expect(res.data!.registerTrainer.lastName).toBe('山田');
    expect(await t.app.dataSource.getRepository(Trainer).countBy({ nickname: input.nickname })).toBe(1);
  });

  it('rejects an email already registered, in any letter case, as TRAINER_ALREADY_EXISTS', async () => {
    const first = newTrainerInput();
    expect((await gql(t.app, REGISTER, { input: first })).errors).toBeUndefined();
    const again = await gql(t.app, REGISTER, {
      input: newTrainerInput({ email: first.email.toUpperCase() }),
    });
    expect(errorCode(again)).toBe('TRAINER_ALREADY_EXISTS');
    expect(again.errors![0].extensions!.fields).toEqual([{ field: 'email', message: 'is already registered' }]);
    expect(await rowsWithEmail(first.email)).toBe(1);
  });

  it('rejects a nickname already taken, in any letter case, as TRAINER_ALREADY_EXISTS', async () => {
    const first = newTrainerInput();
    expect((await gql(t.app, REGISTER, { input: first })).errors).toBeUndefined();
    const again = await gql(t.app, REGISTER, { input: newTrainerInput({ nickname: first.nickname.toUpperCase() }) });
    expect(errorCode(again)).toBe('TRAINER_ALREADY_EXISTS');
    expect(again.errors![0].extensions!.fields).toEqual([{ field: 'nickname', message: 'is already taken' }]);
  });

  it('reports a taken nickname as the nickname even when it reads like an email', async () => {
    const first = newTrainerInput({ nickname: unique('email_') });
    expect((await gql(t.app, REGISTER, { input: first })).errors).toBeUndefined();
    const again = await gql(t.app, REGISTER, { input: newTrainerInput({ nickname: first.nickname.toUpperCase() }) });
    expect(again.errors![0].extensions!.fields).toEqual([{ field: 'nickname', message: 'is already taken' }]);
  });

  it.each([
    ['more than 254 characters', `${'a'.repeat(60)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.example`],
    ['more than 64 characters before the @', `${'a'.repeat(65)}@example.test`],
    ['international characters', 'zü@example.test'],
    ['a dotless domain', 'ash@localhost'],
    ['spaces around it', ' ash@example.test'],
  ])('refuses an email with %s as BAD_USER_INPUT', async (_what, email) => {
    const res = await gql(t.app, REGISTER, { input: newTrainerInput({ email }) });
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
    expect(res.errors![0].extensions!.fields!.map((f) => f.field)).toEqual(['input.email']);
  });

  it('lets exactly one of several concurrent identical registrations through', async () => {
    const input = newTrainerInput();
    const results = await Promise.all(Array.from({ length: 5 }, () => gql(t.app, REGISTER, { input })));
    const codes = results.map((r) => r.errors?.[0]?.extensions?.code ?? 'OK').sort();
    expect(codes).toEqual(['OK', 'TRAINER_ALREADY_EXISTS', 'TRAINER_ALREADY_EXISTS', 'TRAINER_ALREADY_EXISTS', 'TRAINER_ALREADY_EXISTS']);
    expect(await rowsWithEmail(input.email)).toBe(1);
  });

  it.each([
    ['nickname', { nickname: 'ab' }],
    ['nickname', { nickname: 'a'.repeat(33) }],
    ['nickname', { nickname: 'no spaces' }],
    ['nickname', { nickname: "x' OR '1'='1" }],
    ['nickname', { nickname: 'ñandú' }],
    ['firstName', { firstName: '   ' }],
    ['firstName', { firstName: 'x'.repeat(65) }],
    ['lastName', { lastName: '' }],
    ['lastName', { lastName: 'tab\tinside' }],
    ['email', { email: 'not-an-email' }],
    ['email', { email: `${'a'.repeat(250)}@x.io` }],
    ['password', { password: 'short' }],
    ['password', { password: 'p'.repeat(129) }],
    ['password', { password: 'abcdefg\u0000' }],
    ['lastName', { lastName: 'X\ud800Y' }],
  ])('rejects a bad %s (%j) as BAD_USER_INPUT naming the field, and writes nothing', async (field, override) => {
    const input = newTrainerInput(override);
    const res = await gql(t.app, REGISTER, { input });
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
    expect(res.errors![0].extensions!.fields!.map((f) => f.field)).toEqual([`input.${field}`]);
    expect(await rowsWithEmail(String(input.email))).toBe(0);
  });

  it('rejects a wrong type or unknown team as BAD_USER_INPUT', async () => {
    for (const override of [{ team: 'ROCKET' }, { firstName: 42 }, { password: null }]) {
      const res = await gql(t.app, REGISTER, { input: newTrainerInput(override) });
      expect(res.status).toBe(400);
      expect(errorCode(res)).toBe('BAD_USER_INPUT');
    }
  });

  it('rejects a huge string as BAD_USER_INPUT, not a server error', async () => {
    const res = await gql(t.app, REGISTER, { input: newTrainerInput({ lastName: 'z'.repeat(50_000) }) });
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
  });
});

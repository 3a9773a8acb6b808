import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, unique, type TrainerFixture } from '../helpers/factories';
import { document, errorCode, gql } from '../helpers/graphql';

/*
 * What only GraphQL shows about creatures (the creature query, nested fields, errors in literals,
 * aliased pages) and how names are compared. Creating, listing, deleting, duplicates, ownership
 * and tokens are specified once for both transports in scenarios.test.ts.
 */

const CREATE = document<{ createCreature: { id: string; name: string } }>(`mutation Create($trainerId: ID!, $input: CreateCreatureInput!) {
  createCreature(trainerId: $trainerId, input: $input) { id name speciesId level createdAt trainer { id creaturesOwned } }
}`);
const DELETE = document<{ deleteCreature: unknown }>(
  `mutation Delete($id: ID!) { deleteCreature(id: $id) { id name speciesId level trainer { id } } }`,
);
const CREATURE = document<{ creature: unknown }>(
  `query Creature($id: ID!) { creature(id: $id) { id name level trainer { id nickname email } } }`,
);

describe.each(databases)('creatures on %s', (kind) => {
  let t: TestApp;
  let owner: TrainerFixture;
  let other: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind);
    owner = await createTrainer(t.app);
    other = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  const create = (fixture: TrainerFixture, input: Record<string, unknown>, trainerId = fixture.trainer.id) =>
    gql(t.app, CREATE, { trainerId: String(trainerId), input }, fixture.token);

  it('reads a creature by id with its trainer, and null for an unknown id', async () => {
    const made = await createCreature(t.app, owner.trainer.id, { level: 42 });
    const res = await gql(t.app, CREATURE, { id: String(made.id) }, other.token);
    expect(res.data!.creature).toEqual({
      id: String(made.id),
      name: made.name,
      level: 42,
      trainer: { id: String(owner.trainer.id), nickname: owner.trainer.nickname, email: null },
    });
    const missing = await gql(t.app, CREATURE, { id: '2147483646' }, other.token);
    expect(missing.errors).toBeUndefined();
    expect(missing.data!.creature).toBeNull();
    expect(errorCode(await gql(t.app, CREATURE, { id: 'abc' }, other.token))).toBe('BAD_USER_INPUT');
    const created = await gql<{ creature: { createdAt: string } }>(
      t.app,
      'query($id: ID!) { creature(id: $id) { createdAt } }',
      { id: String(made.id) },
      other.token,
    );
    expect(new Date(created.data!.creature.createdAt).toISOString()).toBe(created.data!.creature.createdAt);
  });

  it('treats unicode names by their letters: É and é clash, e and é do not', async () => {
    const base = unique('Évoli');
    expect((await create(owner, { name: base, speciesId: 133 })).errors).toBeUndefined();
    expect(errorCode(await create(owner, { name: base.toLowerCase(), speciesId: 133 }))).toBe('DUPLICATE_CREATURE');
    expect((await create(owner, { name: base.replace('É', 'E'), speciesId: 133 })).errors).toBeUndefined();
    expect((await create(owner, { name: `🐉${base.slice(0, 20)}`, speciesId: 1 })).errors).toBeUndefined();
  });

  it('counts a name’s length as sent and stores it in NFC, even when NFC makes it longer', async () => {
    // U+0958 becomes two code points in NFC: 32 of them are stored as 64.
    const growing = await create(owner, { name: '\u0958'.repeat(32), speciesId: 1 });
    expect(growing.errors).toBeUndefined();
    expect(growing.data!.createCreature.name).toBe('\u0958'.repeat(32).normalize('NFC'));
    expect([...growing.data!.createCreature.name]).toHaveLength(64);
    // e + combining acute is two characters as sent, one once composed.
    expect(errorCode(await create(owner, { name: 'e\u0301'.repeat(17), speciesId: 1 }))).toBe('BAD_USER_INPUT');
    const composed = await create(owner, { name: 'e\u0301'.repeat(16), speciesId: 1 });
    expect(composed.errors).toBeUndefined();
    expect(composed.data!.createCreature.name).toBe('\u00e9'.repeat(16));
  });

  it('rejects lone surrogates, which a database would silently replace, as BAD_USER_INPUT', async () => {
    expect(errorCode(await create(owner, { name: 'a\ud800', speciesId: 1 }))).toBe('BAD_USER_INPUT');
  });

  it('folds case beyond lower-casing: ß and SS, ς and Σ are the same name', async () => {
    const base = unique('Straße');
    expect((await create(owner, { name: base, speciesId: 1 })).errors).toBeUndefined();
    expect(errorCode(await create(owner, { name: base.replace('ß', 'SS'), speciesId: 1 }))).toBe('DUPLICATE_CREATURE');
    const greek = unique('ΟΔΥΣΣΕΥΣ');
    expect((await create(owner, { name: greek, speciesId: 1 })).errors).toBeUndefined();
    expect(errorCode(await create(owner, { name: greek.toLowerCase().replace(/σ$/, 'ς'), speciesId: 1 }))).toBe('DUPLICATE_CREATURE');
    expect((await create(owner, { name: 'ΐ'.repeat(32), speciesId: 1 })).errors).toBeUndefined();
  });

  it('lets two trainers use the same name', async () => {
    const name = unique('Snorlax');
    expect((await create(owner, { name, speciesId: 143 })).errors).toBeUndefined();
    expect((await create(other, { name, speciesId: 143 })).errors).toBeUndefined();
  });

  it('names the nested field of a bad literal input, e.g. input.speciesId', async () => {
    const res = await gql(
      t.app,
      `mutation { createCreature(trainerId: "${owner.trainer.id}", input: { name: "x", speciesId: 2147483648 }) { id } }`,
      {},
      owner.token,
    );
    expect(errorCode(res)).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.errors![0].extensions!.fields).toEqual([{ field: 'input.speciesId', message: expect.any(String) }]);
  });

  it('rejects a malformed trainerId as BAD_USER_INPUT', async () => {
    const res = await gql(t.app, CREATE, { trainerId: '-3', input: { name: 'ok', speciesId: 1 } }, owner.token);
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
    expect(res.errors![0].extensions!.fields).toEqual([{ field: 'trainerId', message: expect.any(String) }]);
  });

  it('answers deleteCreature with the creature as it was', async () => {
    const made = await createCreature(t.app, owner.trainer.id, { name: unique('Psyduck'), speciesId: 54, level: 3 });
    const res = await gql(t.app, DELETE, { id: String(made.id) }, owner.token);
    expect(res.errors).toBeUndefined();
    expect(res.data!.deleteCreature).toEqual({
      id: String(made.id),
      name: made.name,
      speciesId: 54,
      level: 3,
      trainer: { id: String(owner.trainer.id) },
    });
  });

  it('lists a trainer’s creatures oldest first, paged, with the count of all of them', async () => {
    const collector = await createTrainer(t.app);
    const made = [];
    for (let i = 0; i < 5; i += 1) made.push(await createCreature(t.app, collector.trainer.id, { name: `c${i}` }));
    const res = await gql<{ trainer: unknown }>(
      t.app,
      `query($id: ID!) { trainer(id: $id) { creaturesOwned first: creatures(limit: 2) { name } rest: creatures(limit: 10, offset: 2) { name } } }`,
      { id: String(collector.trainer.id) },
      owner.token,
    );
    expect(res.data!.trainer).toEqual({
      creaturesOwned: 5,
      first: [{ name: 'c0' }, { name: 'c1' }],
      rest: [{ name: 'c2' }, { name: 'c3' }, { name: 'c4' }],
    });
  });
});

import { databases, startTestApp, type TestApp } from '../helpers/app';
import { graphqlDriver, restDriver, type Driver } from '../helpers/drivers';
import { createCreature, createTrainer, type TrainerFixture } from '../helpers/factories';
import { gql } from '../helpers/graphql';

/*
 * `offset` is capped at MAX_OFFSET (10000 unless configured) on every list, on both transports:
 * deeper pages cost the database a skip of every row before them. Trainer lists are read further
 * by cursor, which the refusal names.
 */

describe.each(databases)('offsets beyond MAX_OFFSET on %s', (kind) => {
  describe.each([
    ['by default', {}, 10_000],
    ['with MAX_OFFSET=50', { MAX_OFFSET: '50' }, 50],
  ] as const)('%s', (_label, env, max) => {
    let t: TestApp;
    let me: TrainerFixture;
    beforeAll(async () => {
      t = await startTestApp(kind, env);
      me = await createTrainer(t.app);
      await createCreature(t.app, me.trainer.id);
    });
    afterAll(async () => t.close());

    const lists = (driver: Driver) =>
      [
        ['trainers', (offset: number) => driver.listTrainers(me.token, { offset })],
        ['creatures', (offset: number) => driver.listCreatures(me.token, String(me.trainer.id), { offset })],
      ] as const;

    it.each(['rest', 'graphql'] as const)(
      'takes offset = MAX_OFFSET and refuses one more with BAD_USER_INPUT naming offset (%s)',
      async (name) => {
        const driver = name === 'rest' ? restDriver(t.app) : graphqlDriver(t.app);
        for (const [list, read] of lists(driver)) {
          const at = await read(max);
          expect([list, at.ok && at.value.items]).toEqual([list, []]);
          const over = await read(max + 1);
          expect([list, over]).toEqual([
            list,
            {
              ok: false,
              code: 'BAD_USER_INPUT',
              status: name === 'rest' ? 400 : 200,
              fields: [{ field: 'offset', message: expect.stringContaining(`must be at most ${max}`) }],
            },
          ]);
        }
      },
    );

    it('tells REST clients of the trainer list to follow nextCursor, `after` or the Link header instead', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/trainer?offset=${max + 1}`,
        headers: { authorization: `Bearer ${me.token}` },
      });
      expect(res.statusCode).toBe(400);
      const problem = res.json<{ code: string; detail: string; fields: { field: string; message: string }[] }>();
      expect(problem.code).toBe('BAD_USER_INPUT');
      expect(problem.detail).toMatch(/nextCursor/);
      expect(problem.detail).toMatch(/after/);
      expect(problem.detail).toMatch(/Link header, rel="next"/);
      expect(problem.fields).toEqual([{ field: 'offset', message: `must be at most ${max}; follow nextCursor (after) instead` }]);
      // Far beyond any setting, still a refusal naming offset, never a 500.
      for (const offset of ['2147483648', '99999999999999999999']) {
        const far = await t.app.inject({
          method: 'GET',
          url: `/trainer?offset=${offset}`,
          headers: { authorization: `Bearer ${me.token}` },
        });
        expect([far.statusCode, far.json<{ code: string; fields: { field: string }[] }>().fields[0].field]).toEqual([400, 'offset']);
      }
    });

    it('tells GraphQL clients of trainers(offset) to follow nextCursor as `after`, and refuses Trainer.creatures(offset) in a page', async () => {
      const res = await gql(t.app, `query($offset: Int!) { trainers(offset: $offset) { items { id } } }`, { offset: max + 1 }, me.token);
      expect(res.errors).toHaveLength(1);
      expect(res.errors![0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors![0].message).toMatch(/nextCursor/);
      expect(res.errors![0].message).toMatch(/after/);
      const nested = await gql(
        t.app,
        `query($offset: Int!) { trainers(limit: 5) { items { id creatures(offset: $offset) { id } } } }`,
        { offset: max + 1 },
        me.token,
      );
      expect(nested.errors?.length).toBeGreaterThan(0);
      for (const error of nested.errors!) {
        expect(error.extensions?.code).toBe('BAD_USER_INPUT');
        expect(error.path).toEqual(['trainers', 'items', expect.any(Number), 'creatures']);
      }
      const fine = await gql(
        t.app,
        `query($offset: Int!) { trainers(limit: 5) { items { creatures(offset: $offset) { id } } } }`,
        { offset: max },
        me.token,
      );
      expect(fine.errors).toBeUndefined();
    });
  });
});

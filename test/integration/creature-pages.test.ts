import { databases, startTestApp, type TestApp } from '../helpers/app';
import { graphqlDriver, restDriver, value, type CreatureView, type Driver, type PageView } from '../helpers/drivers';
import { createCreature, createTrainer, deleteTrainer, type TrainerFixture } from '../helpers/factories';
import { gql } from '../helpers/graphql';
import { Team } from '../../src/trainers/team';

/*
 * Creature pages by cursor: Trainer.creaturePage(limit, after) and
 * GET /trainer/{id}/creature?after= (with a Link header), walked as a client walks them, on both
 * transports and both databases; and the pages of many trainers at once, one of them with many
 * more creatures than the others.
 */

describe.each(databases)('creature pages by cursor on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  let other: TrainerFixture;
  /** My creatures' ids, oldest first. */
  const mine: number[] = [];
  beforeAll(async () => {
    t = await startTestApp(kind, { MAX_OFFSET: '3' });
    me = await createTrainer(t.app);
    other = await createTrainer(t.app);
    for (let i = 0; i < 7; i += 1) mine.push((await createCreature(t.app, me.trainer.id)).id);
    for (let i = 0; i < 2; i += 1) await createCreature(t.app, other.trainer.id);
  });
  afterAll(async () => t.close());

  const drivers = (): [string, Driver][] => [
    ['rest', restDriver(t.app)],
    ['graphql', graphqlDriver(t.app)],
  ];

  it.each(['rest', 'graphql'])('walks every creature once, oldest first, and the last page has no next cursor (%s)', async (name) => {
    const driver = drivers().find(([n]) => n === name)![1];
    for (const limit of [3, 7, 1]) {
      const seen: number[] = [];
      let after: string | null = null;
      let pages = 0;
      do {
        const page: PageView<CreatureView> = value(await driver.listCreatures(other.token, String(me.trainer.id), { limit, after }));
        pages += 1;
        expect(page.items.length).toBeLessThanOrEqual(limit);
        // A page is never short while more follow.
        if (page.nextCursor !== null) expect(page.items.length).toBe(limit);
        expect(page.totalCount).toBe(7);
        seen.push(...page.items.map((creature) => creature.id));
        if (name === 'rest') {
          expect(page.link).toBe(
            page.nextCursor === null
              ? undefined
              : `</trainer/${me.trainer.id}/creature?limit=${limit}&after=${page.nextCursor}>; rel="next"`,
          );
        }
        after = page.nextCursor ?? null;
      } while (after !== null && pages < 20);
      expect([limit, seen]).toEqual([limit, mine]);
      expect(pages).toBe(Math.ceil(7 / limit));
    }
  });

  it('follows the Link header as given, beyond MAX_OFFSET, and a creature added meanwhile shows on a later page', async () => {
    const first = await t.app.inject({
      method: 'GET',
      url: `/trainer/${me.trainer.id}/creature?limit=4`,
      headers: { authorization: `Bearer ${me.token}` },
    });
    expect(first.statusCode).toBe(200);
    const link = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))?.[1];
    expect(link).toBeDefined();
    const added = await createCreature(t.app, me.trainer.id);
    try {
      const next = await t.app.inject({ method: 'GET', url: link!, headers: { authorization: `Bearer ${me.token}` } });
      expect(next.statusCode).toBe(200);
      const body = next.json<{ items: { id: number }[]; nextCursor: string | null; offset: number }>();
      // Items 5..8 of 8: past MAX_OFFSET (3), which offset cannot reach.
      expect(body.items.map((creature) => creature.id)).toEqual([...mine.slice(4), added.id]);
      expect([body.nextCursor, next.headers.link, body.offset]).toEqual([null, undefined, 0]);
    } finally {
      await restDriver(t.app).deleteCreature(me.token, String(me.trainer.id), String(added.id));
    }
  });

  it('refuses a cursor it did not give (altered, a trainer list’s, too long) and `after` with an offset, on both transports', async () => {
    const trainerCursor = value(await restDriver(t.app).listTrainers(me.token, { limit: 1 })).nextCursor;
    const creatureCursor = value(await restDriver(t.app).listCreatures(me.token, String(me.trainer.id), { limit: 1 })).nextCursor;
    expect([typeof trainerCursor, typeof creatureCursor]).toEqual(['string', 'string']);
    const altered = `${creatureCursor!.slice(0, -2)}${creatureCursor!.endsWith('AA') ? 'AB' : 'AA'}`;
    for (const [name, driver] of drivers()) {
      for (const after of [altered, trainerCursor, 'x'.repeat(201), 'not-a-cursor']) {
        const refused = await driver.listCreatures(me.token, String(me.trainer.id), { limit: 2, after });
        expect([name, refused.ok, !refused.ok && refused.code]).toEqual([name, false, 'BAD_USER_INPUT']);
      }
    }
    const withOffset = await restDriver(t.app).listCreatures(me.token, String(me.trainer.id), {
      limit: 2,
      offset: 1,
      after: creatureCursor,
    });
    expect(withOffset).toMatchObject({ ok: false, status: 400, code: 'BAD_USER_INPUT', fields: [{ field: 'offset' }] });
  });

  it('answers the pages of a page of trainers at once, each after the same cursor, with a trainer of many more creatures', async () => {
    const heavy = await createTrainer(t.app);
    const heavyIds: number[] = [];
    for (let i = 0; i < 40; i += 1) heavyIds.push((await createCreature(t.app, heavy.trainer.id)).id);
    const ids = [me.trainer.id, other.trainer.id, heavy.trainer.id].map(String);
    const res = await gql(
      t.app,
      `query($a: ID!, $b: ID!, $c: ID!) { a: trainer(id: $a) { ...P } b: trainer(id: $b) { ...P } c: trainer(id: $c) { ...P } }
       fragment P on Trainer { id creaturePage(limit: 3) { items { id trainer { id } } nextCursor } }`,
      { a: ids[0], b: ids[1], c: ids[2] },
      me.token,
    );
    expect(res.errors).toBeUndefined();
    const pages = res.data as Record<
      'a' | 'b' | 'c',
      { creaturePage: { items: { id: string; trainer: { id: string } }[]; nextCursor: string | null } }
    >;
    expect(pages.a.creaturePage.items.map((c) => Number(c.id))).toEqual(mine.slice(0, 3));
    expect(pages.b.creaturePage.nextCursor).toBeNull();
    expect(pages.b.creaturePage.items).toHaveLength(2);
    expect(pages.c.creaturePage.items.map((c) => Number(c.id))).toEqual(heavyIds.slice(0, 3));
    expect(pages.c.creaturePage.items.every((c) => c.trainer.id === ids[2])).toBe(true);
    // The heavy trainer's last page, reached by cursors, ends exactly at its last creature.
    let after: string | null = pages.c.creaturePage.nextCursor;
    const seen = pages.c.creaturePage.items.map((c) => Number(c.id));
    while (after !== null) {
      const page = value(await graphqlDriver(t.app).listCreatures(me.token, ids[2], { limit: 7, after }));
      seen.push(...page.items.map((c) => c.id));
      after = page.nextCursor ?? null;
    }
    expect(seen).toEqual(heavyIds);

    // A page of trainers reads its creatures with the trainers' counts at hand: the small ones
    // ranked together, the big one from its own index range, in one statement; every page exact.
    for (const [limit, offset] of [
      [2, 0],
      [2, 1],
      [5, 3],
      // Its page walks 11 of its 40 creatures: the big trainer is ranked with the others too.
      [9, 1],
    ]) {
      const listed = await gql(
        t.app,
        `query($limit: Int!, $offset: Int!) { trainers(limit: 100) { items { id creatures(limit: $limit, offset: $offset) { id } } } }`,
        { limit, offset },
        me.token,
      );
      expect(listed.errors).toBeUndefined();
      const items = (listed.data as { trainers: { items: { id: string; creatures: { id: string }[] }[] } }).trainers.items;
      const creaturesOf = (id: string) => items.find((item) => item.id === id)!.creatures.map((c) => Number(c.id));
      expect([limit, offset, creaturesOf(ids[0])]).toEqual([limit, offset, mine.slice(offset, offset + limit)]);
      expect([limit, offset, creaturesOf(ids[2])]).toEqual([limit, offset, heavyIds.slice(offset, offset + limit)]);
      expect(creaturesOf(ids[1])).toHaveLength(Math.max(0, Math.min(limit, 2 - offset)));
    }
  });

  it("gives every trainer of a page its own creatures when the page's ids run on with gaps and single ids between", async () => {
    // Six trainers in a row, the third and fifth then deleted: the page holds runs of ids
    // (read as ranges) and ids alone; one trainer of another team sits between in the team's page.
    const row: TrainerFixture[] = [];
    for (let i = 0; i < 6; i += 1) row.push(await createTrainer(t.app, i === 1 ? { team: Team.VALOR } : {}));
    const owned = new Map<string, number[]>();
    for (const [i, trainer] of row.entries()) {
      const ids: number[] = [];
      for (let n = 0; n <= i % 3; n += 1) ids.push((await createCreature(t.app, trainer.trainer.id)).id);
      owned.set(String(trainer.trainer.id), ids);
    }
    for (const gone of [row[2], row[4]]) {
      await deleteTrainer(t.app, gone.trainer);
      owned.delete(String(gone.trainer.id));
    }
    for (const filter of [{}, { team: Team.MYSTIC }]) {
      const res = await gql(
        t.app,
        `query($filter: TrainerFilter) { trainers(limit: 100, filter: $filter) { items { id creatures(limit: 5) { id trainer { id } } } } }`,
        { filter },
        me.token,
      );
      expect(res.errors).toBeUndefined();
      const items = (res.data as { trainers: { items: { id: string; creatures: { id: string; trainer: { id: string } }[] }[] } }).trainers
        .items;
      const listed = new Map(items.map((item) => [item.id, item.creatures.map((c) => Number(c.id))]));
      for (const [id, ids] of owned) {
        if (filter.team && id === String(row[1].trainer.id)) expect(listed.has(id)).toBe(false);
        else expect([id, listed.get(id)]).toEqual([id, ids]);
      }
      for (const item of items) expect(item.creatures.every((c) => c.trainer.id === item.id)).toBe(true);
    }
  });

  it('takes limit 1..100 only', async () => {
    for (const limit of [0, 101]) {
      const res = await gql(
        t.app,
        `query($id: ID!, $limit: Int!) { trainer(id: $id) { creaturePage(limit: $limit) { nextCursor } } }`,
        { id: String(me.trainer.id), limit },
        me.token,
      );
      expect([limit, res.errors?.[0]?.extensions?.code]).toEqual([limit, 'BAD_USER_INPUT']);
    }
  });
});

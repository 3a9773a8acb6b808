import { composeServices } from '@apollo/composition';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'graphql';
import { listen, startTestApp, databases, testConfig, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, type TrainerFixture } from '../helpers/factories';
import { gql, type GraphQLBody } from '../helpers/graphql';
import { until, watch } from '../helpers/events';
import { ConfigError } from '../../src/config';

/*
 * The registry as an Apollo Federation 2 subgraph (FEDERATION=true): its SDL (`_service`, the
 * committed subgraph.graphql) composed with a second subgraph written here, which extends
 * Trainer and Creature by key, and an Apollo gateway in this process that answers client
 * queries spanning both, forwarding the client's Authorization. Also `_entities` asked directly
 * (its rules are trainer(id)'s and creature(id)'s, one statement per type), and a router's
 * documents beside a TRUSTED_DOCUMENTS manifest (the router-secret header).
 */

const ROOT = join(__dirname, '..', '..');
const ROUTER_SECRET = 'router-secret-for-tests-0123456789abcdef';

/** The second subgraph: badges of trainers and ratings of creatures, by key; `topRated` hands the gateway creature keys. */
const REVIEWS_SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Trainer @key(fields: "id") { id: ID! badge: String! }
  type Creature @key(fields: "id") { id: ID! rating: Int! }
  type Query { topRated: [Creature!]! }
`;

interface Reviews {
  url: string;
  stop(): Promise<void>;
  /** Creature ids topRated answers, best first. */
  top: string[];
}

async function startReviews(): Promise<Reviews> {
  const top: string[] = [];
  const server = new ApolloServer({
    schema: buildSubgraphSchema({
      typeDefs: parse(REVIEWS_SDL),
      resolvers: {
        Query: { topRated: () => top.map((id) => ({ id, rating: Number(id) % 5 })) },
        Trainer: { __resolveReference: (ref: { id: string }) => ({ id: ref.id, badge: `badge-${ref.id}` }) },
        Creature: { __resolveReference: (ref: { id: string }) => ({ id: ref.id, rating: Number(ref.id) % 5 }) },
      },
    }),
  });
  const { url } = await startStandaloneServer(server, { listen: { port: 0, host: '127.0.0.1' } });
  return { url, stop: () => server.stop(), top };
}

/** The supergraph of the registry (by its SDL) and the reviews subgraph, or the composition errors. */
function compose(registrySdl: string, registryUrl: string, reviewsUrl: string): { supergraphSdl?: string; errors?: string[] } {
  const result = composeServices([
    { name: 'registry', typeDefs: parse(registrySdl), url: registryUrl },
    { name: 'reviews', typeDefs: parse(REVIEWS_SDL), url: reviewsUrl },
  ]);
  return result.errors ? { errors: result.errors.map((error) => error.message) } : { supergraphSdl: result.supergraphSdl };
}

interface Gateway {
  query<T>(query: string, token?: string): Promise<GraphQLBody<T>>;
  stop(): Promise<void>;
}

/** An Apollo gateway on the supergraph, forwarding the client's Authorization (and, when given, the router's secret). */
async function startGateway(supergraphSdl: string, routerSecret?: string): Promise<Gateway> {
  const gateway = new ApolloGateway({
    supergraphSdl,
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource<{ authorization?: string }>({
        url,
        willSendRequest({ request, context }) {
          const authorization: unknown = context.authorization;
          if (typeof authorization === 'string') request.http?.headers.set('authorization', authorization);
          if (routerSecret) request.http?.headers.set('router-secret', routerSecret);
        },
      }),
  });
  const server = new ApolloServer<{ authorization?: string }>({ gateway });
  const { url } = await startStandaloneServer(server, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({ authorization: req.headers.authorization }),
  });
  return {
    async query<T>(query: string, token?: string) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query }),
      });
      return (await response.json()) as GraphQLBody<T>;
    },
    stop: () => server.stop(),
  };
}

const ENTITIES = `query ($representations: [_Any!]!) {
  _entities(representations: $representations) {
    __typename
    ... on Trainer { id nickname email creaturesOwned }
    ... on Creature { id name level trainer { id } }
  }
}`;

type Entity = { __typename: string; id: string; nickname?: string; email?: string | null; name?: string } | null;

describe('the subgraph SDL', () => {
  it('subgraph.graphql is exactly what a FEDERATION=true instance answers to _service (run `npm run schema` after changing the resolvers)', async () => {
    const t = await startTestApp('sqlite', { FEDERATION: 'true' });
    try {
      const answer = await gql<{ _service: { sdl: string } }>(t.app, '{ _service { sdl } }');
      expect(`${answer.data!._service.sdl.trimEnd()}\n`).toBe(readFileSync(join(ROOT, 'subgraph.graphql'), 'utf8'));
      expect(answer.data!._service.sdl).toContain('@link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])');
      expect(answer.data!._service.sdl).toMatch(/type Trainer\s+@key\(fields: "id"\)/);
      expect(answer.data!._service.sdl).toMatch(/type Creature\s+@key\(fields: "id"\)/);
    } finally {
      await t.close();
    }
  });

  it('composes with a subgraph that extends Trainer and Creature by key; a changed key does not compose', () => {
    const sdl = readFileSync(join(ROOT, 'subgraph.graphql'), 'utf8');
    expect(compose(sdl, 'http://registry.test/graphql', 'http://reviews.test/graphql').errors).toBeUndefined();
    // The reviews subgraph only knows creatures by id: a registry keyed otherwise cannot be reached from topRated.
    const rekeyed = sdl.replace(/(type Creature\s+)@key\(fields: "id"\)/, '$1@key(fields: "name")');
    expect(rekeyed).not.toBe(sdl);
    const { errors } = compose(rekeyed, 'http://registry.test/graphql', 'http://reviews.test/graphql');
    expect(errors?.join('\n')).toMatch(/Creature/);
  });

  it('without FEDERATION there is no _service or _entities', async () => {
    const t = await startTestApp('sqlite');
    try {
      for (const query of ['{ _service { sdl } }', '{ _entities(representations: []) { __typename } }']) {
        const answer = await gql(t.app, query);
        expect([answer.status, answer.errors?.[0].extensions?.code]).toEqual([400, 'GRAPHQL_VALIDATION_FAILED']);
      }
    } finally {
      await t.close();
    }
  });

  it('_service is refused where introspection is (production without GRAPHQL_INTROSPECTION)', async () => {
    const t = await startTestApp('sqlite', { FEDERATION: 'true', NODE_ENV: 'production' });
    try {
      const answer = await gql(t.app, '{ _service { sdl } }');
      expect([answer.status, answer.errors?.[0].extensions?.code]).toEqual([400, 'GRAPHQL_VALIDATION_FAILED']);
      expect(answer.errors?.[0].message).toContain('subgraph.graphql');
    } finally {
      await t.close();
    }
  });

  it('start-up refuses FEDERATION with TRUSTED_DOCUMENTS but no FEDERATION_ROUTER_SECRET, or a short one', () => {
    const folder = mkdtempSync(join(tmpdir(), 'registry-federation-'));
    try {
      const manifest = join(folder, 'persisted-documents.json');
      const text = '{ me { id } }';
      writeFileSync(manifest, JSON.stringify({ [createHash('sha256').update(text).digest('hex')]: text }));
      const base = { FEDERATION: 'true', TRUSTED_DOCUMENTS: manifest };
      expect(() => testConfig('sqlite::memory:', base)).toThrow(/FEDERATION_ROUTER_SECRET is required/);
      expect(() => testConfig('sqlite::memory:', { ...base, FEDERATION_ROUTER_SECRET: 'short' })).toThrow(ConfigError);
      expect(() => testConfig('sqlite::memory:', { ...base, FEDERATION_ROUTER_SECRET: ROUTER_SECRET })).not.toThrow();
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe.each(databases)('the registry as a subgraph on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  let other: TrainerFixture;
  let mine: number;
  let theirs: number;
  let level: number;
  let statements = 0;
  let reviews: Reviews;
  let gateway: Gateway;
  let origin: string;
  beforeAll(async () => {
    t = await startTestApp(kind, { FEDERATION: 'true' }, { onQuery: () => (statements += 1) });
    me = await createTrainer(t.app);
    other = await createTrainer(t.app);
    mine = (await createCreature(t.app, me.trainer.id, { name: 'Mine' })).id;
    theirs = (await createCreature(t.app, other.trainer.id, { name: 'Theirs' })).id;
    level = (await t.app.services.creatures.findByIds([mine]))[0]!.level;
    origin = await listen(t);
    reviews = await startReviews();
    reviews.top.push(String(theirs), String(mine));
    const sdl = (await gql<{ _service: { sdl: string } }>(t.app, '{ _service { sdl } }')).data!._service.sdl;
    const { supergraphSdl, errors } = compose(sdl, `${origin}/graphql`, reviews.url);
    expect(errors).toBeUndefined();
    gateway = await startGateway(supergraphSdl!);
  });
  afterAll(async () => {
    await gateway?.stop();
    await reviews?.stop();
    await t.close();
  });

  const representations = () => [
    { __typename: 'Trainer', id: String(me.trainer.id) },
    { __typename: 'Creature', id: String(theirs) },
    { __typename: 'Trainer', id: String(other.trainer.id) },
    { __typename: 'Trainer', id: '999999999' },
    { __typename: 'Creature', id: String(mine) },
    { __typename: 'Creature', id: '999999998' },
  ];

  it('_entities answers under the rules of trainer(id) and creature(id), in one statement per type', async () => {
    // Run more than once: the pipeline compiles a document after its first runs (graphql-jit).
    for (let round = 0; round < 12; round += 1) {
      statements = 0;
      const answer = await gql<{ _entities: Entity[] }>(t.app, ENTITIES, { representations: representations() }, me.token);
      expect(answer.errors).toBeUndefined();
      expect(answer.data!._entities).toEqual([
        { __typename: 'Trainer', id: String(me.trainer.id), nickname: me.trainer.nickname, email: me.email, creaturesOwned: 1 },
        { __typename: 'Creature', id: String(theirs), name: 'Theirs', level, trainer: { id: String(other.trainer.id) } },
        // The email only to the trainer itself.
        { __typename: 'Trainer', id: String(other.trainer.id), nickname: other.trainer.nickname, email: null, creaturesOwned: 1 },
        null,
        { __typename: 'Creature', id: String(mine), name: 'Mine', level, trainer: { id: String(me.trainer.id) } },
        null,
      ]);
      // The trainers with the caller check, then the creatures; their `trainer` fields find the trainers read.
      expect(statements).toBe(2);
    }
  });

  it('_entities without a token, or with a malformed representation, is refused with the catalogue code', async () => {
    const anonymous = await gql<{ _entities: Entity[] }>(t.app, ENTITIES, { representations: representations() });
    expect(anonymous.data?._entities).toEqual(representations().map(() => null));
    expect(new Set(anonymous.errors?.map((error) => error.extensions?.code))).toEqual(new Set(['UNAUTHENTICATED']));
    for (const bad of [{ __typename: 'Trainer', id: 'abc' }, { __typename: 'Species', id: '1' }, { id: '1' }, 'Trainer:1']) {
      const answer = await gql(t.app, ENTITIES, { representations: [bad] }, me.token);
      expect([answer.status, answer.errors?.[0].extensions?.code]).toEqual([200, 'BAD_USER_INPUT']);
    }
  });

  it('the cost and depth limits count what _entities selects', async () => {
    const many = Array.from({ length: 60 }, (_, i) => ({ __typename: 'Trainer', id: String(i + 1) }));
    const costly = `query ($representations: [_Any!]!) {
      _entities(representations: $representations) { ... on Trainer { creatures(limit: 100) { id name } } }
    }`;
    const tooCostly = await gql(t.app, costly, { representations: many }, me.token);
    expect([tooCostly.status, tooCostly.errors?.[0].extensions?.code]).toEqual([400, 'BAD_USER_INPUT']);
    expect(tooCostly.errors?.[0].message).toMatch(/would cost/);
    // The same document with fewer representations costs less and runs.
    const fewer = await gql(t.app, costly, { representations: many.slice(0, 2) }, me.token);
    expect(fewer.errors).toBeUndefined();
    const deep = `query ($representations: [_Any!]!) {
      _entities(representations: $representations) { ... on Creature { trainer { creatures { trainer { creatures { trainer { creatures { trainer { id } } } } } } } } }
    }`;
    const tooDeep = await gql(t.app, deep, { representations: [] }, me.token);
    expect([tooDeep.status, tooDeep.errors?.[0].extensions?.code]).toEqual([400, 'GRAPHQL_VALIDATION_FAILED']);
  });

  it('a gateway answers a query that spans both subgraphs, with the client token forwarded', async () => {
    const answer = await gateway.query<{
      trainer: { nickname: string; email: string | null; badge: string; creatures: { name: string; rating: number }[] };
      topRated: { id: string; name: string; rating: number; trainer: { nickname: string; badge: string } }[];
    }>(
      `{
        trainer(id: "${me.trainer.id}") { nickname email badge creatures { name rating } }
        topRated { id name rating trainer { nickname badge } }
      }`,
      me.token,
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data).toEqual({
      trainer: {
        nickname: me.trainer.nickname,
        email: me.email,
        badge: `badge-${me.trainer.id}`,
        creatures: [{ name: 'Mine', rating: mine % 5 }],
      },
      topRated: [
        {
          id: String(theirs),
          name: 'Theirs',
          rating: theirs % 5,
          trainer: { nickname: other.trainer.nickname, badge: `badge-${other.trainer.id}` },
        },
        { id: String(mine), name: 'Mine', rating: mine % 5, trainer: { nickname: me.trainer.nickname, badge: `badge-${me.trainer.id}` } },
      ],
    });
  });

  it('live events still arrive over WebSocket from a subgraph instance', async () => {
    const subscriber = watch(origin, other.token, String(me.trainer.id));
    try {
      await subscriber.connected;
      // Registered once the server has answered the subscribe message (as in events.test).
      await new Promise((resolve) => setTimeout(resolve, 100));
      const created = await gql<{ createCreature: { id: string } }>(
        t.app,
        `mutation { createCreature(trainerId: "${me.trainer.id}", input: { name: "Live", speciesId: 1 }) { id } }`,
        {},
        me.token,
      );
      expect(created.errors).toBeUndefined();
      await until(() => subscriber.events.length > 0 || subscriber.errors.length > 0, 'the CREATED event');
      expect(subscriber.events.map((event) => [event.kind, event.creature.name])).toEqual([['CREATED', 'Live']]);
      expect(subscriber.errors).toEqual([]);
    } finally {
      await subscriber.client.dispose();
    }
  });

  it("through the gateway without a token, the registry's UNAUTHENTICATED comes through", async () => {
    const fromRegistry = await gateway.query<{ trainer: unknown }>(`{ trainer(id: "${me.trainer.id}") { nickname } }`);
    expect(fromRegistry.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
    // Entities the registry resolves for a plan that starts in the other subgraph.
    const viaEntities = await gateway.query<{ topRated: unknown }>('{ topRated { id name } }');
    expect(viaEntities.errors?.map((error) => error.extensions?.code)).toContain('UNAUTHENTICATED');
  });
});

describe.each(databases)('a subgraph with trusted documents on %s', (kind) => {
  let folder: string;
  let t: TestApp;
  let me: TrainerFixture;
  let reviews: Reviews;
  const clientText = 'query Me { me { id nickname } }';
  const clientId = createHash('sha256').update(clientText).digest('hex');
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'registry-federation-'));
    const manifest = join(folder, 'persisted-documents.json');
    writeFileSync(manifest, JSON.stringify({ [clientId]: clientText }));
    t = await startTestApp(kind, {
      NODE_ENV: 'production',
      FEDERATION: 'true',
      TRUSTED_DOCUMENTS: manifest,
      FEDERATION_ROUTER_SECRET: ROUTER_SECRET,
    });
    me = await createTrainer(t.app);
    reviews = await startReviews();
  });
  afterAll(async () => {
    await reviews?.stop();
    await t?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("runs the router's planned documents only with router-secret; client documents keep the manifest's rules", async () => {
    const origin = await listen(t);
    const sdl = readFileSync(join(ROOT, 'subgraph.graphql'), 'utf8');
    const { supergraphSdl } = compose(sdl, `${origin}/graphql`, reviews.url);
    const query = `{ trainer(id: "${me.trainer.id}") { nickname badge } }`;

    const withSecret = await startGateway(supergraphSdl!, ROUTER_SECRET);
    const withoutSecret = await startGateway(supergraphSdl!);
    const wrongSecret = await startGateway(supergraphSdl!, `${ROUTER_SECRET}-not`);
    try {
      const answered = await withSecret.query<{ trainer: { nickname: string; badge: string } }>(query, me.token);
      expect(answered.errors).toBeUndefined();
      expect(answered.data).toEqual({ trainer: { nickname: me.trainer.nickname, badge: `badge-${me.trainer.id}` } });
      for (const router of [withoutSecret, wrongSecret]) {
        const refused = await router.query(query, me.token);
        expect(refused.errors?.[0].extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      }
    } finally {
      await Promise.all([withSecret.stop(), withoutSecret.stop(), wrongSecret.stop()]);
    }

    // A client sending straight to the subgraph: the manifest's document by id runs, any other is refused.
    const byId = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
      payload: { documentId: `sha256:${clientId}` },
    });
    expect(byId.json<GraphQLBody>()).toEqual({ data: { me: { id: String(me.trainer.id), nickname: me.trainer.nickname } } });
    const other = await gql(
      t.app,
      `{ _entities(representations: [{ __typename: "Trainer", id: "${me.trainer.id}" }]) { __typename } }`,
      {},
      me.token,
    );
    expect(other.errors?.[0].extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });
});

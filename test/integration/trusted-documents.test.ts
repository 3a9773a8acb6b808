import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DocumentNode } from 'graphql';
import { createClient, type SubscribePayload } from 'graphql-ws';
import WebSocket from 'ws';
import { buildApp } from '../../src/app';
import { createTestDatabase, databases, listen, startTestApp, testConfig, type TestApp } from '../helpers/app';
import { until } from '../helpers/events';
import { createCreature, createTrainer, unique, type TrainerFixture } from '../helpers/factories';
import type { GraphQLBody } from '../helpers/graphql';
import { generateTrustedDocuments, type Generated } from '../helpers/trusted-documents';

/*
 * Trusted documents (TRUSTED_DOCUMENTS): a manifest made by graphql-codegen's client preset from
 * test/fixtures/trusted-documents, and the requests a frontend (Apollo Client with its
 * persisted-queries link), graphql-ws and a hand-made client send. In production only the
 * manifest's documents run, by id or identical text; development runs any; APQ registers
 * documents only without a manifest. /metrics shows how documents came and how many were parsed.
 */

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let generated: Generated;
beforeAll(() => {
  generated = generateTrustedDocuments();
});
afterAll(() => rmSync(generated.folder, { recursive: true, force: true }));

/** The manifest's id (hex) and text of an operation, by name. */
const trusted = (name: string): { id: string; text: string } => {
  const key = generated.documents[name].__meta__.hash;
  return { id: key.replace(/^sha256:/, ''), text: generated.manifest[key] };
};

const PROD = { NODE_ENV: 'production' };

describe.each(databases)('trusted documents on %s', (kind) => {
  let prod: TestApp;
  let me: TrainerFixture;
  let other: TrainerFixture;
  beforeAll(async () => {
    prod = await startTestApp(kind, { ...PROD, TRUSTED_DOCUMENTS: generated.manifestFile });
    me = await createTrainer(prod.app);
    other = await createTrainer(prod.app);
    await createCreature(prod.app, other.trainer.id, { name: 'Ada' });
  });
  afterAll(async () => prod.close());
  let origin: string | undefined;
  const prodOrigin = async () => (origin ??= await listen(prod));

  const post = async (app: TestApp, body: Record<string, unknown>, token: string | undefined = me.token) => {
    const response = await app.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      payload: JSON.stringify(body),
    });
    return { status: response.statusCode, body: response.json<GraphQLBody>() };
  };
  const get = async (app: TestApp, params: Record<string, string>, token: string | undefined = me.token) => {
    const response = await app.app.inject({
      method: 'GET',
      url: `/graphql?${new URLSearchParams(params).toString()}`,
      headers: { 'apollo-require-preflight': 'true', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    return { status: response.statusCode, body: response.json<GraphQLBody>() };
  };
  const code = (answer: { body: GraphQLBody }) => answer.body.errors?.[0]?.extensions?.code;
  const metrics = async (app: TestApp) => {
    const text = (await app.app.inject({ method: 'GET', url: '/metrics' })).body;
    const read = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);
    return {
      parsed: read(/^graphql_documents_parsed_total\{step="parse"\} (\d+)$/m),
      validated: read(/^graphql_documents_parsed_total\{step="validate"\} (\d+)$/m),
      byId: read(/^graphql_documents_total\{how="id"\} (\d+)$/m),
      byText: read(/^graphql_documents_total\{how="text"\} (\d+)$/m),
      refused: read(/^graphql_documents_total\{how="refused"\} (\d+)$/m),
      compiled: read(/^graphql_compiled_runs_total (\d+)$/m),
    };
  };
  // codegen adds __typename to every selection, as Apollo Client's cache wants (see the helper).
  const trainerAnswer = () => ({
    __typename: 'Query',
    trainer: { __typename: 'Trainer', id: String(other.trainer.id), nickname: other.trainer.nickname, creaturesOwned: 1 },
  });
  const meAnswer = (who: TrainerFixture) => ({
    __typename: 'Query',
    me: { __typename: 'Trainer', id: String(who.trainer.id), nickname: who.trainer.nickname },
  });

  describe('in production with a manifest', () => {
    it('runs a manifest document by documentId, with and without the sha256: prefix, by POST and GET', async () => {
      const { id } = trusted('TrainerById');
      const variables = { id: String(other.trainer.id) };
      for (const documentId of [`sha256:${id}`, id, id.toUpperCase()]) {
        const byPost = await post(prod, { documentId, variables });
        expect([byPost.status, byPost.body]).toEqual([200, { data: trainerAnswer() }]);
        const byGet = await get(prod, { documentId, variables: JSON.stringify(variables) });
        expect([byGet.status, byGet.body]).toEqual([200, { data: trainerAnswer() }]);
      }
    });

    it('runs a manifest document by Apollo’s APQ hash and by its identical text', async () => {
      const { id, text } = trusted('TrainerById');
      const variables = { id: String(other.trainer.id) };
      const apq = await post(prod, { variables, extensions: { persistedQuery: { version: 1, sha256Hash: id } } });
      expect([apq.status, apq.body]).toEqual([200, { data: trainerAnswer() }]);
      const apqGet = await get(prod, {
        variables: JSON.stringify(variables),
        extensions: JSON.stringify({ persistedQuery: { version: 1, sha256Hash: id } }),
      });
      expect(apqGet.body).toEqual({ data: trainerAnswer() });
      const byText = await post(prod, { query: text, variables });
      expect([byText.status, byText.body]).toEqual([200, { data: trainerAnswer() }]);
      const byTextGet = await get(prod, { query: text, variables: JSON.stringify(variables) });
      expect(byTextGet.body).toEqual({ data: trainerAnswer() });
    });

    it('refuses any other document before parsing it, with HTTP 200 and PERSISTED_QUERY_NOT_FOUND', async () => {
      const { text } = trusted('TrainerById');
      const before = await metrics(prod);
      const refused = [
        // The same document with a space more: not identical.
        { query: `${text} `, variables: { id: '1' } },
        { query: '{ me { id } }' },
        { query: '{ me { id ' },
        { query: 'query { __schema { types { name } } }' },
        { documentId: `sha256:${'0'.repeat(64)}` },
        { documentId: 'not-a-hash' },
        { extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } },
      ];
      for (const body of refused) {
        const answer = await post(prod, body);
        expect([answer.status, code(answer), answer.body.data]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND', undefined]);
        expect(answer.body.errors).toHaveLength(1);
        expect(answer.body.errors?.[0]?.message).not.toMatch(/Syntax Error|Cannot query|Expected/);
      }
      const byGet = await get(prod, { query: '{ me { id ' });
      expect([byGet.status, code(byGet)]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
      const unknownGet = await get(prod, { documentId: `sha256:${'1'.repeat(64)}` });
      expect([unknownGet.status, code(unknownGet)]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
      const after = await metrics(prod);
      expect(after.refused - before.refused).toBe(refused.length + 2);
      expect(after.parsed).toBe(before.parsed);
    });

    it('lets APQ add no document: a new text sent with its hash is refused, and its hash stays unknown', async () => {
      const query = `query Mine { me { id } }`;
      const sha256Hash = sha256(query);
      const register = await post(prod, { query, extensions: { persistedQuery: { version: 1, sha256Hash } } });
      expect([register.status, code(register)]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
      const lookup = await post(prod, { extensions: { persistedQuery: { version: 1, sha256Hash } } });
      expect(code(lookup)).toBe('PERSISTED_QUERY_NOT_FOUND');
    });

    it('neither parses nor validates a trusted document per request, and answers queries by id from the plan compiled at start', async () => {
      const { id } = trusted('TrainerById');
      const before = await metrics(prod);
      for (let i = 0; i < 5; i += 1) {
        expect((await post(prod, { documentId: id, variables: { id: String(other.trainer.id) } })).body).toEqual({ data: trainerAnswer() });
      }
      expect((await get(prod, { documentId: trusted('Me').id })).body.data).toEqual(meAnswer(me));
      expect((await post(prod, { query: trusted('Me').text })).body.errors).toBeUndefined();
      const after = await metrics(prod);
      expect([after.parsed, after.validated]).toEqual([before.parsed, before.validated]);
      expect(after.byId - before.byId).toBe(6);
      expect(after.byText - before.byText).toBe(1);
      // Run by the plan compiled at start from the first request on (none on graphql-js first), by id, GET or text.
      expect(after.compiled - before.compiled).toBe(7);
    });

    it('runs a manifest mutation by id over POST, and refuses it over GET with 405 METHOD_NOT_ALLOWED', async () => {
      const { id } = trusted('CreateCreature');
      const name = unique('Mon');
      const variables = { trainerId: String(me.trainer.id), input: { name, speciesId: 4, level: 7 } };
      const created = await post(prod, { documentId: `sha256:${id}`, variables });
      expect(created.body.errors).toBeUndefined();
      const rows = await prod.app.dataSource.query('SELECT name, level FROM creature WHERE trainer_id = ?', [me.trainer.id]);
      expect(rows).toEqual([{ name, level: 7 }]);
      const byGet = await get(prod, { documentId: id, variables: JSON.stringify(variables) });
      expect([byGet.status, code(byGet)]).toEqual([405, 'METHOD_NOT_ALLOWED']);
    });

    it('keeps the request limits and errors of a trusted document: a bad variable is BAD_USER_INPUT', async () => {
      const answer = await post(prod, { documentId: trusted('TrainerById').id, variables: { id: 'abc' } });
      expect(code(answer)).toBe('BAD_USER_INPUT');
      const missing = await post(prod, { documentId: trusted('TrainerById').id });
      expect([missing.status, code(missing)]).toEqual([400, 'BAD_USER_INPUT']);
    });

    it('takes Apollo Client’s persisted-queries link sending codegen’s hashes, by POST and by GET', async () => {
      const origin = await prodOrigin();
      for (const useGETForHashedQueries of [false, true]) {
        const client = new ApolloClient({
          cache: new InMemoryCache(),
          link: ApolloLink.from([
            createPersistedQueryLink({
              generateHash: (document: DocumentNode) => (document as DocumentNode & { __meta__: { hash: string } }).__meta__.hash,
              useGETForHashedQueries,
            }),
            new HttpLink({
              uri: `${origin}/graphql`,
              fetch,
              headers: { authorization: `Bearer ${me.token}`, 'apollo-require-preflight': 'true' },
            }),
          ]),
        });
        const result = await client.query({
          query: generated.documents.TrainerById,
          variables: { id: String(other.trainer.id) },
          fetchPolicy: 'network-only',
        });
        expect(result.data).toEqual(trainerAnswer());
        const name = unique('Pq');
        const mutation = await client.mutate({
          mutation: generated.documents.CreateCreature,
          variables: { trainerId: String(me.trainer.id), input: { name, speciesId: 1 } },
        });
        expect(mutation.data).toMatchObject({ createCreature: { name, level: 1 } });
        client.stop();
      }
    });

    it('refuses Apollo Client’s own hash of a text printed otherwise than the manifest’s (not identical text)', async () => {
      const origin = await prodOrigin();
      const client = new ApolloClient({
        cache: new InMemoryCache(),
        link: ApolloLink.from([
          createPersistedQueryLink({ sha256 }),
          new HttpLink({ uri: `${origin}/graphql`, fetch, headers: { authorization: `Bearer ${me.token}` } }),
        ]),
      });
      const result = await client.query({
        query: generated.documents.Me,
        fetchPolicy: 'network-only',
        errorPolicy: 'all',
      });
      expect(JSON.stringify(result.error)).toContain('PersistedQueryNotFound');
      client.stop();
    });

    it('takes a subscription over WebSocket by id and by identical text, and refuses any other document there', async () => {
      const origin = await prodOrigin();
      const { id, text } = trusted('CreatureEvents');
      const before = await metrics(prod);
      // graphql-ws wants a `query` string: a document named by id comes with an empty one.
      const sockets = [
        subscribeWith(origin, me.token, { query: '', documentId: `sha256:${id}`, variables: { trainerId: String(me.trainer.id) } }),
        subscribeWith(origin, me.token, {
          query: '',
          extensions: { persistedQuery: { version: 1, sha256Hash: id } },
          variables: { trainerId: String(me.trainer.id) },
        }),
        subscribeWith(origin, me.token, { query: text, variables: { trainerId: String(me.trainer.id) } }),
      ];
      const refused = subscribeWith(origin, me.token, {
        query: `${text} `,
        variables: { trainerId: String(me.trainer.id) },
      });
      const unparsable = subscribeWith(origin, me.token, { query: 'subscription { creatureEvents(', variables: {} });
      await Promise.all([...sockets, refused, unparsable].map((socket) => socket.connected));
      await until(() => refused.errors.length > 0 && unparsable.errors.length > 0, 'the refusals');
      expect(refused.errors.map((error) => error.extensions?.code)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
      expect(unparsable.errors.map((error) => error.extensions?.code)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
      // Give the subscriptions a moment to start before the event they wait for.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const name = unique('Ws');
      const created = await post(prod, {
        documentId: trusted('CreateCreature').id,
        variables: { trainerId: String(me.trainer.id), input: { name, speciesId: 2 } },
      });
      const { id: creatureId } = (created.body.data as { createCreature: { id: string } }).createCreature;
      const event = { __typename: 'CreatureEvent', kind: 'CREATED', creature: { __typename: 'Creature', id: creatureId, name } };
      await until(
        () => sockets.every((socket) => socket.events.length > 0),
        `the events (errors: ${JSON.stringify(sockets.map((socket) => socket.errors))})`,
      );
      for (const socket of sockets) expect(socket.events).toEqual([event]);
      const after = await metrics(prod);
      expect(after.parsed).toBe(before.parsed);
      for (const socket of [...sockets, refused, unparsable]) await socket.dispose();
    });
  });

  describe('in development', () => {
    let devTrusted: TestApp;
    let open: TestApp;
    let dev: TrainerFixture;
    let devOpen: TrainerFixture;
    beforeAll(async () => {
      devTrusted = await startTestApp(kind, { NODE_ENV: 'development', TRUSTED_DOCUMENTS: generated.manifestFile });
      open = await startTestApp(kind, { NODE_ENV: 'development' });
      dev = await createTrainer(devTrusted.app);
      devOpen = await createTrainer(open.app);
    });
    afterAll(async () => {
      await devTrusted.close();
      await open.close();
    });

    it('runs any document beside the manifest’s, and reports a syntax error as before', async () => {
      const before = await metrics(devTrusted);
      const free = await post(devTrusted, { query: '{ me { nickname } }' }, dev.token);
      expect(free.body).toEqual({ data: { me: { nickname: dev.trainer.nickname } } });
      // A text outside the manifest is parsed and validated (once: Apollo keeps it after that).
      await post(devTrusted, { query: '{ me { nickname } }' }, dev.token);
      const after = await metrics(devTrusted);
      expect([after.parsed - before.parsed, after.validated - before.validated]).toEqual([1, 1]);
      const byId = await post(devTrusted, { documentId: trusted('Me').id }, dev.token);
      expect(byId.body).toEqual({ data: meAnswer(dev) });
      const syntax = await post(devTrusted, { query: '{ me { id ' }, dev.token);
      expect([syntax.status, code(syntax)]).toEqual([400, 'BAD_USER_INPUT']);
      const unknown = await post(devTrusted, { documentId: 'a'.repeat(64) }, dev.token);
      expect([unknown.status, code(unknown)]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
    });

    it('with a manifest, runs a new text sent with its APQ hash but does not register it', async () => {
      const query = '{ me { id nickname } }';
      const sha256Hash = sha256(query);
      const register = await post(devTrusted, { query, extensions: { persistedQuery: { version: 1, sha256Hash } } }, dev.token);
      expect(register.body.data).toEqual({ me: { id: String(dev.trainer.id), nickname: dev.trainer.nickname } });
      const lookup = await post(devTrusted, { extensions: { persistedQuery: { version: 1, sha256Hash } } }, dev.token);
      expect([lookup.status, code(lookup)]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
    });

    it('without a manifest, registers with APQ and looks up by hash (Apollo Client with sha256 from node:crypto)', async () => {
      const query = `query Own { me { id nickname } }`;
      const sha256Hash = sha256(query);
      const unknown = await post(open, { extensions: { persistedQuery: { version: 1, sha256Hash } } }, devOpen.token);
      expect([unknown.status, code(unknown)]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
      const origin = await listen(open);
      const client = new ApolloClient({
        cache: new InMemoryCache(),
        link: ApolloLink.from([
          createPersistedQueryLink({ sha256 }),
          new HttpLink({ uri: `${origin}/graphql`, fetch, headers: { authorization: `Bearer ${devOpen.token}` } }),
        ]),
      });
      const result = await client.query({ query: generated.documents.Me, fetchPolicy: 'network-only' });
      expect(result.data).toEqual(meAnswer(devOpen));
      client.stop();
      // Registered by the client's retry with the text: now known by its hash alone.
      const register = await post(open, { query, extensions: { persistedQuery: { version: 1, sha256Hash } } }, devOpen.token);
      expect(register.body.errors).toBeUndefined();
      const lookup = await post(open, { extensions: { persistedQuery: { version: 1, sha256Hash } } }, devOpen.token);
      expect(lookup.body).toEqual({ data: { me: { id: String(devOpen.trainer.id), nickname: devOpen.trainer.nickname } } });
      const byDocumentId = await post(open, { documentId: sha256Hash }, devOpen.token);
      expect(code(byDocumentId)).toBe('PERSISTED_QUERY_NOT_FOUND');
    });
  });
});

describe('a manifest that does not fit the schema', () => {
  it('stops start-up naming the manifest and the document', async () => {
    const database = await createTestDatabase('sqlite');
    const file = join(generated.folder, 'broken.json');
    const good = 'query Fine { me { id } }';
    const bad = 'query Broken { me { password } }';
    writeFileSync(file, JSON.stringify({ [`sha256:${sha256(good)}`]: good, [sha256(bad)]: bad }));
    try {
      await expect(buildApp(testConfig(database.url, { ...PROD, TRUSTED_DOCUMENTS: file }))).rejects.toThrow(
        `Invalid configuration: TRUSTED_DOCUMENTS ${file} document ${sha256(bad)} does not validate against the schema: Cannot query field "password" on type "Trainer".`,
      );
      const deep = `query Deep { me { creatures { trainer { creatures { trainer { creatures { trainer { creatures { id } } } } } } } } }`;
      writeFileSync(file, JSON.stringify({ [sha256(deep)]: deep }));
      await expect(buildApp(testConfig(database.url, { ...PROD, TRUSTED_DOCUMENTS: file }))).rejects.toThrow(
        `document ${sha256(deep)} does not validate against the schema: Query depth is more than 8 levels`,
      );
    } finally {
      await database.drop();
    }
  });
});

/** A graphql-ws client subscribed with the payload given (a documentId goes through as sent). */
function subscribeWith(origin: string, token: string, payload: SubscribePayload & { documentId?: string }) {
  let onConnected!: () => void;
  const connected = new Promise<void>((resolve) => (onConnected = resolve));
  const client = createClient({
    url: `${origin.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { connected: () => onConnected() },
  });
  const events: unknown[] = [];
  const errors: { extensions?: { code?: string } }[] = [];
  client.subscribe<{ creatureEvents: unknown }>(payload, {
    next: (value) => {
      if (value.data) events.push(value.data.creatureEvents);
    },
    error: (error) => {
      if (Array.isArray(error)) errors.push(...(error as typeof errors));
    },
    complete: () => undefined,
  });
  return { events, errors, connected, dispose: async () => client.dispose() };
}

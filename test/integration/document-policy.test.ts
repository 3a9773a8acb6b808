import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GraphQLError, Kind, valueFromASTUntyped, visit } from 'graphql';
import type { DocumentCheck } from '../../src/graphql/pipeline';
import { AppError } from '../../src/errors';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';
import { until, watch } from '../helpers/events';
import { createTrainer, type TrainerFixture } from '../helpers/factories';
import type { GraphQLBody } from '../helpers/graphql';

/*
 * What a document may do is decided in one place (src/graphql/pipeline.ts). A check added
 * there (BuildOptions.documentChecks) must refuse the same document, with the same code, on every
 * route a document can take: POST run by graphql-js, POST of a text graphql-jit has compiled
 * (run by its compiled plan), GET, APQ, a trusted document by id and by text (production with a manifest), and a graphql-ws
 * subscribe. The check here refuses a look-up of one nickname, and the event stream of one
 * trainer, whether the value comes as a literal or a variable.
 */
const BLOCKED_NICKNAME = 'blocked-nickname';
const MESSAGE = 'This look-up is refused by a check of the document policy';
const QUERY = 'query ByNickname($nickname: String!) { trainerByNickname(nickname: $nickname) { id } }';
const SUBSCRIPTION = 'subscription Events($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind } }';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Refuses `trainerByNickname(nickname: BLOCKED_NICKNAME)` and `creatureEvents(trainerId: <blocked>)`. */
function blockingCheck(blockedTrainerId: () => string): DocumentCheck {
  return ({ document, variables }) => {
    let refused = false;
    visit(document, {
      Field(field) {
        const argument =
          field.name.value === 'trainerByNickname' ? 'nickname' : field.name.value === 'creatureEvents' ? 'trainerId' : undefined;
        const node = field.arguments?.find((a) => a.name.value === argument);
        if (!node) return;
        const value = node.value.kind === Kind.VARIABLE ? variables[node.value.name.value] : valueFromASTUntyped(node.value);
        const blocked = argument === 'nickname' ? BLOCKED_NICKNAME : blockedTrainerId();
        if (String(value) === blocked) refused = true;
      },
    });
    return refused
      ? new GraphQLError(MESSAGE, { originalError: new AppError('FORBIDDEN', MESSAGE), extensions: { http: { status: 403 } } })
      : undefined;
  };
}

describe.each(databases)('a check added to the document policy, on every route, on %s', (kind) => {
  let dev: TestApp;
  let prod: TestApp;
  let me: TrainerFixture;
  let prodMe: TrainerFixture;
  let blocked = '';
  const check = blockingCheck(() => blocked);

  beforeAll(async () => {
    dev = await startTestApp(kind, {}, { documentChecks: [check] });
    const dir = mkdtempSync(join(tmpdir(), 'policy-manifest-'));
    const manifestFile = join(dir, 'persisted-documents.json');
    writeFileSync(manifestFile, JSON.stringify({ [`sha256:${sha256(QUERY)}`]: QUERY, [`sha256:${sha256(SUBSCRIPTION)}`]: SUBSCRIPTION }));
    prod = await startTestApp(kind, { NODE_ENV: 'production', TRUSTED_DOCUMENTS: manifestFile }, { documentChecks: [check] });
    me = await createTrainer(dev.app);
    prodMe = await createTrainer(prod.app);
    blocked = String(me.trainer.id);
  });
  afterAll(async () => {
    await dev?.close();
    await prod?.close();
  });

  const authorization = (t: TestApp) => ({ authorization: `Bearer ${t === prod ? prodMe.token : me.token}` });
  const post = async (t: TestApp, body: Record<string, unknown>) => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', ...authorization(t) },
      payload: JSON.stringify(body),
    });
    return { status: response.statusCode, body: response.json<GraphQLBody>() };
  };
  const get = async (t: TestApp, params: Record<string, string>) => {
    const response = await t.app.inject({
      method: 'GET',
      url: `/graphql?${new URLSearchParams(params).toString()}`,
      headers: { 'apollo-require-preflight': 'true', ...authorization(t) },
    });
    return { status: response.statusCode, body: response.json<GraphQLBody>() };
  };
  const refusal = (answer: { status: number; body: GraphQLBody }) => [
    answer.status,
    answer.body.errors?.[0]?.extensions?.code,
    answer.body.errors?.[0]?.message,
    answer.body.data ?? null,
  ];
  const REFUSED = [403, 'FORBIDDEN', MESSAGE, null];
  const counter = async (t: TestApp, name: string) =>
    Number(new RegExp(`^${name} (\\d+)$`, 'm').exec((await t.app.inject({ method: 'GET', url: '/metrics' })).body)?.[1]);
  const compiledRuns = (t: TestApp) => counter(t, 'graphql_compiled_runs_total');
  const blockedVariables = { nickname: BLOCKED_NICKNAME };
  const allowedVariables = () => ({ nickname: me.trainer.nickname });

  it('refuses a POST run by graphql-js (the text’s first run), and lets another value through', async () => {
    const text = 'query First($nickname: String!) { trainerByNickname(nickname: $nickname) { id nickname } }';
    expect(refusal(await post(dev, { query: text, variables: blockedVariables }))).toEqual(REFUSED);
    expect(refusal(await post(dev, { query: `{ trainerByNickname(nickname: "${BLOCKED_NICKNAME}") { id } }` }))).toEqual(REFUSED);
    const allowed = await post(dev, { query: text, variables: allowedVariables() });
    expect(allowed.body).toEqual({ data: { trainerByNickname: { id: String(me.trainer.id), nickname: me.trainer.nickname } } });
  });

  it('refuses a POST of a text graphql-jit has compiled', async () => {
    for (let i = 0; i < 12; i += 1) expect((await post(dev, { query: QUERY, variables: allowedVariables() })).body.errors).toBeUndefined();
    const before = await compiledRuns(dev);
    expect((await post(dev, { query: QUERY, variables: allowedVariables() })).body).toEqual({
      data: { trainerByNickname: { id: String(me.trainer.id) } },
    });
    // The text runs compiled now.
    expect((await compiledRuns(dev)) - before).toBe(1);
    expect(refusal(await post(dev, { query: QUERY, variables: blockedVariables }))).toEqual(REFUSED);
    expect((await compiledRuns(dev)) - before).toBe(1);
  });

  it('refuses a GET ?query=', async () => {
    expect(refusal(await get(dev, { query: QUERY, variables: JSON.stringify(blockedVariables) }))).toEqual(REFUSED);
  });

  it('refuses a document named by its APQ hash', async () => {
    const text = 'query Apq($nickname: String!) { trainerByNickname(nickname: $nickname) { id } }';
    const persistedQuery = { version: 1, sha256Hash: sha256(text) };
    const registered = await post(dev, { query: text, variables: allowedVariables(), extensions: { persistedQuery } });
    expect(registered.body.errors).toBeUndefined();
    expect(refusal(await post(dev, { variables: blockedVariables, extensions: { persistedQuery } }))).toEqual(REFUSED);
  });

  it('refuses a trusted document in production, by documentId (POST and GET) and by its text', async () => {
    const documentId = `sha256:${sha256(QUERY)}`;
    const before = await compiledRuns(prod);
    expect((await post(prod, { documentId, variables: { nickname: 'no-one-by-this-name' } })).body).toEqual({
      data: { trainerByNickname: null },
    });
    // A trusted document's plan is compiled at start: it runs compiled from the first request.
    expect((await compiledRuns(prod)) - before).toBe(1);
    expect(refusal(await post(prod, { documentId, variables: blockedVariables }))).toEqual(REFUSED);
    expect(refusal(await get(prod, { documentId, variables: JSON.stringify(blockedVariables) }))).toEqual(REFUSED);
    expect(refusal(await post(prod, { query: QUERY, variables: blockedVariables }))).toEqual(REFUSED);
    expect((await compiledRuns(prod)) - before).toBe(1);
  });

  it('answers what is refused before parsing through Apollo as well: the media type Apollo negotiates, and nothing parsed', async () => {
    const parsed = (t: TestApp) => counter(t, 'graphql_documents_parsed_total\\{step="parse"\\}');
    const accept = 'application/graphql-response+json';
    const ask = async (t: TestApp, body: Record<string, unknown>) => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { 'content-type': 'application/json', accept, ...authorization(t) },
        payload: JSON.stringify(body),
      });
      return [response.statusCode, response.headers['content-type'], response.json<GraphQLBody>().errors?.map((e) => e.extensions?.code)];
    };
    const before = [await parsed(dev), await parsed(prod)];
    const long = `{ __typename ${'#'.repeat(40_000)}\n}`;
    const repeated = `{ ${'me { id } '.repeat(60)}}`;
    const type = `${accept}; charset=utf-8`;
    expect(await ask(dev, { query: long })).toEqual([400, type, ['BAD_USER_INPUT']]);
    // The second time from the cache's verdict.
    for (let i = 0; i < 2; i += 1) expect(await ask(dev, { query: repeated })).toEqual([400, type, ['GRAPHQL_VALIDATION_FAILED']]);
    expect(await ask(prod, { query: '{ me { id } }' })).toEqual([200, type, ['PERSISTED_QUERY_NOT_FOUND']]);
    expect(await ask(prod, { documentId: `sha256:${'0'.repeat(64)}` })).toEqual([200, type, ['PERSISTED_QUERY_NOT_FOUND']]);
    expect([await parsed(dev), await parsed(prod)]).toEqual(before);
  });

  it('refuses a graphql-ws subscribe, and lets another trainer’s events through', async () => {
    const origin = await listen(dev);
    const other = await createTrainer(dev.app);
    const refused = watch(origin, me.token, blocked, SUBSCRIPTION);
    const allowed = watch(origin, me.token, String(other.trainer.id), SUBSCRIPTION);
    try {
      await until(() => refused.errors.length > 0, 'the refusal');
      expect(refused.errors.map((e) => [e.extensions?.code, e.message])).toEqual([['FORBIDDEN', MESSAGE]]);
      await allowed.connected;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(allowed.errors).toEqual([]);
    } finally {
      await refused.client.dispose();
      await allowed.client.dispose();
    }
  });
});

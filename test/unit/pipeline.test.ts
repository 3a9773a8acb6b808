import 'reflect-metadata';
import { GraphQLError, parse, type GraphQLSchema } from 'graphql';
import { DocumentCache, hashOf } from '../../src/graphql/document-cache';
import { createFormatError, graphqlError } from '../../src/graphql/format-error';
import { Pipeline, type DocumentCheck } from '../../src/graphql/pipeline';
import { buildGraphQLSchema } from '../../src/graphql/schema';
import { Metrics } from '../../src/ops/metrics';

/*
 * The pipeline's admission, asked directly (the WebSocket door's entry: every step in order), and
 * its one cache of documents. The doors themselves are tested from outside in
 * test/integration/document-policy.test.ts and the transport suites.
 */

const SUBSCRIPTION = 'subscription Events($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind } }';
const QUERY = 'query One($id: ID!) { trainer(id: $id) { id } }';

let schema: GraphQLSchema;
beforeAll(async () => {
  schema = await buildGraphQLSchema();
});

function pipeline(options: Partial<ConstructorParameters<typeof Pipeline>[1]> = {}) {
  const metrics = new Metrics();
  const made = new Pipeline(schema, { introspection: true, isProduction: false, trustedDocuments: undefined, metrics, ...options });
  /** What its metrics counted: documents parsed and validated, and how they came. */
  const counted = async () => {
    const [parsed, documents] = [(await metrics.documentsParsed.get()).values, (await metrics.documents.get()).values];
    const step = (value: string) => parsed.find((sample) => sample.labels.step === value)?.value ?? 0;
    const how = (value: string) => documents.find((sample) => sample.labels.how === value)?.value ?? 0;
    return { parsed: step('parse'), validated: step('validate'), byId: how('id'), byText: how('text'), refused: how('refused') };
  };
  return { made, counted };
}

const format = createFormatError({ isProduction: true });

/** The code and message of each error as a client gets them (the one formatter), or 'admitted'. */
function outcome(admitted: ReturnType<Pipeline['admitSubscription']>) {
  if (!('errors' in admitted)) return 'admitted';
  return admitted.errors.map((error) => {
    const formatted = format(error.toJSON(), error);
    return [formatted.extensions?.code, formatted.message];
  });
}

describe('Pipeline.admitSubscription', () => {
  it('admits a subscription with variables of their types, and parses and validates its text once', async () => {
    const { made, counted } = pipeline();
    expect(outcome(made.admitSubscription({ query: SUBSCRIPTION, variables: { trainerId: '1' } }))).toBe('admitted');
    expect(outcome(made.admitSubscription({ query: SUBSCRIPTION, variables: { trainerId: '2' } }))).toBe('admitted');
    expect(await counted()).toMatchObject({ parsed: 1, validated: 1 });
  });

  it('refuses at each step with the code of that step', async () => {
    const { made, counted } = pipeline();
    expect(outcome(made.admitSubscription({ query: `{ __typename }${' '.repeat(40_000)}` }))).toEqual([
      ['BAD_USER_INPUT', 'The query is longer than 32768 characters'],
    ]);
    // Refused before parsing: nothing was parsed.
    expect((await counted()).parsed).toBe(0);
    expect(outcome(made.admitSubscription({ query: 'subscription {' }))).toEqual([
      ['BAD_USER_INPUT', expect.stringMatching(/^Syntax Error/)],
    ]);
    expect(outcome(made.admitSubscription({ query: 'subscription { nothingHere }' }))).toEqual([
      ['GRAPHQL_VALIDATION_FAILED', expect.stringContaining('nothingHere')],
    ]);
    // A query over WebSocket: the transport check.
    expect(outcome(made.admitSubscription({ query: QUERY, variables: { id: '1' } }))).toEqual([
      ['BAD_USER_INPUT', 'Only subscriptions are taken here: send queries and mutations with POST /graphql'],
    ]);
    // A variable of the wrong type: named, without its value.
    const wrongType = outcome(made.admitSubscription({ query: SUBSCRIPTION, variables: { trainerId: { secret: 'x' } } }));
    expect(wrongType).toEqual([['BAD_USER_INPUT', expect.stringContaining('$trainerId')]]);
    expect(JSON.stringify(wrongType)).not.toContain('secret');
    const deep = JSON.parse(`${'['.repeat(200)}1${']'.repeat(200)}`) as unknown;
    expect(outcome(made.admitSubscription({ query: SUBSCRIPTION, variables: { trainerId: deep } }))).toEqual([
      ['BAD_USER_INPUT', expect.stringMatching(/nest arrays or objects deeper/)],
    ]);
  });

  it('remembers a refused text too: sent again, it is not parsed again', async () => {
    const { made, counted } = pipeline();
    for (let i = 0; i < 3; i += 1) made.admitSubscription({ query: 'subscription { nothingHere }' });
    expect(await counted()).toMatchObject({ parsed: 1, validated: 1 });
  });

  it('asks the added checks after the built-in ones, and answers their error', () => {
    const refuse: DocumentCheck = ({ variables }) => (variables.trainerId === '13' ? graphqlError('FORBIDDEN', 'Not this one') : undefined);
    const { made } = pipeline({ checks: [refuse] });
    expect(outcome(made.admitSubscription({ query: SUBSCRIPTION, variables: { trainerId: '13' } }))).toEqual([
      ['FORBIDDEN', 'Not this one'],
    ]);
    expect(outcome(made.admitSubscription({ query: SUBSCRIPTION, variables: { trainerId: '12' } }))).toBe('admitted');
  });

  it('in production with a manifest, admits its documents by id or by text and refuses any other before parsing it', async () => {
    const id = hashOf(SUBSCRIPTION);
    const { made, counted } = pipeline({
      isProduction: true,
      trustedDocuments: { file: 'manifest.json', documents: new Map([[id, SUBSCRIPTION]]) },
    });
    expect(outcome(made.admitSubscription({ documentId: `sha256:${id}`, variables: { trainerId: '1' } }))).toBe('admitted');
    expect(outcome(made.admitSubscription({ query: SUBSCRIPTION, variables: { trainerId: '1' } }))).toBe('admitted');
    const other = 'subscription Other($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind } }';
    expect(outcome(made.admitSubscription({ query: other, variables: { trainerId: '1' } }))).toEqual([
      ['PERSISTED_QUERY_NOT_FOUND', expect.stringMatching(/^PersistedQueryNotFound/)],
    ]);
    expect(outcome(made.admitSubscription({ documentId: `sha256:${'0'.repeat(64)}` }))).toEqual([
      ['PERSISTED_QUERY_NOT_FOUND', expect.stringMatching(/^PersistedQueryNotFound/)],
    ]);
    // The manifest's document was parsed at start, not per request; the other was never parsed.
    expect((await counted()).parsed).toBe(0);
    expect(await counted()).toMatchObject({ byId: 1, byText: 1, refused: 2 });
  });

  it('stops start-up on a manifest document that breaks a rule, naming it', () => {
    const bad = 'subscription { nothingHere }';
    expect(() =>
      pipeline({ isProduction: true, trustedDocuments: { file: 'manifest.json', documents: new Map([[hashOf(bad), bad]]) } }),
    ).toThrow(/manifest\.json document [0-9a-f]{64} does not validate/);
  });
});

describe('DocumentCache', () => {
  const documentOf = (text: string) => ({ document: parse(text) });

  it('is Apollo’s document store: a document set under Apollo’s key is found by the text’s hash, and the other way round', async () => {
    const cache = new DocumentCache();
    const store = cache.apolloStore();
    const hash = hashOf(QUERY);
    expect(await store.get(`schemahash:${hash}`)).toBeUndefined();
    const { document } = documentOf(QUERY);
    await store.set(`schemahash:${hash}`, document);
    expect(cache.get(hash)?.verdict).toEqual({ document });
    const other = hashOf('{ __typename }');
    cache.remember(other, documentOf('{ __typename }'));
    expect(await store.get(`another-prefix:${other}`)).toBe((cache.get(other)!.verdict as { document: unknown }).document);
  });

  it('does not hand a refused text to Apollo as a document', async () => {
    const cache = new DocumentCache();
    const hash = hashOf('{');
    cache.remember(hash, { step: 'parse', errors: [new GraphQLError('Syntax Error')] });
    expect(await cache.apolloStore().get(`x:${hash}`)).toBeUndefined();
  });

  it('weighs the text each document keeps: distinct long texts are evicted, pinned entries never', () => {
    const pinnedHash = hashOf(QUERY);
    const pinned = { verdict: documentOf(QUERY), uses: 0, plan: null };
    const cache = new DocumentCache(new Map([[pinnedHash, pinned]]));
    const hashes: string[] = [];
    for (let i = 0; i < 400; i += 1) {
      const text = `#${i}${'x'.repeat(90_000)}\n{ __typename }`;
      hashes.push(hashOf(text));
      cache.remember(hashes[i], documentOf(text));
    }
    const kept = hashes.filter((hash) => cache.get(hash) !== undefined).length;
    // 32 MiB holds about 180 of them, each counted as twice its 90 KB text.
    expect(kept).toBeGreaterThan(100);
    expect(kept).toBeLessThan(200);
    // The most recent are those kept.
    expect(cache.get(hashes[399])).toBeDefined();
    expect(cache.get(hashes[0])).toBeUndefined();
    expect(cache.get(pinnedHash)).toBe(pinned);
    // Recording a pinned text again changes nothing.
    expect(cache.remember(pinnedHash, documentOf(QUERY))).toBe(pinned);
  });
});

describe('Pipeline.weightOf', () => {
  const EVENTS = 'subscription Events($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind creature { id name level } } }';

  it('weighs a request by the cost its document was last measured at, found by its text or its id; 1 before it was measured', () => {
    const { made } = pipeline();
    expect(made.weightOf({ query: EVENTS })).toBe(1);
    expect(outcome(made.admitSubscription({ query: EVENTS, variables: { trainerId: '1' } }))).toBe('admitted');
    const cost = made.weightOf({ query: EVENTS });
    // creatureEvents, kind, creature and its three fields.
    expect(cost).toBe(6);
    expect(made.weightOf({ documentId: `sha256:${hashOf(EVENTS)}` })).toBe(cost);
    expect(made.weightOf({ documentId: hashOf(EVENTS).toUpperCase() })).toBe(cost);
  });

  it('never weighs what was refused for its cost: a document too large to measure weighs 1 after its refusal', () => {
    const { made } = pipeline();
    // Ten fragments, each spreading the next three times: 3^10 selections once spread out.
    const fragments = Array.from(
      { length: 10 },
      (_, i) => `fragment F${i} on CreatureEvent { kind${i < 9 ? ` ...F${i + 1} ...F${i + 1} ...F${i + 1}` : ''} }`,
    );
    const huge = `subscription Huge($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { ...F0 } } ${fragments.join(' ')}`;
    const refused = outcome(made.admitSubscription({ query: huge, variables: { trainerId: '1' } }));
    expect(refused).toEqual([['BAD_USER_INPUT', expect.stringContaining('too large to measure')]]);
    expect(made.weightOf({ query: huge })).toBe(1);
    // A document it has measured keeps the cost it ran at.
    made.admitSubscription({ query: EVENTS, variables: { trainerId: '1' } });
    expect(made.weightOf({ query: EVENTS })).toBe(6);
  });

  it('weighs 1 what it cannot look up without parsing: no document, a text over the length limit, an id of nothing', () => {
    const { made } = pipeline();
    expect(made.weightOf(undefined)).toBe(1);
    expect(made.weightOf({ query: `{ __typename }${' '.repeat(40_000)}` })).toBe(1);
    expect(made.weightOf({ documentId: 'not-a-hash' })).toBe(1);
    expect(made.weightOf({ documentId: `sha256:${'0'.repeat(64)}` })).toBe(1);
  });
});

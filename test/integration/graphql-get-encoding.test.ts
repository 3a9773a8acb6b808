import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createTrainer } from '../helpers/factories';
import type { GraphQLBody } from '../helpers/graphql';

/*
 * A GET /graphql's parameters are decoded once, and the document policy's checks read the very
 * text Apollo runs: no encoding of the query string (an escape that does not decode, a double
 * encoding, `+` or `%20` for a space, a parameter given twice) lets a document past a check,
 * whether it comes by text, by documentId or by APQ hash. The check used here is the fragment
 * limit (20 definitions), a text check made before anything parses the text.
 */
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const FRAGMENT_LIMIT = 'The document defines more than 20 fragments';
/** A document of `count` fragment definitions, each spread once. */
const fragments = (count: number, name = 'F') =>
  `{ ${Array.from({ length: count }, (_, i) => `...${name}${i}`).join(' ')} } ${Array.from(
    { length: count },
    (_, i) => `fragment ${name}${i} on Query { __typename }`,
  ).join(' ')}`;
const TRUSTED = 'query Trusted($nickname: String!) { trainerByNickname(nickname: $nickname) { id } }';

/** `text` percent-encoded with `+` for spaces (as URLSearchParams and HTML forms write it). */
const plus = (text: string) => new URLSearchParams({ q: text }).toString().slice(2);
/** `text` percent-encoded with `%20` for spaces. */
const percent20 = (text: string) => encodeURIComponent(text);

describe.each(databases)('GET /graphql decodes its query string once, on %s', (kind) => {
  let dev: TestApp;
  let prod: TestApp;
  let trusted: TestApp;
  let token = '';

  beforeAll(async () => {
    dev = await startTestApp(kind);
    prod = await startTestApp(kind, { NODE_ENV: 'production' });
    const dir = mkdtempSync(join(tmpdir(), 'get-encoding-manifest-'));
    const manifestFile = join(dir, 'persisted-documents.json');
    writeFileSync(manifestFile, JSON.stringify({ [`sha256:${sha256(TRUSTED)}`]: TRUSTED }));
    trusted = await startTestApp(kind, { NODE_ENV: 'production', TRUSTED_DOCUMENTS: manifestFile });
    token = (await createTrainer(trusted.app)).token;
  });
  afterAll(async () => {
    await dev?.close();
    await prod?.close();
    await trusted?.close();
  });

  /** A GET whose search string is sent as written (no encoding added). */
  const get = async (t: TestApp, search: string) => {
    const response = await t.app.inject({
      method: 'GET',
      url: `/graphql?${search}`,
      headers: { 'apollo-require-preflight': 'true', authorization: `Bearer ${token}` },
    });
    const body = response.json<GraphQLBody>();
    return [response.statusCode, body.errors?.[0]?.extensions?.code ?? null, body.errors?.[0]?.message ?? null, body.data ?? null];
  };
  const fragmentLimit = [400, 'GRAPHQL_VALIDATION_FAILED', FRAGMENT_LIMIT, null];
  const undecodable = [400, 'BAD_USER_INPUT', expect.stringMatching(/query string.*percent-encoding/i), null];
  // The message names no parameter: nothing of the caller's text is echoed back.
  const twice = [400, 'BAD_USER_INPUT', 'The query string gives one of its parameters more than once', null];
  /** Development and production (without a manifest, any document runs). */
  const apps = () => [dev, prod];

  it('refuses 25 fragments by query text however the text is encoded', async () => {
    const text = fragments(25);
    for (const t of apps()) {
      expect(await get(t, `query=${plus(text)}`)).toEqual(fragmentLimit);
      expect(await get(t, `query=${percent20(text)}`)).toEqual(fragmentLimit);
      // The key encoded too.
      expect(await get(t, `%71uery=${percent20(text)}`)).toEqual(fragmentLimit);
      // Encoded twice: decoded once, `%23` stays text inside the comment.
      expect(await get(t, `query=${plus(text)}+%23+%2523%2523`)).toEqual(fragmentLimit);
      expect(await get(t, `query=${percent20(`${text} # %23`)}`)).toEqual(fragmentLimit);
      // An escape that does not decode (%ZZ, or bytes that are not UTF-8) inside a comment: the
      // whole query string is refused, not read one way by the checks and another by Apollo.
      expect(await get(t, `query=${plus(text)}%23%ZZ`)).toEqual(undecodable);
      expect(await get(t, `query=${percent20(text)}%23%FF`)).toEqual(undecodable);
      expect(await get(t, `query=${plus(text)}&operationName=%ZZ`)).toEqual(undecodable);
      // A parameter given twice: which one would run is not the checks' guess.
      expect(await get(t, `query=${plus(text)}&query=${plus('{ __typename }')}`)).toEqual(twice);
      expect(await get(t, `query=${plus('{ __typename }')}&query=${plus(text)}`)).toEqual(twice);
    }
  });

  it('runs a small document however its text is encoded', async () => {
    const text = `${fragments(2)} # a %23 comment`;
    const data = { __typename: 'Query' };
    for (const t of apps()) {
      expect(await get(t, `query=${plus(text)}`)).toEqual([200, null, null, data]);
      expect(await get(t, `query=${percent20(text)}`)).toEqual([200, null, null, data]);
      expect(await get(t, `query=${plus(fragments(2))}+%23+a+%2523+comment`)).toEqual([200, null, null, data]);
    }
  });

  it('refuses an APQ registration of 25 fragments however encoded, and registers nothing', async () => {
    const text = fragments(25, 'Apq');
    // The text as a lenient decoder reads `...%23%ZZ`: `# %ZZ` at its end.
    const leniently = `${text} #%ZZ`;
    for (const t of apps()) {
      for (const [sent, search] of [
        [text, `query=${plus(text)}`],
        [leniently, `query=${plus(text)}+%23%ZZ`],
        [`${text} # %23`, `query=${plus(text)}+%23+%2523`],
      ]) {
        const extensions = plus(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: sha256(sent) } }));
        const answer = await get(t, `${search}&extensions=${extensions}`);
        expect(answer.slice(0, 2)).toEqual([400, sent === leniently ? 'BAD_USER_INPUT' : 'GRAPHQL_VALIDATION_FAILED']);
        // Nothing was registered: the hash alone finds no document.
        expect(await get(t, `extensions=${extensions}`)).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound', null]);
      }
      // The extensions themselves undecodable.
      expect(await get(t, `extensions=${plus(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: sha256(text) } }))}%ZZ`)).toEqual(
        undecodable,
      );
    }
  });

  it('runs a trusted document by documentId with its variables however encoded, and refuses what does not decode', async () => {
    const documentId = `sha256:${sha256(TRUSTED)}`;
    const variables = JSON.stringify({ nickname: 'no one by this name' });
    const found = [200, null, null, { trainerByNickname: null }];
    expect(await get(trusted, `documentId=${plus(documentId)}&variables=${plus(variables)}`)).toEqual(found);
    expect(await get(trusted, `documentId=${percent20(documentId)}&variables=${percent20(variables)}`)).toEqual(found);
    expect(await get(trusted, `documentId=${plus(documentId)}&variables=${plus(variables)}%ZZ`)).toEqual(undecodable);
    expect(await get(trusted, `documentId=${plus(documentId)}&variables=${plus(variables)}&variables=%7B%7D`)).toEqual(twice);
    // A text sent along must be the document's own, decoded once.
    expect(await get(trusted, `documentId=${plus(documentId)}&query=${plus(TRUSTED)}&variables=${plus(variables)}`)).toEqual(found);
    expect(await get(trusted, `documentId=${plus(documentId)}&query=${plus(fragments(25))}%23%ZZ`)).toEqual(undecodable);
    expect(await get(trusted, `documentId=${plus(documentId)}&query=${plus(TRUSTED)}&query=${plus(fragments(25))}`)).toEqual(twice);
    // Any other text, by query, is not a trusted document in production.
    expect((await get(trusted, `query=${plus(fragments(25))}%23%ZZ`)).slice(0, 2)).toEqual([400, 'BAD_USER_INPUT']);
  });
});

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';

/*
 * The README's examples, taken from the README file itself and run as a reader would: the
 * GraphQL block operation by operation (as pasted into an IDE, with the token header once
 * logged in and the variables the README tells the reader to fill), then the shell examples
 * against a real listening server.
 */

const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
const blocks = (language: string) => [...readme.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);

describe.each(databases)("the README's examples on %s", (kind) => {
  let t: TestApp;
  let origin: string;
  beforeAll(async () => {
    t = await startTestApp(kind);
    origin = await listen(t);
  });
  afterAll(async () => t.close());

  it('runs every operation of the GraphQL block, pasted whole, in order, without an error', async () => {
    expect(blocks('graphql')).toHaveLength(1);
    const document = blocks('graphql')[0];
    const operations = parse(document).definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    expect(operations.map((o) => o.name?.value)).toEqual(['Register', 'Login', 'Catch', 'Rename', 'Profile', 'Browse', 'Release']);

    let token: string | undefined;
    const variables: Record<string, string> = {};
    for (const operation of operations) {
      const operationName = operation.name!.value;
      const res = await t.app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        payload: { query: document, operationName, variables },
      });
      const body = res.json<{ data?: Record<string, { id?: string; token?: string; trainer?: { id: string } }>; errors?: unknown }>();
      expect([operationName, res.statusCode, body.errors]).toEqual([operationName, 200, undefined]);
      if (operationName === 'Login') {
        token = body.data!.authenticate.token;
        variables.trainerId = body.data!.authenticate.trainer!.id;
      }
      if (operationName === 'Catch') variables.creatureId = body.data!.createCreature.id!;
    }
    expect(token).toEqual(expect.any(String));
    // Release gave back the creature that Catch made (and Rename renamed).
    const [{ n }] = await t.app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature');
    expect(Number(n)).toBe(0);
  });

  it('runs the curl examples as written, against a real server', async () => {
    const scripts = blocks('sh').filter((block) => block.includes('curl'));
    expect(scripts.length).toBeGreaterThanOrEqual(2);
    const outputs: string[] = [];
    for (const script of scripts) {
      const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script.replaceAll('http://localhost:4000', origin)], {
        timeout: 30_000,
      });
      outputs.push(stdout);
    }
    const all = outputs.join('\n');
    expect(all).not.toMatch(/"errors"|"code":/);
    // The JSON bodies printed (one a line: curl -w '\n'), compared as values, whatever the order of their keys.
    const bodies = all
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as unknown);
    // GraphQL: the trainer registered by the GraphQL block reads itself; REST: the whole walk ends with a 204.
    expect(bodies).toContainEqual({ data: { me: expect.objectContaining({ nickname: 'gary' }) } });
    expect(bodies).toContainEqual(
      expect.objectContaining({ items: [expect.objectContaining({ id: expect.any(Number), name: 'Tangela' })] }),
    );
    expect(all).toMatch(/^HTTP\/1\.1 204 /m);
    // The PATCHes, the logout (204 again): its session is gone; a password change and a deletion (two more).
    expect(bodies).toContainEqual(expect.objectContaining({ name: 'Tangela', speciesId: 114, level: 12 }));
    expect(bodies).toContainEqual(
      expect.objectContaining({
        nickname: 'erika',
        firstName: 'Erika',
        lastName: 'Celadon',
        team: 'MYSTIC',
        creaturesOwned: 1,
        email: 'erika@example.com',
      }),
    );
    expect(all.match(/^HTTP\/1\.1 204 /gm)).toHaveLength(4);
    const [{ gone }] = await t.app.dataSource.query<{ gone: number | string }[]>(
      "SELECT COUNT(*) AS gone FROM trainer WHERE nickname = 'sabrina'",
    );
    expect(Number(gone)).toBe(0);
    const [{ n }] = await t.app.dataSource.query<{ n: number | string }[]>(
      "SELECT COUNT(*) AS n FROM trainer_session s JOIN trainer t ON t.id = s.trainer_id WHERE t.nickname = 'erika'",
    );
    expect(Number(n)).toBe(0);
  });
});

import { auditServer } from 'graphql-http';
import { startTestApp, type TestApp } from '../helpers/app';

/*
 * GraphQL-over-HTTP conformance: graphql-http's audit against the running server. Every MUST
 * passes; the SHOULD/MAY items it reports are choices (400 for documents that do not parse or
 * validate; GET needs Apollo's CSRF header), not failures.
 */
describe('GraphQL over HTTP audit', () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await startTestApp('sqlite');
    url = `${await t.app.listen({ port: 0, host: '127.0.0.1' })}/graphql`;
  });
  afterAll(async () => t.close());

  it('passes every MUST of the audit', async () => {
    const results = await auditServer({ url });
    const failedMusts = results.filter((r) => r.status === 'error').map((r) => `${r.name}: ${'reason' in r ? r.reason : ''}`);
    expect(failedMusts).toEqual([]);
    expect(results.filter((r) => r.name.startsWith('MUST')).length).toBeGreaterThan(10);
  });
});

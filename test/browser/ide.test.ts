/// <reference lib="dom" />
import type { Browser } from 'playwright-core';
import { IDE_PATH, SANDBOX_WAIT_MS } from '../../src/graphql/ide';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';
import { chromiumPath, launchChromium, watchProblems } from '../helpers/browser';
import { createTrainer } from '../helpers/factories';

/*
 * The development IDE at /graphql in a real headless Chromium: offline, the page moves on by
 * itself to GraphiQL from the service's own files, which runs a query and a subscription over
 * WebSocket; online (Apollo's CDN
 * answered here by stubs), Apollo Sandbox is embedded. Neither page breaks its own
 * Content-Security-Policy.
 */

const SANDBOX_STUB = `window.EmbeddedSandbox = function (options) {
  window.sandboxOptions = options;
  var frame = document.createElement('iframe');
  frame.src = 'https://sandbox.embed.apollographql.com/sandbox/explorer';
  document.querySelector(options.target).appendChild(frame);
  // The real embed runs the IDE's operations from this page, against the endpoint.
  fetch(options.initialEndpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' })
    .then(function (response) { return response.json(); })
    .then(function (body) { window.sandboxAnswer = body; });
};`;

const isLocal = (url: URL) => url.hostname === '127.0.0.1';

(chromiumPath ? describe.each(databases) : describe.skip.each(databases))('the GraphQL IDE in Chromium (%s)', (kind) => {
  let t: TestApp;
  let browser: Browser;
  let origin: string;
  beforeAll(async () => {
    t = await startTestApp(kind);
    origin = await listen(t);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('offline: opens the local GraphiQL within 5 s without a click, runs { __typename }, with no console error or CSP violation', async () => {
    const page = await browser.newPage();
    const problems = await watchProblems(page);
    // No internet: everything that is not this service fails as a disconnected network does.
    await page.route(
      (url) => !isLocal(url),
      (route) => route.abort('internetdisconnected'),
    );
    await page.goto(`${origin}/graphql?query=${encodeURIComponent('{ __typename }')}`);
    await page.waitForURL((url) => url.pathname === IDE_PATH, { timeout: 5000 });
    const button = page.locator('.graphiql-execute-button');
    await button.waitFor({ timeout: 5000 });

    await button.click();
    const result = page.locator('.result-window');
    await expect(result.filter({ hasText: '"__typename": "Query"' }).waitFor({ timeout: 5000 })).resolves.toBeUndefined();
    // A dialog inserts its own <style> element: the page's nonce lets exactly that through.
    await page.locator('[aria-label="Open settings dialog"]').click();
    await page.locator('[role="dialog"]').waitFor();

    expect(problems.consoleErrors.filter((text) => text.includes(IDE_PATH))).toEqual([]);
    expect(problems.pageErrors).toEqual([]);
    expect(await problems.cspViolations()).toEqual([]);
    await page.close();
  });

  it('offline: runs a creatureEvents subscription over WebSocket with the token of the Headers tab, showing events as they come', async () => {
    const owner = await createTrainer(t.app);
    const page = await browser.newPage();
    const problems = await watchProblems(page);
    await page.route(
      (url) => !isLocal(url),
      (route) => route.abort('internetdisconnected'),
    );
    const subscription = `subscription { creatureEvents(trainerId: "${owner.trainer.id}") { kind sequence creature { name } } }`;
    await page.goto(`${origin}${IDE_PATH}?query=${encodeURIComponent(subscription)}`);
    await page.locator('.graphiql-execute-button').waitFor({ timeout: 5000 });
    await page.getByRole('button', { name: 'Headers' }).click();
    await page.locator('.graphiql-editor-tool .graphiql-editor:visible .CodeMirror').click();
    // insertText, not typing: the editor would close the brackets a second time.
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${owner.token}` }));
    await page.locator('.graphiql-execute-button').click();
    const result = page.locator('.result-window');
    let n = 0;
    const deadline = Date.now() + 10_000;
    while (!(await result.textContent())?.includes('"kind": "CREATED"')) {
      if (Date.now() > deadline) throw new Error(`no event in GraphiQL: ${await result.textContent()}`);
      n += 1;
      const created = await t.app.inject({
        method: 'POST',
        url: `/trainer/${owner.trainer.id}/creature`,
        headers: { authorization: `Bearer ${owner.token}` },
        payload: { name: `Live ${n}`, speciesId: 25 },
      });
      expect(created.statusCode).toBe(201);
      await page.waitForTimeout(300);
    }
    expect(await result.textContent()).toMatch(/"name": "Live \d+"/);
    expect(problems.pageErrors).toEqual([]);
    expect(await problems.cspViolations()).toEqual([]);
    await page.close();
  });

  it('online (the CDN answered by stubs): embeds Apollo Sandbox, whose requests reach the API, with no CSP violation', async () => {
    const page = await browser.newPage();
    const problems = await watchProblems(page);
    await page.route('https://embeddable-sandbox.cdn.apollographql.com/**', (route) =>
      route.fulfill({ contentType: 'text/javascript', body: SANDBOX_STUB }),
    );
    await page.route('https://sandbox.embed.apollographql.com/**', (route) =>
      route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>Sandbox</title><p>stub</p>' }),
    );
    await page.route(
      (url) => !isLocal(url) && !url.hostname.endsWith('.apollographql.com'),
      (route) => route.abort('internetdisconnected'),
    );
    await page.goto(`${origin}/graphql`);
    await page.waitForFunction(() => (window as unknown as { sandboxAnswer?: unknown }).sandboxAnswer !== undefined, null, {
      timeout: 5000,
    });
    expect(await page.evaluate(() => (window as unknown as { sandboxAnswer: unknown }).sandboxAnswer)).toEqual({
      data: { __typename: 'Query' },
    });
    expect(
      await page.evaluate(() => (window as unknown as { sandboxOptions: { initialEndpoint: string } }).sandboxOptions.initialEndpoint),
    ).toBe(`${origin}/graphql`);
    await page.frameLocator('#sandbox iframe').locator('text=stub').waitFor({ timeout: 5000 });
    // Well past the offline fallback's wait: the page stays on Sandbox.
    await page.waitForTimeout(SANDBOX_WAIT_MS + 500);
    expect(new URL(page.url()).pathname).toBe('/graphql');

    expect(problems.consoleErrors).toEqual([]);
    expect(problems.pageErrors).toEqual([]);
    expect(await problems.cspViolations()).toEqual([]);
    await page.close();
  });
});

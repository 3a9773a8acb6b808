/// <reference lib="dom" />
import type { Browser } from 'playwright-core';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';
import { chromiumPath, launchChromium } from '../helpers/browser';
import { createThroughApi, createTrainer } from '../helpers/factories';

/*
 * A browser's own EventSource on /graphql/stream, in a real headless Chromium: the GET form of
 * graphql-sse's distinct connections mode, with the token as the access_token query parameter
 * (EventSource sends no headers of its own), resuming with `after`.
 */

declare global {
  interface Window {
    received?: { sequence: number; name: string }[];
    streamErrors?: number;
  }
}

(chromiumPath ? describe.each(databases) : describe.skip.each(databases))('an EventSource in Chromium on /graphql/stream (%s)', (kind) => {
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

  it('receives a trainer’s creature events, the missed ones first when it gives after', async () => {
    const owner = await createTrainer(t.app);
    const create = (name: string) => createThroughApi(t.app, owner, name);
    await create('Before the page');
    const page = await browser.newPage();
    // A page of the service's origin as a frontend would be (the service's own pages forbid connections in their CSP).
    await page.route(`${origin}/frontend`, (route) =>
      route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>frontend</title>' }),
    );
    await page.goto(`${origin}/frontend`);
    const query = 'subscription($t: ID!, $after: Int) { creatureEvents(trainerId: $t, after: $after) { sequence creature { name } } }';
    const url = `/graphql/stream?${new URLSearchParams({
      query,
      variables: JSON.stringify({ t: String(owner.trainer.id), after: 0 }),
      access_token: owner.token,
    }).toString()}`;
    await page.evaluate((streamUrl) => {
      window.received = [];
      window.streamErrors = 0;
      const source = new EventSource(streamUrl);
      source.addEventListener('next', (event) => {
        const { data } = JSON.parse((event as MessageEvent<string>).data) as {
          data?: { creatureEvents: { sequence: number; creature: { name: string } } };
        };
        if (data) window.received!.push({ sequence: data.creatureEvents.sequence, name: data.creatureEvents.creature.name });
      });
      source.addEventListener('complete', () => source.close());
      source.onerror = () => (window.streamErrors! += 1);
    }, url);
    await page.waitForFunction(() => window.received?.length === 1, undefined, { timeout: 5000 });
    await create('Seen live');
    await page.waitForFunction(() => window.received?.length === 2, undefined, { timeout: 5000 });
    expect(await page.evaluate(() => window.received)).toEqual([
      { sequence: 1, name: 'Before the page' },
      { sequence: 2, name: 'Seen live' },
    ]);
    expect(await page.evaluate(() => window.streamErrors)).toBe(0);
    await page.close();
  });
});

/// <reference lib="dom" />
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

declare global {
  interface Window {
    /** The CSP violations watchProblems's init script collects in the page. */
    cspViolations?: string[];
  }
}

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

/**
 * A system Chromium (Debian's `chromium` package; CHROMIUM_PATH names another). No browser is
 * downloaded at install time. Without one, browser suites are skipped with a message, except
 * with CI=true, where they fail.
 */
export function findChromium(): string | undefined {
  const given = process.env.CHROMIUM_PATH;
  if (given) return given;
  return CANDIDATES.find((path) => existsSync(path));
}

export const chromiumPath = findChromium();
if (!chromiumPath) {
  const message = 'No Chromium found (install Debian\'s "chromium" package or set CHROMIUM_PATH)';
  if (process.env.CI === 'true') throw new Error(`${message}: the browser tests cannot run, and CI=true requires them`);
  process.stderr.write(`\n*** ${message}: the browser tests are SKIPPED. ***\n\n`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    // As root in a container there is no user namespace for Chromium's sandbox; the other flags
    // stop it calling Google's services, which a closed network refuses.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** What a page says went wrong: console errors, uncaught exceptions and CSP violations, from the next navigation on. */
export interface PageProblems {
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
  cspViolations(): Promise<string[]>;
}

export async function watchProblems(page: Page): Promise<PageProblems> {
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.message}`));
  await page.addInitScript(() => {
    const seen: string[] = [];
    window.cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (event) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  return {
    consoleErrors,
    pageErrors,
    cspViolations: async () => {
      const seen = await page.evaluate(() => window.cspViolations);
      if (!seen) throw new Error("The page has no CSP watcher: watchProblems's init script did not run in it");
      return seen;
    },
  };
}

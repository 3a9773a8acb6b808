import { Redis } from 'ioredis';

/** Where the tests find Redis (REDIS_TEST_URL, else the local one). */
export const REDIS_TEST_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether Redis answers at `url`. Under CI=true an unreachable Redis fails the suite; otherwise
 * the suite's Redis tests are skipped with a loud warning naming `what`.
 */
export async function redisReachable(what: string, url = REDIS_TEST_URL): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  const reachable = await probe.connect().then(
    () => probe.ping().then(() => true),
    () => false,
  );
  probe.disconnect();
  if (!reachable && process.env.CI === 'true') throw new Error(`Redis is required when CI=true but ${url} is unreachable`);
  if (!reachable) process.stderr.write(`\n*** Redis unreachable at ${url}: ${what} SKIPPED ***\n`);
  return reachable;
}

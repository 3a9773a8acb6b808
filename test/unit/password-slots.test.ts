import { availableParallelism } from 'node:os';

// A probe around Node's scrypt (the real one still runs): how many hashes run at once.
const probe = { running: 0, peak: 0 };
jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof import('node:crypto')>('node:crypto');
  return {
    ...actual,
    scrypt: (...args: unknown[]) => {
      const callback = args.pop() as (error: Error | null, key: Buffer) => void;
      probe.running += 1;
      probe.peak = Math.max(probe.peak, probe.running);
      (actual.scrypt as (...a: unknown[]) => void)(...args, (error: Error | null, key: Buffer) => {
        probe.running -= 1;
        callback(error, key);
      });
    },
  };
});

import { PasswordHasher } from '../../src/auth/password';

describe('password hashing under a burst', () => {
  it('runs at most one hash fewer than there are cores at a time (at least one), and answers them all', async () => {
    const burst = 2 * availableParallelism() + 2;
    const hasher = new PasswordHasher();
    const hashes = await Promise.all(Array.from({ length: burst }, (_, i) => hasher.hash(`burst-password-${i}`)));
    await expect(hasher.verify('burst-password-0', hashes[0])).resolves.toBe(true);
    expect(probe.peak).toBe(Math.max(1, availableParallelism() - 1));
  });

  it('gives each app its own queue: two hashers built with one slot each run two hashes at once', async () => {
    probe.peak = 0;
    const [a, b] = [new PasswordHasher(1), new PasswordHasher(1)];
    await Promise.all([a.hash('first-hasher-1'), a.hash('first-hasher-2'), b.hash('second-hasher-1'), b.hash('second-hasher-2')]);
    expect(probe.peak).toBe(2);
  });
});

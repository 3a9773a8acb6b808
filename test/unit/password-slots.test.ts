import { availableParallelism } from 'node:os';

// A probe around Node's scrypt (the real one still runs): how many hashes run at once.
const probe = { running: 0, peak: 0, started: [] as string[] };
jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof import('node:crypto')>('node:crypto');
  return {
    ...actual,
    scrypt: (...args: unknown[]) => {
      const callback = args.pop() as (error: Error | null, key: Buffer) => void;
      probe.started.push(String(args[0]));
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
import { RefusalDelay } from '../../src/auth/refusal-delay';

describe('password hashing under a burst', () => {
  it('runs at most one hash fewer than there are cores at a time (at least one), and answers every one its queue holds', async () => {
    const slots = Math.max(1, availableParallelism() - 1);
    const hasher = new PasswordHasher();
    // One running and four waiting per slot: the most the registration queue takes.
    const hashes = await Promise.all(Array.from({ length: 5 * slots }, (_, i) => hasher.hash(`burst-password-${i}`)));
    await expect(hasher.verify('burst-password-0', hashes[0])).resolves.toBe(true);
    expect(probe.peak).toBe(slots);
  });

  it('gives each app its own queue: two hashers built with one slot each run two hashes at once', async () => {
    probe.peak = 0;
    const [a, b] = [new PasswordHasher(1), new PasswordHasher(1)];
    await Promise.all([a.hash('first-hasher-1'), a.hash('first-hasher-2'), b.hash('second-hasher-1'), b.hash('second-hasher-2')]);
    expect(probe.peak).toBe(2);
  });

  it('gives a free slot to a waiting login before waiting registrations, so a registration flood cannot starve logins', async () => {
    probe.started = [];
    const hasher = new PasswordHasher(1);
    const stored = await hasher.hash('login-password');
    probe.started = [];
    const registrations = ['reg-1', 'reg-2', 'reg-3'].map((password) => hasher.hash(password));
    const login = hasher.verify('login-password', stored);
    await Promise.all([...registrations, login]);
    await expect(login).resolves.toBe(true);
    // reg-1 had the slot already; the login came last but went next.
    expect(probe.started).toEqual(['reg-1', 'login-password', 'reg-2', 'reg-3']);
  });

  it('refuses a registration with RATE_LIMITED, before hashing, when its queue is full (4 waiting per slot)', async () => {
    const hasher = new PasswordHasher(1);
    probe.started = [];
    const accepted = Array.from({ length: 5 }, (_, i) => hasher.hash(`queued-${i}`));
    await expect(hasher.hash('one-too-many')).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfter: 1 });
    await Promise.all(accepted);
    expect(probe.started).not.toContain('one-too-many');
    // A login still gets in: its own queue is not full.
    await expect(hasher.verify('x', await hasher.hash('after'))).resolves.toBe(false);
  });

  it('holds a refusal back by its RefusalDelay before rejecting, and still never hashes it', async () => {
    const hasher = new PasswordHasher(1, new RefusalDelay(300));
    probe.started = [];
    const accepted = Array.from({ length: 5 }, (_, i) => hasher.hash(`held-${i}`));
    const sent = Date.now();
    await expect(hasher.hash('held-too-many')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(Date.now() - sent).toBeGreaterThanOrEqual(290);
    await Promise.all(accepted);
    expect(probe.started).not.toContain('held-too-many');
  });
});

import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import pLimit from 'p-limit';

/*
 * scrypt from Node's crypto: it runs in libuv's thread pool, so hashing never blocks the
 * event loop. Parameters are one of OWASP's equivalent scrypt settings (N=2^15, r=8, p=3) and
 * are stored in each hash, so they can be changed later without breaking existing passwords.
 *
 * Why this one of OWASP's settings, measured (RSS of the service after 60 logins, /proc): its
 * 32 MiB block is above glibc's largest mmap threshold, so every hash maps its memory and gives
 * it back. The 8 MiB of N=2^13, p=10 stays in the pool threads' malloc arenas once freed (glibc
 * raises its mmap threshold to the size of the first block freed): about 33 MB more RSS for good.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 3 } as const;

/*
 * Hashes run one fewer at a time than there are cores (at least one): a burst of logins or
 * registrations then queues for the hash instead of taking every core (and 32 MiB per thread)
 * from the requests that need none. Per process, like the thread pool it guards.
 * Measured in `npm run bench` (trainer(id) during 20 concurrent logins).
 */
const hashSlots = pLimit(Math.max(1, availableParallelism() - 1));
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
const PREFIX = 'scrypt';

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return hashSlots(
    () =>
      new Promise<Buffer>((resolve, reject) => {
        scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key)));
      }),
  );
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await derive(password, salt, PARAMS);
  return [PREFIX, PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== PREFIX) return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const expected = Buffer.from(parts[5], 'base64url');
  const actual = await derive(password, Buffer.from(parts[4], 'base64url'), { N, r, p });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A hash of a random password, computed once, to verify against when the email is unknown:
 * the answer then takes as long as for a wrong password and gives nothing away. Kept per
 * process, not per app: it is an immutable value that costs a full hash to make.
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(18).toString('base64url'));
  return decoy;
}

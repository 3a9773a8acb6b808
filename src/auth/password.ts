import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { AppError } from '../errors';
import { RefusalDelay } from './refusal-delay';

/*
 * scrypt from Node's crypto: it runs in libuv's thread pool, so hashing never blocks the
 * event loop. Parameters are one of OWASP's equivalent scrypt settings (N=2^15, r=8, p=3) and
 * are stored in each hash, so they can be changed later without breaking existing passwords.
 *
 * Why this one of OWASP's settings, measured (RSS of the service after many logins): its
 * 32 MiB block is above glibc's largest mmap threshold, so every hash maps its memory and gives
 * it back. The 8 MiB of N=2^13, p=10 stays in the pool threads' malloc arenas once freed (glibc
 * raises its mmap threshold to the size of the first block freed), which keeps RSS up for good.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 3 } as const;

const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
const PREFIX = 'scrypt';

/**
 * How many hashes run at once: one fewer than there are cores (at least one). A burst of logins
 * or registrations then queues for the hash instead of taking every core (and 32 MiB per
 * thread) from the requests that need none. Measured in `npm run bench` (trainer(id) during 20
 * concurrent logins).
 */
const defaultHashSlots = (): number => Math.max(1, availableParallelism() - 1);

/**
 * Password hashing for one app (built by createServices): its own queue of hash slots, and the
 * decoy hash that unknown emails are checked against, so that their answer takes as long as a
 * wrong password's and gives nothing away.
 */
/** Which queue a hash waits in: logins go first, so a flood of registrations cannot starve them. */
type Lane = 'login' | 'registration';

/** How many hashes may wait for a slot, per lane and per slot, before more are refused (RATE_LIMITED). */
const WAITING_PER_SLOT: Record<Lane, number> = { login: 16, registration: 4 };

/**
 * Password hashing for one app (built by createServices): its own hash slots, and the decoy hash
 * that unknown emails are checked against, so that their answer takes as long as a wrong
 * password's and gives nothing away. Hashes wait in two bounded queues: a free slot goes to a
 * login first, then to a registration; when a queue is full the attempt is refused with
 * RATE_LIMITED (Retry-After 1) instead of waiting without bound.
 */
export class PasswordHasher {
  private running = 0;
  private readonly waiting: Record<Lane, (() => void)[]> = { login: [], registration: [] };
  private decoy: Promise<string> | undefined;

  constructor(
    private readonly slots = defaultHashSlots(),
    private readonly delay = new RefusalDelay(0),
  ) {}

  /** Hashes running and waiting for a slot, by lane (the `password_hashes` metric). */
  load(): { running: number; waiting: Record<Lane, number> } {
    return { running: this.running, waiting: { login: this.waiting.login.length, registration: this.waiting.registration.length } };
  }

  /** `scrypt$N$r$p$salt$hash`, salt and hash in base64url: a new account's password (the registration queue). */
  hash(password: string): Promise<string> {
    return this.hashIn('registration', password);
  }

  /**
   * The same, for a signed-in trainer's new password (changePassword): in the login queue, as
   * the check of its current password just before it, so that a password change waits and is
   * refused as logins are, never ahead of them.
   */
  hashForSignedIn(password: string): Promise<string> {
    return this.hashIn('login', password);
  }

  /** Checks a password against its stored hash (the login queue). */
  async verify(password: string, stored: string): Promise<boolean> {
    const parts = stored.split('$');
    if (parts.length !== 6 || parts[0] !== PREFIX) return false;
    const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
    const expected = Buffer.from(parts[5], 'base64url');
    const actual = await this.derive('login', password, Buffer.from(parts[4], 'base64url'), { N, r, p });
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  /** A hash of a random password, made once per app (on first use: it costs a full hash). */
  decoyHash(): Promise<string> {
    this.decoy ??= this.hashIn('login', randomBytes(18).toString('base64url'));
    return this.decoy;
  }

  private async hashIn(lane: Lane, password: string): Promise<string> {
    const salt = randomBytes(SALT_LENGTH);
    const key = await this.derive(lane, password, salt, PARAMS);
    return [PREFIX, PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
  }

  private derive(lane: Lane, password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
    const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
    return this.inSlot(
      lane,
      () =>
        new Promise<Buffer>((resolve, reject) => {
          scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key)));
        }),
    );
  }

  private inSlot<T>(lane: Lane, task: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots && this.waiting[lane].length >= WAITING_PER_SLOT[lane] * this.slots) {
      return this.delay.hold().then(() => {
        throw new AppError('RATE_LIMITED', 'The service is busy checking passwords; try again in a moment', undefined, 1);
      });
    }
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.running += 1;
        task()
          .then(resolve, reject)
          .finally(() => {
            this.running -= 1;
            (this.waiting.login.shift() ?? this.waiting.registration.shift())?.();
          });
      };
      if (this.running < this.slots) start();
      else this.waiting[lane].push(start);
    });
  }
}

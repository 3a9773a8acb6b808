import { createHash } from 'node:crypto';
import type { RedisClient } from '../common/channel';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { normalizeEmail } from '../common/text';
import { AppError } from '../errors';
import { RefusalDelay } from './refusal-delay';

export interface LoginThrottleOptions {
  /** Failed logins per email and client address before RATE_LIMITED, within `windowSeconds`. */
  readonly maxFailures: number;
  readonly windowSeconds: number;
  /** Failed logins per email from every address together before RATE_LIMITED, within an hour. */
  readonly accountMaxFailures: number;
  /** Authenticate attempts per client IP per minute. */
  readonly ipPerMinute: number;
  /** Registration attempts per client IP per hour. */
  readonly registrationsPerHour: number;
  /** Shared counters for several instances; in memory (this process only) without it. */
  readonly redis?: RedisClient;
  /** What holds a refusal back before it is sent (RATE_LIMITED_DELAY_MS). */
  readonly delay?: RefusalDelay;
}

/** The window of the per-account ceiling (LOGIN_ACCOUNT_MAX_FAILURES). */
const ACCOUNT_WINDOW_SECONDS = 3600;

const rateLimited = (msBeforeNext: number, what: string): AppError =>
  new AppError('RATE_LIMITED', `Too many ${what}; try again later`, undefined, Math.max(1, Math.ceil(msBeforeNext / 1000)));

/**
 * The contract's login and registration limits, counted at the service so that GraphQL and REST
 * share them: every login attempt counts against the client's IP; failures against the email
 * and the client's IP together (so that someone who knows an email cannot lock its owner out
 * from everywhere with a few wrong passwords), and against the email alone up to a much higher
 * ceiling (against guesses spread over many addresses); every registration attempt, successful
 * or not, against the client's IP. In Redis (rate-limiter-flexible), several instances count
 * together; should Redis fail, an in-memory limiter stands in rather than letting every attempt
 * through.
 */
export class LoginThrottle {
  private readonly perIp: RateLimiterAbstract;
  /** Failures per email and address. */
  private readonly failures: RateLimiterAbstract;
  /** Failures per email, from every address. */
  private readonly accountFailures: RateLimiterAbstract;
  private readonly registrations: RateLimiterAbstract;
  private readonly delay: RefusalDelay;

  constructor(options: LoginThrottleOptions) {
    this.delay = options.delay ?? new RefusalDelay(0);
    const ip = { keyPrefix: 'login:ip', points: options.ipPerMinute, duration: 60 };
    const failures = { keyPrefix: 'login:fail-ip', points: options.maxFailures, duration: options.windowSeconds };
    const accountFailures = { keyPrefix: 'login:fail-account', points: options.accountMaxFailures, duration: ACCOUNT_WINDOW_SECONDS };
    const registrations = { keyPrefix: 'register:ip', points: options.registrationsPerHour, duration: 3600 };
    if (options.redis) {
      const store = { storeClient: options.redis, rejectIfRedisNotReady: true };
      this.perIp = new RateLimiterRedis({ ...ip, ...store, insuranceLimiter: new RateLimiterMemory(ip) });
      this.failures = new RateLimiterRedis({ ...failures, ...store, insuranceLimiter: new RateLimiterMemory(failures) });
      this.accountFailures = new RateLimiterRedis({
        ...accountFailures,
        ...store,
        insuranceLimiter: new RateLimiterMemory(accountFailures),
      });
      this.registrations = new RateLimiterRedis({ ...registrations, ...store, insuranceLimiter: new RateLimiterMemory(registrations) });
    } else {
      this.perIp = new RateLimiterMemory(ip);
      this.failures = new RateLimiterMemory(failures);
      this.accountFailures = new RateLimiterMemory(accountFailures);
      this.registrations = new RateLimiterMemory(registrations);
    }
  }

  /** Emails are kept as hashes: the counters need no one's address in clear. */
  private key(email: string): string {
    return createHash('sha256').update(normalizeEmail(email)).digest('base64url');
  }

  /** The failures of an email from one address: the email's hash and the address. */
  private pairKey(account: string, ip: string): string {
    return `${account}:${ip}`;
  }

  /**
   * Counts an attempt, before any password is checked; RATE_LIMITED when the address is over
   * its rate, or the email has failed too often from this address or from all of them. Every
   * attempt is taken as a failure up front, atomically (a consume, not a read then a write), so
   * that guesses sent all at once cannot all slip through before any of them is counted; a
   * success then gives the points back (see succeeded). An attempt refused by the account's
   * ceiling gives back its point of the address's count: the owner, waiting for the ceiling to
   * clear, does not lock itself out of its own address by trying.
   */
  async attempt(email: string, ip: string): Promise<void> {
    await this.consume(this.perIp, ip, 'login attempts from this address');
    const account = this.key(email);
    const pair = this.pairKey(account, ip);
    await this.consume(this.failures, pair, 'failed logins for this account from this address');
    await this.consume(this.accountFailures, account, 'failed logins for this account', () => this.failures.reward(pair));
  }

  /** Counts a refresh against the client's address (the authenticate limit); RATE_LIMITED over it. */
  async refreshing(ip: string): Promise<void> {
    await this.consume(this.perIp, ip, 'login attempts from this address');
  }

  /** Counts a registration attempt from `ip`, before anything is read or hashed; RATE_LIMITED over the hourly limit. */
  async registering(ip: string): Promise<void> {
    await this.consume(this.registrations, ip, 'registrations from this address');
  }

  /**
   * One point of `limiter` for `key`, or RATE_LIMITED once `onRefused` has run and the refusal
   * has been held back.
   */
  private async consume(limiter: RateLimiterAbstract, key: string, what: string, onRefused?: () => Promise<unknown>): Promise<void> {
    try {
      await limiter.consume(key);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      await onRefused?.();
      await this.delay.hold();
      throw rateLimited(error.msBeforeNext, what);
    }
  }

  /**
   * A login succeeded: the failures of this email from this address are forgotten, and the
   * attempt's point of the account's ceiling is given back. The rest of the account's count
   * stays, or whoever spreads guesses over many addresses would start afresh whenever the owner
   * logs in.
   */
  async succeeded(email: string, ip: string): Promise<void> {
    const account = this.key(email);
    await Promise.all([this.failures.delete(this.pairKey(account, ip)), this.accountFailures.reward(account)]);
  }
}

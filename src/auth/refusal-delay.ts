import { setTimeout as sleep } from 'node:timers/promises';

/** At most this many refusals are held back at once; past it, they are answered at once. */
const MAX_HELD = 1000;

/**
 * Holds back RATE_LIMITED answers to anonymous attempts (logins, registrations, hashing turned
 * away) for `delayMs` before they are sent: a tarpit. A client flooding in a loop on n
 * connections then gets n answers a second instead of thousands, so the refusals stop costing
 * the event loop and the CPU that correct logins need. A held refusal costs a timer and an open
 * socket; beyond MAX_HELD of them the rest are answered at once, so memory stays bounded.
 */
export class RefusalDelay {
  private held = 0;

  constructor(private readonly delayMs: number) {}

  async hold(): Promise<void> {
    if (this.delayMs <= 0 || this.held >= MAX_HELD) return;
    this.held += 1;
    try {
      await sleep(this.delayMs);
    } finally {
      this.held -= 1;
    }
  }
}

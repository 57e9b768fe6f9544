/**
 * The rate of new attempts a session may start: a token bucket. Every attempt costs the host's
 * CPU (the broker runs in the launcher, outside the session's cgroup), so a session that opens
 * connections as fast as it can must not get them handled as fast as it can.
 *
 * Default 50 attempts per second sustained, 200 at once after a quiet spell. What real sessions
 * need is far less: an agent CLI keeps a few connections to its API open; a package manager
 * reuses up to ~15 per registry (npm's maxsockets). A flood measured 8 000 attempts a second
 * through the socket, each about 0.1 ms of the launcher's CPU: the bucket brings that to 50.
 */

export interface RateLimit {
  perSecond: number;
  burst: number;
}

export const defaultRateLimit: RateLimit = { perSecond: 50, burst: 200 };

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: RateLimit,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = rate.burst;
    this.last = now();
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.rate.burst, this.tokens + ((t - this.last) / 1000) * this.rate.perSecond);
    this.last = t;
  }

  /** Takes a token when there is one. */
  take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until the next token (0 when there is one now). */
  waitMs(): number {
    this.refill();
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.rate.perSecond) * 1000);
  }
}

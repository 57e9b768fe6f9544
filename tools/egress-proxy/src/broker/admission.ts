/**
 * Which connection becomes an attempt, and when. A new connection starts at once while the
 * token bucket has a token; otherwise it waits, unread, in arrival order, for its turn (so a
 * burst of a package manager's connections is slowed, not refused). Open attempts and waiting
 * connections together are at most `max`: the next one is refused at once (503), which costs
 * the broker one write and one close, nothing more.
 */
import type net from 'node:net';
import { TokenBucket, type RateLimit } from './rate-limit.js';

export interface AdmissionOptions {
  rate: RateLimit;
  max: number;
  /** Attempts open right now. */
  open: () => number;
  start: (client: net.Socket) => void;
  overflow: (client: net.Socket) => void;
  now?: () => number;
}

export interface Admission {
  offer(client: net.Socket): void;
  /** Connections that waited for a token, so far. */
  delayed(): number;
  /** Ends the waiting connections (the broker is stopping); returns how many there were. */
  stop(): number;
}

export function makeAdmission(options: AdmissionOptions): Admission {
  const bucket = new TokenBucket(options.rate, options.now);
  const waiting: net.Socket[] = [];
  let timer: NodeJS.Timeout | undefined;
  let delayed = 0;
  let stopped = false;
  const drain = () => {
    timer = undefined;
    while (waiting.length > 0 && bucket.take()) options.start(waiting.shift()!);
    schedule();
  };
  const schedule = () => {
    if (timer || waiting.length === 0 || stopped) return;
    timer = setTimeout(drain, Math.max(1, bucket.waitMs()));
  };
  return {
    offer(client) {
      if (stopped || options.open() + waiting.length >= options.max) {
        options.overflow(client);
        return;
      }
      if (waiting.length === 0 && bucket.take()) {
        options.start(client);
        return;
      }
      delayed += 1;
      client.on('error', () => undefined);
      waiting.push(client);
      schedule();
    },
    delayed: () => delayed,
    stop() {
      stopped = true;
      clearTimeout(timer);
      const n = waiting.length;
      for (const client of waiting.splice(0)) client.destroy();
      return n;
    },
  };
}

/**
 * The broker's answers to connections it does not take as attempts (admission.ts): past the cap
 * on open and waiting attempts, the first one gets a 503 naming the rule, and while that answer
 * is written, node closes the next ones before they become socket objects (server
 * maxConnections: an accept and a close each, about half the cost of the 503, measured). Both
 * are counted; the closed ones as one line per second, so a flood of them is a few lines.
 */
import type net from 'node:net';
import type { EgressAttempt } from '@agent-sandbox/shared/schemas/egress-proxy';

/** The line of attempts that never had a request read: refused by the broker itself. */
export function brokerLine(session: string, rule: string, status: number | null, count = 1): EgressAttempt {
  const none = { method: null, host: null, port: null, address: null, entry: null };
  return {
    time: new Date().toISOString(),
    session,
    ...none,
    decision: 'denied',
    rule,
    status,
    bytesUp: 0,
    bytesDown: 0,
    durationMs: 0,
    ...(count > 1 ? { count } : {}),
  };
}

/** Over the cap: a 503 and the close, without reading the request. */
export function overflowAnswer(client: net.Socket, max: number): void {
  const body = `too-many-connections: ${max} attempts are open or waiting already\n`;
  client.on('error', () => undefined);
  client.end(
    `HTTP/1.1 503 Service Unavailable\r\nX-Proxy-Error: too-many-connections\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => client.destroy(),
  );
}

/** Past max + 1 connections, node closes new ones unread; `record(n)` gets them once a second and at flush(). */
export function countDrops(server: net.Server, max: number, record: (count: number) => void): { flush(): void } {
  server.maxConnections = max + 1;
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (dropped > 0) record(dropped);
    dropped = 0;
  };
  server.on('drop', () => {
    dropped += 1;
    timer ??= setTimeout(flush, 1000);
  });
  return { flush };
}

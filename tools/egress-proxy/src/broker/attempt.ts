/**
 * One connection to the broker, start to end: read the request head, decide, dial the checked
 * address (never the name again), relay bytes both ways, and write exactly one log line when
 * the attempt ends, whatever way it ends.
 */
import net from 'node:net';
import type { EgressAttempt, EgressDecision } from '@agent-sandbox/shared/schemas/egress-proxy';
import { hostText, type Policy } from '../rules/allowlist.js';
import { decide, type DecideDeps } from '../rules/decide.js';
import { parseHead, type ParsedHead } from '../rules/request-head.js';

export interface AttemptContext {
  session: string;
  policy: Policy;
  decideDeps: DecideDeps;
  headTimeoutMs: number;
  dialTimeoutMs: number;
  /** Called once per attempt, when it ends. */
  record(line: EgressAttempt): void;
  /** Sockets open right now (the broker destroys them on stop). */
  track(socket: net.Socket): void;
}

type Fields = Pick<EgressAttempt, 'method' | 'host' | 'port' | 'address' | 'entry'>;

const reasons: Record<number, string> = { 400: 'Bad Request', 403: 'Forbidden', 502: 'Bad Gateway', 503: 'Service Unavailable' };

/** The broker's own answer; the rule goes in X-Proxy-Error. Unread input is drained, not reset. */
export function refuse(client: net.Socket, status: number, rule: string, message: string): void {
  const body = `${rule}: ${message}\n`;
  client.on('data', () => undefined).resume();
  client.once('end', () => client.destroy());
  client.on('error', () => client.destroy());
  setTimeout(() => client.destroy(), 5000).unref();
  client.end(
    `HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}\r\nX-Proxy-Error: ${rule}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Reads until the head is complete or invalid; 'closed' when the client went away first. */
function readHead(client: net.Socket, timeoutMs: number): Promise<ParsedHead | { kind: 'closed' }> {
  return new Promise((resolve) => {
    let buffer = Buffer.alloc(0);
    const done = (result: ParsedHead | { kind: 'closed' }) => {
      clearTimeout(timer);
      client.off('data', onData).off('end', onGone).off('close', onGone);
      client.pause();
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const parsed = parseHead(buffer);
      if (parsed.kind !== 'incomplete') done(parsed);
    };
    const onGone = () => done({ kind: 'closed' });
    const timer = setTimeout(() => done({ kind: 'invalid', reason: `no request head within ${timeoutMs} ms`, method: null }), timeoutMs);
    client.on('data', onData).on('end', onGone).on('close', onGone);
    // The broker accepts paused (a connection may wait for the rate limit): read from here on.
    client.resume();
  });
}

type Dialed = { socket: net.Socket; address: string } | { error: string; address: string };

/** Dials one address (an IP literal: node does no lookup, so exactly this address is dialed). */
function dialOne(address: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<Dialed> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address, port, allowHalfOpen: true, timeout: timeoutMs, noDelay: true });
    let settled = false;
    const settle = (result: Dialed) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      socket.setTimeout(0);
      if ('error' in result) socket.destroy();
      resolve(result);
    };
    const onAbort = () => settle({ error: 'the broker is stopping', address });
    signal.addEventListener('abort', onAbort, { once: true });
    socket.on('error', (err: NodeJS.ErrnoException) => settle({ error: `${address}: ${err.code ?? err.message}`, address }));
    socket.once('timeout', () => settle({ error: `${address}: no connection within ${timeoutMs} ms`, address }));
    socket.once('connect', () => settle({ socket, address }));
  });
}

/** Dials each checked address in turn (every one of them passed the address rules). */
async function dial(addresses: string[], port: number, timeoutMs: number, signal: AbortSignal): Promise<Dialed> {
  let last: Dialed = { error: 'no address', address: '' };
  for (const address of addresses) {
    if (signal.aborted) break;
    last = await dialOne(address, port, timeoutMs, signal);
    if ('socket' in last) return last;
  }
  return last;
}

/** Pipes both ways; resolves with the byte counts once both sockets have closed. */
function relay(client: net.Socket, upstream: net.Socket): Promise<{ bytesUp: number; bytesDown: number }> {
  return new Promise((resolve) => {
    let open = 2;
    const closed = () => {
      open -= 1;
      if (open === 0) resolve({ bytesUp: upstream.bytesWritten, bytesDown: upstream.bytesRead });
    };
    client
      .on('error', () => upstream.destroy())
      .once('close', () => {
        closed();
        upstream.destroy();
      });
    upstream
      .on('error', () => client.destroy())
      .once('close', () => {
        closed();
        // The upstream is gone: let the client read what was relayed, then close.
        if (!client.destroyed) client.end(() => client.destroy());
      });
    client.pipe(upstream);
    upstream.pipe(client);
  });
}

type Finish = (decision: EgressDecision, rule: string, status: number | null, bytes?: { bytesUp: number; bytesDown: number }) => void;

/** Writes the attempt's one line when it ends: the fields learned by then (`fields` is filled in as the attempt goes), and the time since it was accepted. */
function finisher(ctx: AttemptContext, fields: Fields): Finish {
  const time = new Date().toISOString();
  const started = performance.now();
  return (decision, rule, status, bytes = { bytesUp: 0, bytesDown: 0 }) =>
    ctx.record({
      time,
      session: ctx.session,
      ...fields,
      decision,
      rule,
      status,
      ...bytes,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    });
}

/** Handles one client connection; resolves after its line was recorded. */
export async function handleAttempt(client: net.Socket, ctx: AttemptContext): Promise<void> {
  const fields: Fields = { method: null, host: null, port: null, address: null, entry: null };
  const finish = finisher(ctx, fields);
  ctx.track(client);
  client.on('error', () => undefined);

  const head = await readHead(client, ctx.headTimeoutMs);
  if (head.kind === 'closed' || head.kind === 'invalid' || head.kind === 'incomplete') {
    fields.method = head.kind === 'invalid' ? head.method : null;
    finish('denied', 'bad-request', head.kind === 'closed' ? null : 400);
    if (head.kind === 'invalid') refuse(client, 400, 'bad-request', head.reason);
    else client.destroy();
    return;
  }
  Object.assign(fields, { method: head.method, host: hostText(head.target.host), port: head.target.port });
  let gone = false;
  client.once('close', () => (gone = true));

  const decision = await decide(ctx.policy, head.target, ctx.decideDeps);
  fields.entry = decision.entry;
  if (decision.decision === 'denied') {
    fields.address = decision.address;
    finish('denied', decision.rule, 403);
    refuse(client, 403, decision.rule, decision.message);
    return;
  }
  if (gone) {
    finish('failed', 'client-closed', null);
    return;
  }
  const dialed = await dial(decision.addresses, head.target.port, ctx.dialTimeoutMs, ctx.decideDeps.signal);
  fields.address = dialed.address;
  if ('error' in dialed) {
    finish('failed', ctx.decideDeps.signal.aborted ? 'broker-stopped' : 'connect-failed', 502);
    refuse(client, 502, 'connect-failed', dialed.error);
    return;
  }
  if (gone) {
    dialed.socket.destroy();
    finish('failed', 'client-closed', null);
    return;
  }
  ctx.track(dialed.socket);
  if (head.kind === 'connect') client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  else dialed.socket.write(head.head);
  if (head.rest.length > 0) dialed.socket.write(head.rest);
  const bytes = await relay(client, dialed.socket);
  finish('allowed', 'allowlisted', head.kind === 'connect' ? 200 : null, bytes);
}

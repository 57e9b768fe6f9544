/**
 * The servers of the fake internet, run inside its network namespace
 * (`ip netns exec <ns> node fake-internet-server.js <config.json>`). Each listener reports
 * every TCP connection it accepts (before TLS, so a refused handshake still counts) and
 * every request as one JSON line on stdout; `sync N` on stdin is answered with
 * {"event":"synced","n":N} after every earlier line. Builtins only.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { createInterface } from 'node:readline';

export interface ListenerConfig {
  server: string;
  address: string;
  port: number;
  kind: 'https' | 'http' | 'tcp';
  key?: string;
  cert?: string;
}

const emit = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);

function respond(listener: ListenerConfig, req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  emit({
    event: 'request',
    server: listener.server,
    port: listener.port,
    method: req.method,
    path: req.url,
    host: req.headers.host ?? null,
  });
  if (url.pathname === '/stream') {
    const total = Number(url.searchParams.get('bytes') ?? '0');
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
        sent += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      res.end();
    };
    return pump();
  }
  let received = 0;
  req.on('data', (d: Buffer) => (received += d.length));
  req.on('end', () => {
    const body = JSON.stringify({ server: listener.server, method: req.method, path: req.url, host: req.headers.host ?? null, received });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  });
}

/** A websocket handshake and one echoed text frame (payloads under 126 bytes: enough for a proof). */
function upgrade(listener: ListenerConfig, req: http.IncomingMessage, socket: net.Socket): void {
  const key = req.headers['sec-websocket-key'];
  if (String(req.headers.upgrade).toLowerCase() !== 'websocket' || typeof key !== 'string') return void socket.destroy();
  const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  emit({ event: 'websocket', server: listener.server, port: listener.port, path: req.url });
  let buffer = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    buffer = Buffer.concat([buffer, d]);
    if (buffer.length < 6) return;
    const length = buffer[1]! & 0x7f;
    if (length >= 126 || buffer.length < 6 + length) return;
    const mask = buffer.subarray(2, 6);
    const text = Buffer.from(buffer.subarray(6, 6 + length).map((b, i) => b ^ mask[i % 4]!)).toString();
    const reply = Buffer.from(`echo:${text}`);
    socket.end(Buffer.concat([Buffer.from([0x81, reply.length]), reply]));
  });
  socket.on('error', () => undefined);
}

function listen(listener: ListenerConfig): Promise<void> {
  const onConnection = (socket: net.Socket) => {
    emit({
      event: 'connection',
      server: listener.server,
      port: listener.port,
      kind: listener.kind,
      family: net.isIPv6(listener.address) ? 6 : 4,
    });
    socket.on('error', () => undefined);
  };
  let server: net.Server;
  if (listener.kind === 'tcp') {
    server = net.createServer((socket) => {
      onConnection(socket);
      socket.end(`SSH-2.0-fake-${listener.server}\r\n`);
    });
  } else {
    const web = listener.kind === 'https' ? https.createServer({ key: listener.key, cert: listener.cert }) : http.createServer();
    web.on('request', (req, res) => respond(listener, req, res));
    web.on('upgrade', (req, socket) => upgrade(listener, req, socket as net.Socket));
    // A CONNECT that reached this server (inside a tunnel) is answered here and goes nowhere.
    web.on('connect', (req, socket: net.Socket) => {
      emit({ event: 'connect-request', server: listener.server, port: listener.port, target: req.url });
      socket.end('HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    web.prependListener('connection', onConnection);
    web.on('tlsClientError', () => emit({ event: 'tls-error', server: listener.server, port: listener.port }));
    server = web;
  }
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: listener.address, port: listener.port }, () => resolve());
  });
}

async function main(): Promise<void> {
  const listeners = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as ListenerConfig[];
  await Promise.all(listeners.map(listen));
  emit({ event: 'listening', count: listeners.length });
  createInterface({ input: process.stdin }).on('line', (line) => {
    const m = /^sync ([0-9]+)$/.exec(line);
    if (m) emit({ event: 'synced', n: Number(m[1]) });
  });
  process.stdin.once('end', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
}

void main().catch((err: unknown) => {
  process.stderr.write(`fake-internet-server: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

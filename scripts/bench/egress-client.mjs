// The bench's HTTP client for the broker section (scripts/bench/egress.mjs): one request per
// connection or many on one, through a relay (CONNECT first) or straight at a server. Raw
// sockets and Content-Length framing, the same code for every case, so the cases differ only in
// the path.
import net from 'node:net';

const now = () => Number(process.hrtime.bigint()) / 1e6;

/** Reads one HTTP response (Content-Length framed) from `socket`; resolves with its body size. */
export function readResponse(socket, initial = Buffer.alloc(0)) {
  return new Promise((resolve, reject) => {
    let buf = initial;
    let need = -1;
    let got = 0;
    const onData = (d) => {
      if (need < 0) {
        buf = Buffer.concat([buf, d]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        need = Number(/content-length: *([0-9]+)/i.exec(buf.subarray(0, end).toString())?.[1] ?? 0);
        got = buf.length - end - 4;
      } else got += d.length;
      if (got >= need) {
        socket.off('data', onData).off('error', reject);
        resolve(got);
      }
    };
    socket.on('data', onData).once('error', reject);
    if (initial.length) onData(Buffer.alloc(0));
  });
}

export const connectTcp = (host, port) =>
  new Promise((resolve, reject) => {
    const s = net.connect({ host, port, noDelay: true }, () => resolve(s));
    s.once('error', reject);
  });

/** A connection to `target` through a relay: TCP to it, CONNECT, the 200 read. */
export async function connectVia(relayPort, target) {
  const s = await connectTcp('127.0.0.1', relayPort);
  s.write(`CONNECT ${target} HTTP/1.1\r\n\r\n`);
  await new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d) => {
      buf += d.toString('latin1');
      if (!buf.includes('\r\n\r\n')) return;
      s.off('data', onData);
      buf.startsWith('HTTP/1.1 200') ? resolve() : reject(new Error(`CONNECT ${target}: ${buf.split('\r\n')[0]}`));
    };
    s.on('data', onData).once('error', reject);
  });
  return s;
}

export const get = (socket, pathname, host) => {
  socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  return readResponse(socket);
};

/** Latency of `n` requests; each opens its own connection when `fresh`, else all share one. */
export async function latencies(connect, n, fresh) {
  const out = [];
  let shared = fresh ? undefined : await connect();
  for (let i = 0; i < n; i += 1) {
    const t0 = now();
    const s = shared ?? (await connect());
    await get(s, '/', 'api.openai.com');
    if (!shared) s.destroy();
    out.push(now() - t0);
  }
  shared?.destroy();
  return out;
}

export async function throughputDown(connect, bytes) {
  const s = await connect();
  const t0 = now();
  const got = await get(s, `/stream?bytes=${bytes}`, 'api.openai.com');
  const ms = now() - t0;
  s.destroy();
  if (got !== bytes) throw new Error(`stream: got ${got} of ${bytes} bytes`);
  return bytes / 1048576 / (ms / 1000);
}

export async function throughputUp(connect, bytes) {
  const s = await connect();
  const chunk = Buffer.alloc(1 << 20, 0x62);
  const t0 = now();
  s.write(`POST /upload HTTP/1.1\r\nHost: api.openai.com\r\nContent-Length: ${bytes}\r\n\r\n`);
  for (let sent = 0; sent < bytes; sent += chunk.length)
    if (!s.write(chunk.subarray(0, Math.min(chunk.length, bytes - sent)))) await new Promise((r) => s.once('drain', r));
  await readResponse(s);
  const ms = now() - t0;
  s.destroy();
  return bytes / 1048576 / (ms / 1000);
}

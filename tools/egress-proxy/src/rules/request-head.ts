/**
 * The one thing the broker parses: the head of the first request on a connection. A CONNECT
 * names the tunnel's target; an absolute-URI request (`GET http://host/path HTTP/1.1`) is
 * rewritten to origin form for its upstream. Whatever follows (tunnel bytes, a body, a
 * CONNECT inside the tunnel) is relayed, never parsed.
 */
import { defaultPort, parseHost, parsePort, parseTarget, splitHostPort, type Target } from './allowlist.js';

/** Heads longer than this are refused (a client that never ends its head holds nothing). */
export const maxHeadBytes = 32 * 1024;

export type ParsedHead =
  | { kind: 'incomplete' }
  | { kind: 'invalid'; reason: string; method: string | null }
  | { kind: 'connect'; method: 'CONNECT'; target: Target; rest: Buffer }
  | { kind: 'http'; method: string; target: Target; head: Buffer; rest: Buffer };

const requestLine = /^([A-Z]{1,20}) ([\x21-\x7e]{1,8192}) HTTP\/1\.([01])$/;
const headerLine = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;
/** Hop-by-hop and proxy-only headers that are not forwarded upstream. */
const dropped = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer']);

function parseHeaders(lines: string[]): [string, string][] | undefined {
  const headers: [string, string][] = [];
  for (const line of lines) {
    const m = headerLine.exec(line);
    if (!m || /[\0\r\n]/.test(m[2]!)) return undefined; // obs-fold and bare CR are refused
    headers.push([m[1]!, m[2]!]);
  }
  return headers;
}

/** `http://authority/path?query` -> target (port 80 by default) and the origin-form path. */
function parseAbsoluteUri(uri: string): { target: Target; authority: string; path: string } | undefined {
  if (!/^http:\/\//i.test(uri)) return undefined;
  const afterScheme = uri.slice('http://'.length);
  const end = afterScheme.search(/[/?#]/);
  const authority = end < 0 ? afterScheme : afterScheme.slice(0, end);
  if (authority.includes('@') || authority === '') return undefined; // no userinfo
  let path = end < 0 ? '/' : afterScheme.slice(end);
  path = path.split('#')[0]!;
  if (path.startsWith('?')) path = `/${path}`;
  const parts = splitHostPort(authority);
  if (!parts) return undefined;
  const host = parseHost(parts.host);
  const port = parts.port === undefined ? 80 : parsePort(parts.port);
  if (!host || port === undefined) return undefined;
  return { target: { host, port }, authority, path };
}

/**
 * The upstream's head: origin-form request line, Host set to the URI's authority (a Host
 * header naming some other site behind the same address is not passed on), proxy headers
 * dropped, and `Connection: close` unless the client asks for an upgrade, so a connection
 * never carries a second request meant for another host.
 */
function rewriteHead(method: string, version: string, authority: string, path: string, headers: [string, string][]): Buffer {
  const upgrade = headers.find(([name]) => name.toLowerCase() === 'upgrade');
  const connection = headers.find(([name]) => name.toLowerCase() === 'connection');
  const kept = headers.filter(([name]) => !dropped.has(name.toLowerCase()));
  const lines = [`${method} ${path} HTTP/1.${version}`, `Host: ${authority}`, ...kept.map(([n, v]) => `${n}: ${v}`)];
  lines.push(upgrade && connection ? `Connection: ${connection[1]}` : 'Connection: close');
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

/** Parses the head in `buffer` (everything read so far). */
export function parseHead(buffer: Buffer): ParsedHead {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) {
    return buffer.length >= maxHeadBytes
      ? { kind: 'invalid', reason: 'the request head is too long', method: null }
      : { kind: 'incomplete' };
  }
  if (end + 4 > maxHeadBytes) return { kind: 'invalid', reason: 'the request head is too long', method: null };
  const [first = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const m = requestLine.exec(first);
  if (!m) return { kind: 'invalid', reason: 'not an HTTP/1.x request line', method: null };
  const [, method, uri, version] = m as unknown as [string, string, string, string];
  const headers = parseHeaders(lines);
  if (!headers) return { kind: 'invalid', reason: 'a header line does not parse', method };
  const rest = buffer.subarray(end + 4);
  if (method === 'CONNECT') {
    const target = parseTarget(uri, defaultPort);
    return target
      ? { kind: 'connect', method, target, rest }
      : { kind: 'invalid', reason: 'CONNECT needs host:port or [IPv6]:port', method };
  }
  const absolute = parseAbsoluteUri(uri);
  if (!absolute) return { kind: 'invalid', reason: 'not a CONNECT and not an absolute http:// URI', method };
  return {
    kind: 'http',
    method,
    target: absolute.target,
    head: rewriteHead(method, version, absolute.authority, absolute.path, headers),
    rest,
  };
}

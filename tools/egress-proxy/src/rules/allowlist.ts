/**
 * The name rules: allowlist and denylist entries `host[:port]`, `*.domain[:port]` (strict
 * subdomains: not the domain itself) and `[IPv6][:port]`; hosts compared lower-case without
 * a trailing dot; IP literals in canonical form. Deny wins. An allow entry without a port
 * allows 443; a deny entry without a port denies every port (a denied host stays denied).
 */
import { ToolError } from '@agent-sandbox/shared/tool-error';
import { parseIp } from './ip.js';

/** A host as the broker compares it: a lower-case name, or a canonical IP literal. */
export interface Host {
  kind: 'name' | 'ipv4' | 'ipv6';
  /** Canonical text: the name, or the address without brackets. */
  text: string;
}

export interface Target {
  host: Host;
  port: number;
}

export interface Entry {
  /** As written in the config (for the log line's `entry`). */
  source: string;
  wildcard: boolean;
  host: Host;
  port: number | undefined;
}

export interface Policy {
  allow: Entry[];
  deny: Entry[];
}

export const defaultPort = 443;

const label = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** A host name or an IP literal (IPv6 in brackets), or undefined when it is neither. */
export function parseHost(raw: string): Host | undefined {
  if (raw.startsWith('[')) {
    if (!raw.endsWith(']')) return undefined;
    const ip = parseIp(raw.slice(1, -1));
    return ip?.family === 6 ? { kind: 'ipv6', text: ip.text } : undefined;
  }
  const name = (raw.endsWith('.') ? raw.slice(0, -1) : raw).toLowerCase();
  if (name.length === 0 || name.length > 253) return undefined;
  const ip = parseIp(name);
  if (ip) return ip.family === 4 ? { kind: 'ipv4', text: ip.text } : undefined; // a bare IPv6 needs brackets
  const labels = name.split('.');
  if (!labels.every((l) => label.test(l))) return undefined;
  // All-digit last label: an IPv4 number to URL parsers (127.1, 2130706433), not a DNS name.
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return undefined;
  return { kind: 'name', text: name };
}

/** `host`, `host:port` or `[v6]:port` -> host text and port text (undefined when absent). */
export function splitHostPort(raw: string): { host: string; port: string | undefined } | undefined {
  if (raw.startsWith('[')) {
    const close = raw.indexOf(']');
    if (close < 0) return undefined;
    const after = raw.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) return undefined;
    return { host: raw.slice(0, close + 1), port: after === '' ? undefined : after.slice(1) };
  }
  const colon = raw.indexOf(':');
  if (colon < 0) return { host: raw, port: undefined };
  if (raw.indexOf(':', colon + 1) >= 0) return undefined; // an IPv6 literal without brackets
  return { host: raw.slice(0, colon), port: raw.slice(colon + 1) };
}

/** A port 1..65535 written as plain digits, or undefined. */
export function parsePort(text: string): number | undefined {
  if (!/^[0-9]{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/** `host[:port]` as a CONNECT names it; the port defaults to `fallbackPort`. */
export function parseTarget(raw: string, fallbackPort = defaultPort): Target | undefined {
  const parts = splitHostPort(raw);
  if (!parts) return undefined;
  const host = parseHost(parts.host);
  const port = parts.port === undefined ? fallbackPort : parsePort(parts.port);
  return host && port !== undefined ? { host, port } : undefined;
}

/** One config entry; refuses (exit 80) naming the entry when it does not parse. */
export function parseEntry(source: string, field: string): Entry {
  const bad = (why: string) => new ToolError('usage', 'invalid-field', `${field}: ${JSON.stringify(source)} ${why}`, { field });
  const wildcard = source.startsWith('*.');
  const parts = splitHostPort(wildcard ? source.slice(2) : source);
  if (!parts) throw bad('is not host[:port] or [IPv6][:port]');
  const host = parseHost(parts.host);
  if (!host) throw bad('names no valid host (a DNS name, an IPv4 address or a bracketed IPv6 address)');
  if (wildcard && host.kind !== 'name') throw bad('puts *. before an IP address');
  if (wildcard && !host.text.includes('.')) throw bad('would match every subdomain of a top-level domain');
  const port = parts.port === undefined ? undefined : parsePort(parts.port);
  if (parts.port !== undefined && port === undefined) throw bad('has a port outside 1..65535');
  return { source, wildcard, host, port };
}

export function parsePolicy(allow: readonly string[], deny: readonly string[] = []): Policy {
  return {
    allow: allow.map((e, i) => parseEntry(e, `allow[${i}]`)),
    deny: deny.map((e, i) => parseEntry(e, `deny[${i}]`)),
  };
}

function hostMatches(entry: Entry, host: Host): boolean {
  if (entry.wildcard) return host.kind === 'name' && host.text.endsWith(`.${entry.host.text}`);
  return entry.host.kind === host.kind && entry.host.text === host.text;
}

export type NameDecision =
  | { decision: 'allowed'; rule: 'allowlisted'; entry: string }
  | { decision: 'denied'; rule: 'denylisted' | 'bad-port' | 'not-allowlisted'; entry: string | null };

/** The name rules for one target: deny wins, then an allow entry for this host and port. */
export function decideTarget(policy: Policy, target: Target): NameDecision {
  const denied = policy.deny.find((e) => hostMatches(e, target.host) && (e.port === undefined || e.port === target.port));
  if (denied) return { decision: 'denied', rule: 'denylisted', entry: denied.source };
  const hostEntries = policy.allow.filter((e) => hostMatches(e, target.host));
  const allowed = hostEntries.find((e) => (e.port ?? defaultPort) === target.port);
  if (allowed) return { decision: 'allowed', rule: 'allowlisted', entry: allowed.source };
  if (hostEntries.length > 0) return { decision: 'denied', rule: 'bad-port', entry: null };
  return { decision: 'denied', rule: 'not-allowlisted', entry: null };
}

/** How a host is written in a CONNECT line and in the log: IPv6 in brackets. */
export function hostText(host: Host): string {
  return host.kind === 'ipv6' ? `[${host.text}]` : host.text;
}

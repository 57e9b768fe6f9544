/**
 * egress-proxy: a session's only way out is a broker on a unix socket that allows CONNECT and
 * absolute-URI HTTP to the hosts of an allowlist, resolves names on the host, refuses internal
 * addresses, and writes one JSON line per attempt. These are its config, its log line and the
 * per-session summary the launcher puts in the ledger.
 */
import { Closed, Type, type Static } from '../schema.js';

/**
 * An allowlist or denylist entry: `host`, `host:port`, `*.domain[:port]` (strict subdomains),
 * an IPv4 literal, or `[IPv6]` with an optional port. The pattern is a first sieve; the
 * broker's parser (tools/egress-proxy/src/rules/allowlist.ts) refuses the rest by name.
 */
export const HostEntry = Type.String({
  minLength: 1,
  maxLength: 262,
  pattern: '^((\\*\\.)?[A-Za-z0-9_.-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$',
  description: 'host[:port], *.domain[:port] (strict subdomains) or [IPv6][:port]; without a port: 443 (allow) or every port (deny)',
});

const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const sessionPattern = '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$';

export const EgressProxyConfig = Closed(
  {
    socketPath: Type.String({
      pattern: '^/',
      minLength: 2,
      maxLength: 107,
      description: 'the unix socket to listen on (never TCP), absolute; its directory must not be group- or world-writable',
    }),
    sessionId: Type.String({ pattern: sessionPattern, description: 'the session; copied into every log line' }),
    allow: Type.Array(HostEntry, { maxItems: 512, description: 'hosts the session may reach; empty: nothing' }),
    deny: Type.Optional(Type.Array(HostEntry, { maxItems: 512, description: 'hosts refused even when allowed (deny wins)' })),
    logPath: Type.Optional(Type.String({ pattern: '^/', minLength: 2, description: 'append the JSON lines to this file (default: fd 1)' })),
    socketMode: Type.Optional(Type.String({ pattern: '^0[0-7]{3}$', description: 'octal mode of the socket file (default "0600")' })),
    socketOwner: Type.Optional(
      Closed({ uid: Type.Integer({ minimum: 0 }), gid: Type.Integer({ minimum: 0 }) }, { description: 'chown the socket (the container uid)' }),
    ),
    maxConnections: Type.Optional(Type.Integer({ minimum: 1, maximum: 65536, description: 'attempts open or waiting for the rate limit at once (default 512); more get 503' })),
    logMaxBytes: Type.Optional(
      Type.Integer({ minimum: 4096, description: "the attempt log's cap in bytes (default 8 MiB); past it one log-capped line, then attempts are only counted" }),
    ),
    rate: Type.Optional(
      Closed(
        {
          perSecond: Type.Number({ exclusiveMinimum: 0, maximum: 100000, description: 'new attempts started per second, sustained (default 50)' }),
          burst: Type.Integer({ minimum: 1, maximum: 100000, description: 'new attempts started at once after a quiet spell (default 200)' }),
        },
        { description: 'a token bucket on new attempts: over it, an attempt waits (unread) for its turn' },
      ),
    ),
    exitWithParent: Type.Optional(
      Type.Boolean({ description: 'CLI: stop when the parent process goes away (default true: the broker dies with the session)' }),
    ),
  },
  { $id: 'egress-proxy.config', description: 'one broker for one session' },
);
export type EgressProxyConfig = Static<typeof EgressProxyConfig>;

export const EgressDecision = Type.Union([Type.Literal('allowed'), Type.Literal('denied'), Type.Literal('failed')], {
  description: 'allowed: dialed and relayed; denied: refused by a rule, nothing dialed; failed: allowed but the dial failed',
});
export type EgressDecision = Static<typeof EgressDecision>;

const MaybeString = Type.Union([Type.String(), Type.Null()]);

export const EgressAttempt = Closed(
  {
    time: Type.String({ description: 'when the attempt began (ISO 8601)' }),
    session: Type.String(),
    method: Type.Union([Type.String(), Type.Null()], { description: 'CONNECT, or the method of an absolute-URI request; null: unparseable' }),
    host: Type.Union([Type.String(), Type.Null()], { description: 'the requested host, lower-case, without a trailing dot' }),
    port: Type.Union([Port, Type.Null()]),
    address: Type.Union([Type.String(), Type.Null()], { description: 'the address dialed (allowed), or the one that was refused' }),
    decision: EgressDecision,
    rule: Type.String({
      pattern: '^[a-z0-9]+(-[a-z0-9]+)*$',
      description: 'allowlisted, or why not: not-allowlisted, denylisted, bad-port, loopback, private-address, metadata-address, host-address, resolve-failed, bad-request, ...',
    }),
    entry: Type.Union([Type.String(), Type.Null()], { description: 'the allowlist or denylist entry that decided, if any' }),
    status: Type.Union([Type.Integer(), Type.Null()], { description: "the broker's own HTTP status (200, 400, 403, 502, 503); null: the upstream answered" }),
    bytesUp: Type.Integer({ minimum: 0, description: 'bytes sent to the upstream' }),
    bytesDown: Type.Integer({ minimum: 0, description: 'bytes received from the upstream' }),
    durationMs: Type.Number({ minimum: 0 }),
    count: Type.Optional(
      Type.Integer({ minimum: 2, description: 'refused or failed attempts this line stands for (same host, port, rule and decision in one interval); absent: 1' }),
    ),
    lastTime: Type.Optional(Type.String({ description: 'when the last of those attempts began (ISO 8601); the other fields are the first one\'s' })),
  },
  { $id: 'egress-proxy.attempt', description: 'one JSON line per attempt, written when it ends; refusals and failures aggregated per interval' },
);
export type EgressAttempt = Static<typeof EgressAttempt>;

export const EgressLogCapped = Closed(
  {
    time: Type.String({ description: 'when the cap was reached (ISO 8601)' }),
    session: Type.String(),
    event: Type.Literal('log-capped'),
    capBytes: Type.Integer({ minimum: 0, description: 'the cap: no line follows this one' }),
  },
  { $id: 'egress-proxy.log-capped', description: "the attempt log's last line once it reached its cap; later attempts are counted in the summary only" },
);
export type EgressLogCapped = Static<typeof EgressLogCapped>;

export const EgressLogLine = Type.Union([EgressAttempt, EgressLogCapped], { $id: 'egress-proxy.log-line', description: 'a line of the attempt log' });
export type EgressLogLine = Static<typeof EgressLogLine>;

export const EgressSummary = Closed(
  {
    session: Type.String(),
    attempts: Type.Integer({ minimum: 0 }),
    allowed: Type.Integer({ minimum: 0 }),
    denied: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    reached: Type.Array(
      Closed({ host: Type.String(), port: Port, connections: Type.Integer({ minimum: 1 }), bytesUp: Type.Integer(), bytesDown: Type.Integer() }),
      { description: 'hosts reached, by host and port: the 20 with the most connections' },
    ),
    refused: Type.Array(
      Closed({ host: MaybeString, port: Type.Union([Port, Type.Null()]), rule: Type.String(), decision: EgressDecision, count: Type.Integer({ minimum: 1 }) }),
      { description: 'denials and failed dials, by host, port and rule: the most frequent 20' },
    ),
    others: Type.Optional(
      Closed(
        {
          reached: Closed({ rows: Type.Integer({ minimum: 0 }), connections: Type.Integer({ minimum: 0 }) }),
          refused: Closed({ rows: Type.Integer({ minimum: 0 }), count: Type.Integer({ minimum: 0 }) }),
        },
        {
          description:
            'what reached and refused do not name: rows (host and port, or host, port and rule) past the first 20, and their attempts. Past 1 024 distinct rows the least frequent are no longer tracked; a row dropped twice counts twice in rows',
        },
      ),
    ),
    log: Type.Optional(
      Closed(
        {
          bytes: Type.Integer({ minimum: 0, description: 'bytes written to the attempt log' }),
          capBytes: Type.Integer({ minimum: 0 }),
          capped: Type.Boolean({ description: 'the log reached its cap; what followed is only counted here' }),
          droppedLines: Type.Integer({ minimum: 0, description: 'lines not written past the cap' }),
        },
        { description: "the attempt log's size and cap" },
      ),
    ),
    rate: Type.Optional(
      Closed(
        {
          perSecond: Type.Number(),
          burst: Type.Integer(),
          delayed: Type.Integer({ minimum: 0, description: 'attempts that waited for the rate limit' }),
        },
        { description: 'the token bucket on new attempts' },
      ),
    ),
  },
  { $id: 'egress-proxy.summary', description: "a session's egress: what was reached and what was refused (for the ledger)" },
);
export type EgressSummary = Static<typeof EgressSummary>;

export const EgressServeOutput = Closed({ ok: Type.Literal(true), summary: EgressSummary }, { $id: 'egress-proxy.serve.output' });
export type EgressServeOutput = Static<typeof EgressServeOutput>;

export const EgressCheckInput = Closed(
  {
    allow: Type.Array(HostEntry, { maxItems: 512 }),
    deny: Type.Optional(Type.Array(HostEntry, { maxItems: 512 })),
    target: Type.String({ minLength: 1, maxLength: 300, description: 'host[:port] or [IPv6][:port] as a CONNECT would name it (default port 443)' }),
  },
  { $id: 'egress-proxy.check.input', description: 'the name rules only: nothing is resolved or dialed' },
);
export type EgressCheckInput = Static<typeof EgressCheckInput>;

export const EgressCheckOutput = Closed(
  {
    ok: Type.Literal(true),
    host: Type.String(),
    port: Port,
    decision: Type.Union([Type.Literal('allowed'), Type.Literal('denied')]),
    rule: Type.String(),
    entry: MaybeString,
  },
  { $id: 'egress-proxy.check.output' },
);
export type EgressCheckOutput = Static<typeof EgressCheckOutput>;

export const EgressRuntimesOutput = Closed(
  {
    ok: Type.Literal(true),
    runtimes: Type.Array(
      Closed({
        runtime: Type.String(),
        allow: Type.Union([Type.Array(HostEntry), Type.Null()], { description: 'null: not known (the session gets no network unless --allow-host)' }),
        note: Type.String(),
      }),
    ),
  },
  { $id: 'egress-proxy.runtimes.output' },
);
export type EgressRuntimesOutput = Static<typeof EgressRuntimesOutput>;

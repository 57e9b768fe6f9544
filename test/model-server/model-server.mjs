#!/usr/bin/env node
// A scripted model server for offline agent runs: speaks just enough of the
// OpenAI Responses API (Codex CLI) and the Anthropic Messages API (Claude Code)
// to drive a real agent CLI through a fixed list of steps.
//
// Usage: model-server.mjs --script STEPS.json (--port N [--host ADDR]... | --socket PATH)
//          [--token-sha256 HEX] [--record FILE] [--tls-cert PEM --tls-key PEM]
// --host may be given more than once (one listener per address; default 127.0.0.1). With
// --tls-cert and --tls-key it speaks HTTPS: how it stands in for api.openai.com and
// api.anthropic.com inside the fake internet, under a certificate of the test CA.
// --socket listens on a unix socket instead: the VM tier's API route (lib/testkit api-route)
// relays the API addresses' connections there, so uid 1000 serves them with no namespace of
// its own (the socket's directory is that user's alone).
//
// STEPS.json: [{"exec":"shell command"} | {"write":{"path","content"}} | {"say":"final text"}]
// The step answered is chosen by how many tool results the conversation already
// carries, so retries and side requests (titles, quota checks) never skip a step; a
// Codex command still running after its first wait is polled to its end first.
// Each request is recorded whole (--record, one JSON line): method, URL, every header and the
// body as received, so a test can search what reached the server for a canary. The credential
// headers (authorization, x-api-key, proxy-authorization, cookie) are never printed or stored
// raw: their value is recorded as "sha256:<hex>" of the token (the bearer without "Bearer "),
// and whether it matches --token-sha256 as "tokenMatched".
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { claudeEvents, claudeStepIndex, codexEvents, codexItem, codexPoll, codexProgress } from './dialects.mjs';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const steps = JSON.parse(readFileSync(arg('script'), 'utf8'));
const port = Number(arg('port', '8080'));
const hosts = process.argv.flatMap((a, i) => (a === '--host' ? [process.argv[i + 1]] : []));
const socketPath = arg('socket', '');
if (socketPath && hosts.length > 0) throw new Error('--socket and --host exclude each other');
if (hosts.length === 0 && !socketPath) hosts.push('127.0.0.1');
const tlsCert = arg('tls-cert', '');
const tlsKey = arg('tls-key', '');
if (Boolean(tlsCert) !== Boolean(tlsKey)) throw new Error('--tls-cert and --tls-key go together');
const expectedTokenSha = arg('token-sha256', '');
const recordFile = arg('record', '');
/** Where codex asks to refresh an expired token; answered with new (fake) tokens. */
const refreshTokens = { access: arg('refresh-access-token', ''), refresh: 'refreshed-refresh-token' };

function record(entry) {
  if (recordFile) appendFileSync(recordFile, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`);
}

const credentialHeaders = new Set(['authorization', 'x-api-key', 'proxy-authorization', 'cookie']);
const sha256 = (text) => createHash('sha256').update(text).digest('hex');

/** What arrived, as it arrived, but for credential header values: those only as their hash. */
function received(req, body) {
  const headers = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const hide = (v) => `sha256:${sha256(name === 'authorization' && v.startsWith('Bearer ') ? v.slice(7) : v)}`;
    headers[name] = !credentialHeaders.has(name) ? value : Array.isArray(value) ? value.map(hide) : hide(String(value));
  }
  return { method: req.method, url: req.url, headers, body };
}

function presentedToken(req) {
  const auth = req.headers['authorization'];
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice(7);
  const key = req.headers['x-api-key'];
  return typeof key === 'string' ? key : '';
}

function tokenMatched(req) {
  const token = presentedToken(req);
  if (!token) return false;
  return sha256(token) === expectedTokenSha;
}

function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [event, data] of events) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

// ---- the two APIs: which step a request asks for, answered in its API's events (dialects.mjs) ----
function answerCodex(req, res, body, note) {
  const { step: n, runningSession, results } = codexProgress(body);
  const step = steps[n] ?? { say: 'done' };
  // A poll answers no step: recorded as a side request, like Claude Code's title requests.
  const polling = runningSession !== null;
  note({
    api: 'responses',
    step: n,
    ...(polling ? { side: true } : {}),
    host: req.headers.host ?? null,
    tokenMatched: tokenMatched(req),
    kind: polling ? 'poll' : Object.keys(step)[0],
  });
  sse(res, codexEvents(n, polling ? codexPoll(runningSession, results) : codexItem(step, n)));
}

function answerClaude(req, res, body, note) {
  const main = Array.isArray(body.tools) && body.tools.length > 0;
  const n = main ? claudeStepIndex(body) : -1;
  const step = main ? (steps[n] ?? { say: 'done' }) : { say: 'ok' };
  note({
    api: 'messages',
    step: n,
    side: !main,
    host: req.headers.host ?? null,
    tokenMatched: tokenMatched(req),
    kind: Object.keys(step)[0],
  });
  sse(res, claudeEvents(step, n, body.model ?? 'claude-test'));
}

function handle(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    const note = (entry) => record({ ...entry, received: received(req, text) });
    let body = {};
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      body = {};
    }
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'POST' && path.endsWith('/responses')) return answerCodex(req, res, body, note);
    if (req.method === 'POST' && path.endsWith('/v1/messages')) return answerClaude(req, res, body, note);
    if (req.method === 'POST' && path.endsWith('/oauth/token')) {
      // The refresh token is a credential too: its value only as its hash.
      const hidden = text.replace(/("refresh_token"\s*:\s*")([^"]*)(")/g, (_, a, v, b) => `${a}sha256:${sha256(v)}${b}`);
      record({ api: 'refresh', tokenMatched: tokenMatched(req), received: received(req, hidden) });
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({
          access_token: refreshTokens.access,
          refresh_token: refreshTokens.refresh,
          id_token: refreshTokens.access,
          expires_in: 3600,
        }),
      );
    }
    note({ api: 'other', method: req.method, path, host: req.headers.host ?? null });
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"not found"}');
  });
}

const tls = tlsCert ? { cert: readFileSync(tlsCert, 'utf8'), key: readFileSync(tlsKey, 'utf8') } : undefined;
// One listener per address, or one on the socket.
const places = socketPath ? [{ path: socketPath }] : hosts.map((host) => ({ host, port }));
const servers = places.map(() => (tls ? createTlsServer(tls, handle) : createServer(handle)));
let listening = 0;
servers.forEach((server, i) =>
  server.listen(places[i], () => {
    listening += 1;
    // One line once every listener is up: the callers wait for it.
    const where = socketPath ? `socket ${socketPath}` : `${hosts.join(', ')} port ${port}`;
    if (listening === servers.length) process.stderr.write(`model-server: listening on ${where}${tls ? ' (TLS)' : ''}\n`);
  }),
);
const closeAll = () => Promise.all(servers.map((s) => new Promise((done) => s.close(done))));
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => void closeAll().then(() => process.exit(0)));

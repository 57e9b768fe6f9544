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

// ---- OpenAI Responses (Codex CLI) ----
// Codex's exec_command returns after yield_time_ms with the command still running in the
// background ("Process running with session ID N"), and codex caps that first wait at 30 s
// whatever the model asks. A project's tests take longer under the VM tier's CPU emulation;
// answering the next step then would end the turn and kill the command. So, as a real model
// does, the server polls a running command with an empty write_stdin (codex lets a poll wait up
// to 5 min) until its output says it exited, and only an exited command counts as a step done.
const execYieldMs = 120_000;
const stillRunning = /Process running with session ID (\d+)/;

/** The text of a tool result item: a string, or a list of content parts. */
function toolOutputText(item) {
  const out = item.output;
  if (typeof out === 'string') return out;
  if (Array.isArray(out)) return out.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return typeof out?.content === 'string' ? out.content : '';
}

/** How far the conversation is: scripted steps done, and the command still running, if any. */
function codexProgress(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  const outputs = input.filter((i) => i && (i.type === 'function_call_output' || i.type === 'custom_tool_call_output'));
  let done = 0;
  let runningSession = null;
  for (const output of outputs) {
    const running = stillRunning.exec(toolOutputText(output));
    runningSession = running ? Number(running[1]) : null;
    if (!running) done += 1;
  }
  return { step: done, runningSession, results: outputs.length };
}

function codexItem(step, n) {
  if (step.exec !== undefined) {
    return { type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: 'exec_command', arguments: JSON.stringify({ cmd: step.exec, yield_time_ms: execYieldMs }) };
  }
  if (step.write !== undefined) {
    const cmd = `mkdir -p "$(dirname '${step.write.path}')" && cat > '${step.write.path}' <<'AGENT_EOF'\n${step.write.content}\nAGENT_EOF`;
    return { type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: 'exec_command', arguments: JSON.stringify({ cmd, yield_time_ms: execYieldMs }) };
  }
  return { type: 'message', role: 'assistant', id: `msg_${n}`, content: [{ type: 'output_text', text: step.say ?? 'done', annotations: [] }] };
}

/** An empty write_stdin: wait for more output of the running command, up to execYieldMs. */
function codexPoll(session, results) {
  return { type: 'function_call', id: `fc_poll_${results}`, call_id: `call_poll_${results}`, name: 'write_stdin', arguments: JSON.stringify({ session_id: session, chars: '', yield_time_ms: execYieldMs }) };
}

function answerCodex(req, res, body, note) {
  const { step: n, runningSession, results } = codexProgress(body);
  const step = steps[n] ?? { say: 'done' };
  // A poll answers no step: recorded as a side request, like Claude Code's title requests.
  const polling = runningSession !== null;
  note({ api: 'responses', step: n, ...(polling ? { side: true } : {}), host: req.headers.host ?? null, tokenMatched: tokenMatched(req), kind: polling ? 'poll' : Object.keys(step)[0] });
  const item = polling ? codexPoll(runningSession, results) : codexItem(step, n);
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  sse(res, [
    ['response.created', { type: 'response.created', response: { id: `resp_${n}` } }],
    ['response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }],
    ['response.completed', { type: 'response.completed', response: { id: `resp_${n}`, usage } }],
  ]);
}

// ---- Anthropic Messages (Claude Code) ----
function claudeStepIndex(body) {
  let n = 0;
  for (const m of body.messages ?? []) {
    if (Array.isArray(m.content)) n += m.content.filter((c) => c && c.type === 'tool_result').length;
  }
  return n;
}

function answerClaude(req, res, body, note) {
  const main = Array.isArray(body.tools) && body.tools.length > 0;
  const n = main ? claudeStepIndex(body) : -1;
  const step = main ? steps[n] ?? { say: 'done' } : { say: 'ok' };
  note({ api: 'messages', step: n, side: !main, host: req.headers.host ?? null, tokenMatched: tokenMatched(req), kind: Object.keys(step)[0] });
  const message = { id: `msg_${n}`, type: 'message', role: 'assistant', model: body.model ?? 'claude-test', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } };
  const events = [['message_start', { type: 'message_start', message }]];
  let stop = 'end_turn';
  if (step.exec !== undefined || step.write !== undefined) {
    const [name, input] = step.exec !== undefined
      ? ['Bash', { command: step.exec, description: 'scripted step' }]
      : ['Write', { file_path: step.write.path, content: step.write.content }];
    events.push(
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: `toolu_${n}`, name, input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    );
    stop = 'tool_use';
  } else {
    events.push(
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: step.say ?? 'done' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    );
  }
  events.push(
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ['message_stop', { type: 'message_stop' }],
  );
  sse(res, events);
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
      return res.end(JSON.stringify({ access_token: refreshTokens.access, refresh_token: refreshTokens.refresh, id_token: refreshTokens.access, expires_in: 3600 }));
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

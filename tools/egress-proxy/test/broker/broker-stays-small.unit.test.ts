// What the broker keeps and writes does not grow with what the session asks for: identical
// refusals make one log line per interval with a count, the log stops at its cap with one
// last line, the summary names the 20 most frequent rows and counts the rest in bounded
// memory, and a token bucket paces new attempts. The pure parts, with counted inputs.
import t from 'tap';
import { validateDocument } from '@agent-sandbox/shared/json-input';
import { EgressLogLine, EgressSummary, type EgressAttempt } from '@agent-sandbox/shared/validators/egress-proxy';
import { AttemptLog, SummaryCounter, TokenBucket } from '../../dist/index.js';

const denied = (host: string | null, i = 0, rule = 'not-allowlisted'): EgressAttempt => ({
  time: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
  session: 's1',
  method: 'CONNECT',
  host,
  port: 443,
  address: null,
  entry: null,
  decision: 'denied',
  rule,
  status: 403,
  bytesUp: 0,
  bytesDown: 0,
  durationMs: 0.2,
});

const allowed = (host: string): EgressAttempt => ({
  ...denied(host),
  decision: 'allowed',
  rule: 'allowlisted',
  status: 200,
  bytesUp: 10,
  bytesDown: 20,
});

function collect() {
  const lines: EgressLogLine[] = [];
  return { lines, write: (line: EgressLogLine) => lines.push(validateDocument(EgressLogLine, JSON.parse(JSON.stringify(line)), 'line')) };
}

t.test('10 000 identical denials in one interval make one line with count 10000, first and last time', async (t) => {
  const { lines, write } = collect();
  const log = new AttemptLog('s1', write, { capBytes: 8 << 20, intervalMs: 60_000, maxPending: 1024 });
  for (let i = 0; i < 10_000; i += 1) log.record(denied('blocked.example', i));
  t.equal(lines.length, 0, 'nothing is written before the interval ends');
  log.close();
  t.equal(lines.length, 1);
  t.match(lines[0], {
    host: 'blocked.example',
    rule: 'not-allowlisted',
    count: 10_000,
    time: denied(null, 0).time,
    lastTime: denied(null, 9_999).time,
  });
});

t.test('each interval writes its own line; allowed attempts are never aggregated', async (t) => {
  const { lines, write } = collect();
  const log = new AttemptLog('s1', write, { capBytes: 8 << 20, intervalMs: 60_000, maxPending: 1024 });
  log.record(denied('blocked.example'));
  log.record(allowed('api.openai.com'));
  log.record(allowed('api.openai.com'));
  log.flush();
  log.record(denied('blocked.example'));
  log.record(denied('blocked.example', 0, 'bad-port'));
  log.close();
  t.same(
    lines.map((l) => ('rule' in l ? `${l.rule}${l.count ? `x${l.count}` : ''}` : l.event)),
    ['allowlisted', 'allowlisted', 'not-allowlisted', 'not-allowlisted', 'bad-port'],
  );
  t.notOk(
    lines.some((l) => 'count' in l),
    'a single attempt has no count',
  );
});

t.test('more distinct pending rows than maxPending flush the interval early: memory stays bounded', async (t) => {
  const { lines, write } = collect();
  const log = new AttemptLog('s1', write, { capBytes: 8 << 20, intervalMs: 60_000, maxPending: 100 });
  for (let i = 0; i < 250; i += 1) log.record(denied(`n${i}.example`));
  t.equal(lines.length, 200, 'two early flushes of 100 rows');
  log.close();
  t.equal(lines.length, 250, 'every attempt has its line');
});

t.test('the log stops at its cap: the file never passes it, the last line says log-capped, the rest is counted', async (t) => {
  const { lines, write } = collect();
  const cap = 64 * 1024;
  const log = new AttemptLog('s1', write, { capBytes: cap, intervalMs: 60_000, maxPending: 1 });
  for (let i = 0; i < 2_000; i += 1) log.record(denied(`n${i}.example`));
  log.close();
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(JSON.stringify(l)) + 1, 0);
  t.ok(bytes <= cap, `${bytes} bytes written, cap ${cap}`);
  t.match(lines.at(-1), { event: 'log-capped', capBytes: cap, session: 's1' });
  t.equal(lines.filter((l) => 'event' in l).length, 1, 'one log-capped line');
  const state = log.state();
  t.equal(state.bytes, bytes, 'the state counts what was written');
  t.ok(state.capped);
  t.equal(
    state.droppedLines + lines.length - 1,
    2_000,
    `${state.droppedLines} lines dropped: with those written, every attempt is accounted for`,
  );
});

t.test('51 000 distinct names: the summary names 20 rows, counts every attempt, and tracks at most 1 024 rows', async (t) => {
  const counter = new SummaryCounter('s1');
  for (let i = 0; i < 51_000; i += 1) {
    counter.add(denied(`n${i}.flood.example`));
    if (i % 170 === 0) counter.add(denied('often.example'));
  }
  const summary = validateDocument(EgressSummary, counter.summary(), 'summary');
  t.equal(summary.refused.length, 20);
  t.match(summary.refused[0], { host: 'often.example', count: 300 }, 'a name asked for often keeps its row through the flood');
  t.equal(summary.denied, 51_300);
  const named = summary.refused.reduce((n, r) => n + r.count, 0);
  t.equal(named + (summary.others?.refused.count ?? 0), 51_300, 'named and others add up to every attempt');
  t.ok((summary.others?.refused.rows ?? 0) >= 51_001 - 20, `others: ${summary.others?.refused.rows} rows`);
  t.ok(Buffer.byteLength(JSON.stringify(summary)) < 8 * 1024, `the summary is ${Buffer.byteLength(JSON.stringify(summary))} bytes`);
  const tracked = (counter as unknown as { refused: { rows: Map<string, unknown> } }).refused.rows.size;
  t.ok(tracked <= 1024, `${tracked} rows tracked`);
});

t.test('a line that stands for n attempts counts n in the summary', async (t) => {
  const counter = new SummaryCounter('s1');
  counter.add({ ...denied('blocked.example'), count: 7 });
  counter.add(allowed('api.openai.com'));
  t.match(counter.summary(), {
    attempts: 8,
    denied: 7,
    allowed: 1,
    refused: [{ host: 'blocked.example', count: 7 }],
    reached: [{ host: 'api.openai.com', connections: 1 }],
  });
  t.notOk('others' in counter.summary(), 'no others when everything is named');
});

t.test('the token bucket gives its burst at once, then perSecond per second', async (t) => {
  let now = 0;
  const bucket = new TokenBucket({ perSecond: 50, burst: 200 }, () => now);
  let taken = 0;
  while (bucket.take()) taken += 1;
  t.equal(taken, 200, 'the burst');
  t.equal(bucket.waitMs(), 20, 'the next token in 20 ms');
  now += 1000;
  taken = 0;
  while (bucket.take()) taken += 1;
  t.equal(taken, 50, 'one second later, 50 more');
  now += 3_600_000;
  taken = 0;
  while (bucket.take()) taken += 1;
  t.equal(taken, 200, 'an hour later, no more than the burst');
});

// Reading podman's event log (the file backend) for one container: by ID, by name (following the
// first matching container's ID when the name is reused), after an offset, and the same answer
// whether or not lines are skipped unparsed. A synthetic log in podman 4.3's line format.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readContainerEvents } from '../../dist/verdict/event-log.js';

const idA = 'a'.repeat(64);
const idB = 'b'.repeat(64);
const line = (id: string, name: string, status: string, exit?: number) =>
  JSON.stringify({
    ID: id,
    Image: 'localhost/agent-sandbox-busybox:latest',
    Name: name,
    Status: status,
    Time: `2026-11-30T06:00:0${status.length % 10}.000000000Z`,
    Type: 'container',
    ...(exit === undefined ? {} : { ContainerExitCode: exit }),
    Attributes: { note: `mentions ${idB} in passing` },
  });

function logFile(t: { teardown(fn: () => void): void }, lines: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'event-log-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'events.log');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const lines = [
  line('c'.repeat(64), 'other', 'create'),
  line(idA, 'reused', 'create'),
  line(idA, 'reused', 'start'),
  '{"ID":"truncated line being writ',
  line(idA, 'reused', 'died', 137),
  line(idA, 'reused', 'remove'),
  line(idB, 'reused', 'create'),
  line(idB, 'reused', 'died', 0),
  JSON.stringify({ Name: 'reused', Status: 'pull', Time: 'x', Type: 'image' }),
];

t.test('by name: the first container with that name, followed by its ID', async (t) => {
  const read = readContainerEvents({ name: 'reused' }, 0, logFile(t, lines));
  t.equal(read.state, 'read');
  if (read.state !== 'read') return;
  t.equal(read.id, idA);
  t.same(
    read.events.map((e) => e.status),
    ['create', 'start', 'died', 'remove'],
  );
  t.equal(read.events[2]?.containerExitCode, 137);
});

t.test('by ID: only that container, although another line mentions it in passing', async (t) => {
  const read = readContainerEvents({ id: idB }, 0, logFile(t, lines));
  if (read.state !== 'read') return t.fail(read.state);
  t.same(
    read.events.map((e) => [e.status, e.containerExitCode]),
    [
      ['create', undefined],
      ['died', 0],
    ],
  );
});

t.test('after an offset: only what was written later', async (t) => {
  const file = logFile(t, lines);
  const offset = lines.slice(0, 6).join('\n').length + 1;
  const read = readContainerEvents({ name: 'reused' }, offset, file);
  if (read.state !== 'read') return t.fail(read.state);
  t.equal(read.id, idB);
  t.same(
    read.events.map((e) => e.status),
    ['create', 'died'],
  );
});

t.test('a name that JSON would escape is still found (every line parsed)', async (t) => {
  const odd = 'we"ird name';
  const read = readContainerEvents({ name: odd }, 0, logFile(t, [...lines, line(idA.replace(/a/g, 'd'), odd, 'create')]));
  if (read.state !== 'read') return t.fail(read.state);
  t.same(
    read.events.map((e) => e.status),
    ['create'],
  );
});

t.test('a missing log is absent, not an error', async (t) => {
  const read = readContainerEvents({ name: 'x' }, 0, '/nonexistent/events.log');
  t.equal(read.state, 'absent');
});

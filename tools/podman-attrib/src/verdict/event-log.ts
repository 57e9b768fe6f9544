/**
 * Podman's event log, read as the file it is (events_logger = "file", the
 * default without systemd): no extra podman process. Every container leaves
 * create/init/start/died/remove lines; "died" carries ContainerExitCode, and a
 * container whose start failed has create and remove but no start or died.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

export interface PodmanEventLine {
  status: string;
  time: string;
  containerExitCode?: number;
}

export type EventRead =
  | { state: 'read'; source: string; events: PodmanEventLine[]; id?: string }
  | { state: 'unreadable' | 'absent'; source: string; error: string; events: [] };

/** Where podman 4 writes the file backend's log (tmp_dir/events/events.log). */
export function eventLogPath(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string {
  if (uid === 0) return '/run/libpod/events/events.log';
  const runtimeDir = env['XDG_RUNTIME_DIR'] || `/run/user/${uid}`;
  return `${runtimeDir}/libpod/tmp/events/events.log`;
}

/** The log's size now: events after this offset belong to a session started later. */
export function eventLogMark(file = eventLogPath()): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readFrom(file: string, offset: number): string {
  const fd = openSync(file, 'r');
  try {
    const size = statSync(file).size;
    const start = offset > size ? 0 : offset; // the log was rotated or truncated: read it whole
    const buffer = Buffer.alloc(size - start);
    let done = 0;
    while (done < buffer.length) {
      const n = readSync(fd, buffer, done, buffer.length - done, start + done);
      if (n === 0) break;
      done += n;
    }
    return buffer.toString('utf8', 0, done);
  } finally {
    closeSync(fd);
  }
}

/** The events of one container (by name and/or full ID) written after `offset`. */
export function readContainerEvents(match: { name?: string; id?: string }, offset = 0, file = eventLogPath()): EventRead {
  let text: string;
  try {
    text = readFrom(file, offset);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const state = e.code === 'ENOENT' ? 'absent' : 'unreadable';
    return { state, source: file, error: `${e.code ?? ''} ${e.message}`.trim(), events: [] };
  }
  const events: PodmanEventLine[] = [];
  let id = match.id;
  // Lines that cannot name this container are skipped unparsed (the log is ~1 MB of every
  // container's events here; parsing it all cost ~3.5 ms). Podman's names and IDs need no JSON
  // escaping, so a line about the container holds them verbatim; an unusual name parses all.
  const plainName = match.name !== undefined && /^[A-Za-z0-9_.-]+$/.test(match.name) ? match.name : undefined;
  const mayMatch = (line: string) =>
    (match.name !== undefined && plainName === undefined) ||
    (plainName !== undefined && line.includes(plainName)) ||
    (id !== undefined && line.includes(id));
  for (const line of text.split('\n')) {
    if (!line.startsWith('{') || !mayMatch(line)) continue;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // a line being written right now
    }
    if (event['Type'] !== 'container') continue;
    const byId = id !== undefined && event['ID'] === id;
    const byName = match.name !== undefined && event['Name'] === match.name;
    if (!byId && !byName) continue;
    // A name is reused by later containers: after the first match, follow that container's ID.
    if (id === undefined && typeof event['ID'] === 'string') id = event['ID'];
    if (id !== undefined && event['ID'] !== id) continue;
    const out: PodmanEventLine = { status: String(event['Status']), time: String(event['Time']) };
    if (typeof event['ContainerExitCode'] === 'number') out.containerExitCode = event['ContainerExitCode'];
    events.push(out);
  }
  return { state: 'read', source: file, events, ...(id === undefined ? {} : { id }) };
}

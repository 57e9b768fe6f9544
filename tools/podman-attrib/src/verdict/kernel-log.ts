/**
 * The kernel's own log, the one source that recorded every OOM kill and pids
 * rejection here (the container's cgroup, where v1 counts them, is gone after
 * `--rm`). Lines are matched by the cgroup path they name: the OOM report has
 * `oom_memcg=<path>`, the pids controller prints `fork rejected by pids
 * controller in <path>` once per cgroup. Root reads /dev/kmsg; a user without
 * CAP_SYSLOG cannot (dmesg_restrict=1): that is reported, never guessed.
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';

export const kmsgPath = '/dev/kmsg';

export interface KmsgRecord {
  seq: number;
  /** Microseconds since boot. */
  usec: number;
  message: string;
}

export type KmsgRead = { state: 'read'; records: KmsgRecord[] } | { state: 'unreadable' | 'absent'; error: string };

/** One /dev/kmsg record: "prio,seq,usec,flags[,...];message\n[ continuation lines]". */
export function parseKmsgRecord(text: string): KmsgRecord | undefined {
  const semi = text.indexOf(';');
  if (semi < 0) return undefined;
  const [, seq, usec] = text.slice(0, semi).split(',');
  if (seq === undefined || usec === undefined) return undefined;
  // /dev/kmsg writes '\' and non-printable bytes as \xNN (dmesg decodes them); a systemd
  // slice's cgroup path holds one: agent_sandbox-a\x2db.slice arrives as ...a\x5cx2db.slice.
  const message = (text.slice(semi + 1).split('\n')[0] ?? '').replace(/\\x([0-9a-f]{2})/g, (_, hex: string) =>
    String.fromCharCode(parseInt(hex, 16)),
  );
  return { seq: Number(seq), usec: Number(usec), message };
}

/** The only kernel lines attribution reads (findKernelEvents): an OOM kill, and a fork the pids controller refused. */
const oomKillPrefix = 'oom-kill:';
const pidsRejection = 'fork rejected by pids controller in ';
/** The same, as bytes: every other record can be skipped undecoded. */
const attributionMarkers = [oomKillPrefix, pidsRejection].map((marker) => Buffer.from(marker));

/** Does the raw record (its first `length` bytes) hold a line attribution reads? */
function mentionsAttribution(record: Buffer, length: number): boolean {
  return attributionMarkers.some((marker) => {
    const at = record.indexOf(marker);
    return at >= 0 && at + marker.length <= length;
  });
}

/**
 * Reads every record still in the ring after `afterSeq` (non-blocking; one read() per record).
 * With `only: 'attribution'` it keeps just the OOM-kill and pids-rejection lines, without
 * decoding the rest: a ring of ~2 400 records here cost ~10 ms decoded, most of it garbage.
 */
export function readKmsg(afterSeq = -1, file = kmsgPath, only: 'all' | 'attribution' = 'all'): KmsgRead {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why =
      e.code === 'EPERM' || e.code === 'EACCES'
        ? `${e.code}: reading the kernel log needs CAP_SYSLOG (kernel.dmesg_restrict)`
        : `${e.code ?? ''} ${e.message}`;
    return { state: e.code === 'ENOENT' ? 'absent' : 'unreadable', error: why.trim() };
  }
  const records: KmsgRecord[] = [];
  const buffer = Buffer.alloc(16384);
  try {
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buffer, 0, buffer.length, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') continue; // records overwritten while we read: go on with the next one
        if (code === 'EAGAIN') break; // the end of the ring
        throw err;
      }
      if (n === 0) break;
      if (only === 'attribution' && !mentionsAttribution(buffer, n)) continue;
      const record = parseKmsgRecord(buffer.toString('utf8', 0, n));
      if (record && record.seq > afterSeq) records.push(record);
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { state: 'unreadable', error: `${e.code ?? ''} ${e.message}`.trim() };
  } finally {
    closeSync(fd);
  }
  return { state: 'read', records };
}

/** The last sequence number in the ring now (-1 when unreadable or empty): later lines are the session's. */
export function kmsgMark(file = kmsgPath): number {
  const read = readKmsg(-1, file);
  if (read.state !== 'read' || read.records.length === 0) return -1;
  return read.records[read.records.length - 1]!.seq;
}

export interface KernelFindings {
  oomKills: string[];
  pidsRejections: string[];
}

/**
 * Lines about cgroups under `match`: an absolute path (our parent) matches
 * that path and below; a bare name (`libpod-<id>`) matches that path
 * component anywhere (the default parent differs per cgroup manager). A match
 * must end at "/" or the end, so /agent-sandbox/s1 never matches /agent-sandbox/s10.
 */
export function findKernelEvents(records: KmsgRecord[], match: string): KernelFindings {
  const escaped = match.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const names = match.startsWith('/') ? new RegExp(`^${escaped}(?=/|$)`) : new RegExp(`(^|/)${escaped}(\\.scope)?(?=/|$)`);
  const oomKills: string[] = [];
  const pidsRejections: string[] = [];
  for (const { message } of records) {
    if (message.startsWith(oomKillPrefix)) {
      const memcg = /oom_memcg=([^,\s]+)/.exec(message)?.[1];
      if (memcg !== undefined && names.test(memcg)) oomKills.push(message);
    } else if (message.includes(pidsRejection)) {
      const where = message.slice(message.indexOf(pidsRejection) + pidsRejection.length).trim();
      if (names.test(where)) pidsRejections.push(message);
    }
  }
  return { oomKills, pidsRejections };
}

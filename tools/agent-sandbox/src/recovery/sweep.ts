/**
 * What a dead session left is removed by the first process that can take its lock: the
 * session's sentinel right after its launcher died, or else the next launcher start (any
 * command). Removed: the container, the git store (finished as after any session: the
 * session's branch comes home through the same checked import; kept when that fails on this
 * side, and retried by later starts: store-sweep.ts), the staged credential copy, the copies
 * installed in the home, the cache layers, the socket directories, the parent cgroup, the record
 * and the lock. The session's one ledger line is written with reason "abandoned", unless the
 * launcher wrote its own before it died. What lies under a directory the session could write is
 * removed beneath it, never through a link (session-home).
 * Long because a dead session's clean-up is one sequence, and it reads best in one place.
 */
import { closeSync, existsSync, openSync, readSync, readdirSync, rmSync, statSync, fstatSync } from 'node:fs';
import path from 'node:path';
import { runPodman, sweepScratchDirs } from '@agent-sandbox/shared/podman';
import { processAlive } from '@agent-sandbox/shared/process-alive';
import { removeBeneath } from '@agent-sandbox/shared/beneath';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { sweepStaleParents } from '@agent-sandbox/podman-attrib';
import { finishGitStore } from '@agent-sandbox/mount-plan';
import type { GitReturn } from '@agent-sandbox/shared/schemas/mount-plan';
import { describeGitReturn, gitReturnOf } from '../git/audit.js';
import { sweepGitLeftovers } from './store-sweep.js';
import { heldLock, isLockHeld, tryLock, type HeldLock } from '@agent-sandbox/shared/flock';
import { readRecord, tryLockSessionId } from '../workspace/lock.js';
import type { SessionRecord } from '../workspace/session-record.js';
import { layoutFor, sessionsDir } from '../workspace/layout.js';
import { rotatedLedger } from '../ledger/rotate.js';
import { recordVerdict } from '../ledger/verdict.js';
import { describePlanted, plantedField, scrubHome, type PlantedLink } from '../workspace/home.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** True when the ledger already holds a line of this launch (read from its end: it only grows). */
export function ledgerHasRun(file: string, runId: string, tailBytes = 4 << 20): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return false;
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, tailBytes);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.includes(`"runId":"${runId}"`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes the container, also while `podman run` may still be creating it: until the podman
 * client is gone and two removals in a row found nothing (bounded: about 20 s).
 */
export async function removeContainer(record: Pick<SessionRecord, 'containerName' | 'podmanPid'>): Promise<void> {
  let quiet = 0;
  for (let round = 0; round < 40 && quiet < 2; round += 1) {
    const out = await runPodman(['rm', '--force', '--ignore', '--time', '0', record.containerName], { expect: 'any', timeoutMs: 30_000 });
    const removed = out.stdout.trim() !== '';
    quiet = removed || processAlive(record.podmanPid) ? 0 : quiet + 1;
    if (quiet < 2) await sleep(removed ? 0 : 250);
  }
}

/** The stage dir and the home's copies, beneath their own directories; the links the session planted. */
function removeSessionFiles(record: SessionRecord, log: (line: string) => void): PlantedLink[] {
  const report = (what: string) => (err: unknown) =>
    log(`agent-sandbox: could not remove ${what} of ${record.sessionId}: ${forTerminal((err as Error).message)}`);
  // Only the session's own directories, whatever the record says (as the old containment check did).
  const own = (p: string, area: string) => p.endsWith(`/${area}/${record.sessionId}`);
  try {
    if (own(record.stageDir, 'secrets')) removeBeneath(path.dirname(record.stageDir), record.stageDir);
  } catch (err) {
    report('the staged credential')(err);
  }
  try {
    if (!own(record.home, 'homes')) return [];
    const planted = scrubHome(record.home, record.installed);
    const line = describePlanted(record.sessionId, planted);
    if (line) log(line);
    return planted;
  } catch (err) {
    report('the installed credential copies')(err);
    return [];
  }
}

/** The session's git store, finished by `by` (its branch home, the store removed); what came home, for the line. */
function finishStore(root: string, sessionId: string, by: string, log: (line: string) => void): GitReturn | undefined {
  try {
    const report = gitReturnOf(finishGitStore(path.join(root, 'git-stores', sessionId), { by }));
    if (report) for (const line of describeGitReturn(report)) log(line);
    return report;
  } catch (err) {
    log(`agent-sandbox: could not finish the git store of ${sessionId}: ${(err as Error).message}`);
    return undefined;
  }
}

/** A removal that may fail (said, and left to a later sweep). */
function tryRemoving(remove: () => void, what: string, log: (line: string) => void): void {
  try {
    remove();
  } catch (err) {
    log(`agent-sandbox: could not remove ${what}: ${forTerminal((err as Error).message)}`);
  }
}

/**
 * Cleans up one dead session whose lock the caller holds, then releases the lock. What is named
 * by the id alone (the container, the broker's directory) is removed only with the id's lock:
 * while another root's session of the same id runs, they are that session's.
 */
export async function sweepRecord(
  record: SessionRecord,
  root: string,
  lock: HeldLock,
  cause: string,
  log: (line: string) => void,
  heldIdLock?: HeldLock,
): Promise<void> {
  const idLock = heldIdLock ?? tryLockSessionId(record.sessionId);
  try {
    if (idLock)
      await removeContainer(record).catch((err: Error) =>
        log(`agent-sandbox: could not remove container ${record.containerName}: ${err.message}`),
      );
    else
      log(
        `agent-sandbox: session ${record.sessionId}'s id is in use by a session of another root: its container and sockets are left to that session`,
      );
    const gitReturn = finishStore(root, record.sessionId, cause, log);
    const planted = removeSessionFiles(record, log);
    // The layers over its caches (--cache), beneath <root>/cache-layers: the session wrote them.
    const layers = layoutFor(root, record.sessionId).cacheLayerDir;
    tryRemoving(() => removeBeneath(path.dirname(layers), layers), `the cache layers of ${record.sessionId}`, log);
    if (record.cidfile && /\/agent-sandbox-[^/]+\.cid$/.test(record.cidfile)) rmSync(record.cidfile, { force: true });
    if (idLock && record.egressDir && /\/agent-sandbox\/egress\/[^/]+$/.test(record.egressDir)) {
      // The published ports' socket directory is the broker's sibling (egress/publish.ts).
      for (const dir of [record.egressDir, path.join(path.dirname(record.egressDir), '..', 'publish', record.sessionId)])
        rmSync(dir, { recursive: true, force: true });
    }
    try {
      sweepStaleParents({});
    } catch {
      // a parent that cannot be removed now is removed by a later sweep
    }
    // The line may have gone to the older file if the ledger rotated since (ledger/rotate.ts).
    if (!ledgerHasRun(record.ledgerFile, record.runId) && !ledgerHasRun(rotatedLedger(record.ledgerFile), record.runId)) {
      recordAbandoned(record, cause, gitReturn, planted, log);
    }
    rmSync(path.join(sessionsDir(root), `${record.sessionId}.json`), { force: true });
  } finally {
    idLock?.release();
    lock.release();
  }
}

/** The session's one ledger line, written here because its launcher died before writing it. */
function recordAbandoned(
  record: SessionRecord,
  cause: string,
  gitReturn: GitReturn | undefined,
  planted: PlantedLink[],
  log: (line: string) => void,
): void {
  recordVerdict(
    { ledgerFile: record.ledgerFile, ...(record.resultFile ? { resultFile: record.resultFile } : {}) },
    {
      version: 1,
      runId: record.runId,
      sessionId: record.sessionId,
      ...record.line,
      host: record.host,
      startedAt: record.startedAt,
      endedAt: new Date().toISOString(),
      exitCode: 137,
      outcome: 'ran',
      reason: 'abandoned',
      message: `the launcher (pid ${record.pid}) ended before the session did; ${cause} stopped its container, ${gitReturn ? (gitReturn.storeKept ? 'kept its git store (the import failed here: see gitReturn), ' : 'brought its branch home from its git store (see gitReturn), ') : ''}and removed what it had made`,
      evidence: { cause },
      peak: null,
      ...(gitReturn ? { gitReturn } : {}),
      ...(planted.length > 0 ? { planted: plantedField(planted) } : {}),
    },
    log,
  );
}

/** True when the record names a launcher that is no longer alive (its sentinel may be cleaning up). */
function ownerGone(recordFile: string): boolean {
  const record = readRecord(recordFile);
  return record !== undefined && !processAlive(record.pid);
}

/** A lock file with no record this old belongs to no starting launcher. */
const staleLockMs = 60_000;

function olderThan(file: string, ms: number): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs > ms;
  } catch {
    return false;
  }
}

/**
 * The lock of a session whose owner is gone. A lock held while the record's launcher is dead
 * means its sentinel is cleaning up right now: wait for it (seconds), so that after any
 * launcher start the session is gone. A session whose launcher lives is never waited for.
 */
async function lockOfDeadOwner(lockFile: string, recordFile: string, waitMs = 20_000): Promise<HeldLock | undefined> {
  const began = Date.now();
  for (;;) {
    const lock = tryLock(lockFile);
    if (lock) return lock;
    const record = readRecord(recordFile);
    if (!record || processAlive(record.pid) || Date.now() - began > waitMs) return undefined;
    await sleep(100);
  }
}

/**
 * Every session in the root whose owner is gone. Runs at the start of every launcher command;
 * a session whose lock is held (it is running) is never touched.
 */
export async function sweepAbandoned(root: string, log: (line: string) => void): Promise<string[]> {
  // Parent cgroups whose owner died (podman-attrib's own owner records): also those of a
  // session that wrote its line but could not remove a parent conmon was still leaving.
  try {
    sweepStaleParents({});
  } catch {
    // a parent that cannot be removed now is removed by a later sweep
  }
  // podman's working directories of launchers that were killed while podman ran.
  sweepScratchDirs();
  // Git stores kept after an import failed on this side (retried before this start's own
  // sweep can keep more), and the git views of older launchers.
  sweepGitLeftovers(root, log);
  const dir = sessionsDir(root);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const swept: string[] = [];
  for (const name of names.filter((n) => n.endsWith('.lock'))) {
    const id = name.slice(0, -'.lock'.length);
    const recordFile = path.join(dir, `${id}.json`);
    // A lock without a record is a launcher between taking its lock and writing its record (a
    // few ms): trying it could make that launcher see "busy". Only a stale one is removed.
    if (!existsSync(recordFile) && !olderThan(path.join(dir, name), staleLockMs)) continue;
    if (isLockHeld(path.join(dir, name)) && !ownerGone(recordFile)) continue;
    const lock = await lockOfDeadOwner(path.join(dir, name), recordFile);
    if (!lock) continue;
    const record = readRecord(recordFile);
    if (!record) {
      lock.release();
      continue;
    }
    log(`agent-sandbox: cleaning up session ${id}, abandoned by launcher pid ${record.pid}`);
    await sweepRecord(record, root, lock, 'the next launcher start', log);
    swept.push(id);
  }
  // A record without a lock file (its owner died between the two writes) has nothing running.
  for (const name of names.filter((n) => n.endsWith('.json') && !existsSync(path.join(dir, n.replace(/\.json$/, '.lock'))))) {
    const lockFile = path.join(dir, name.replace(/\.json$/, '.lock'));
    const lock = tryLock(lockFile);
    const record = readRecord(path.join(dir, name));
    if (lock && record) {
      await sweepRecord(record, root, lock, 'the next launcher start', log);
      swept.push(record.sessionId);
    } else lock?.release();
  }
  return swept;
}

/** The sentinel's check that `fd` is the lock of this record's session (never a guess). */
export function heldLockOnFd(fd: number, lockFile: string): HeldLock | undefined {
  try {
    return fstatSync(fd).ino === statSync(lockFile).ino ? heldLock(fd, lockFile) : undefined;
  } catch {
    return undefined;
  }
}

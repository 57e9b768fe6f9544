/**
 * The sentinel's cleanup, run only when its launcher died (sentinel.ts): argv is the session's
 * record file and root, fd 3 the session's lock, fd 4 its id's. It does nothing unless fd 3 really is the lock
 * of that record (so running it by hand cannot touch a session), and nothing when the launcher
 * had already finished (no record). Output goes nowhere: there is no one left to read it.
 */
import { sweepRecord, heldLockOnFd } from './recovery/sweep.js';
import { idLockFile, readRecord } from './workspace/lock.js';

async function main(): Promise<void> {
  const [recordFile, root] = process.argv.slice(2);
  if (!recordFile || !root) return;
  const lock = heldLockOnFd(3, recordFile.replace(/\.json$/, '.lock'));
  if (!lock) return;
  const record = readRecord(recordFile);
  if (!record) {
    lock.release();
    return;
  }
  await sweepRecord(record, root, lock, 'its sentinel', () => undefined, heldLockOnFd(4, idLockFile(record.sessionId)));
}

void main().then(
  () => process.exit(0),
  () => process.exit(1),
);

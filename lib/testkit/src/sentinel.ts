/**
 * The sentinel processes of a session, found by what their argv names: the session's record
 * file and the sentinel's entry (recovery/sentinel.ts starts it so). Tests kill them to show
 * what holds when nothing of the launcher's is left.
 */
import { readFileSync, readdirSync } from 'node:fs';

export function sentinelPidsOf(recordFile: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return argv.includes(recordFile) && argv.some((a) => /\/sentinel-main(\.bundle\.cjs|\.js)$/.test(a));
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Whether a process with this pid exists (signal 0 probes without signalling). EPERM means it
 * exists and belongs to another user: alive. A pid can be reused; callers that act on "dead"
 * only remove what that pid's owner left.
 */
export function processAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The measurement the whole tool turns on: this process's own NoNewPrivs bit,
 * read from /proc/self/status. Never inferred from where the code thinks it runs.
 */
import { ToolError } from '@agent-sandbox/shared';

/** "NoNewPrivs:\t1" -> true. A status without the field (kernel < 4.10) cannot be measured: refused. */
export function parseNoNewPrivs(statusText: string): boolean {
  const line = statusText.split('\n').find((l) => l.startsWith('NoNewPrivs:'));
  const value = line?.slice('NoNewPrivs:'.length).trim();
  if (value === '0') return false;
  if (value === '1') return true;
  throw new ToolError(
    'internal',
    'no-new-privs-unmeasurable',
    `/proc/self/status has ${line === undefined ? 'no NoNewPrivs field' : `an unexpected NoNewPrivs value "${value}"`}; cannot decide whether the systemd-run handoff is needed`,
  );
}

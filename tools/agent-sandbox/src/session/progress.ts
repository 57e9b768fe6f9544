/**
 * Progress lines for long waits (host pick, image checks, container start) on stderr,
 * only when stderr is a terminal: scripts and logs stay quiet.
 */
export type Progress = (line: string) => void;

export function makeProgress(isTTY: boolean, write: (line: string) => void): Progress {
  return isTTY ? (line) => write(line) : () => undefined;
}

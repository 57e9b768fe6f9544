/**
 * Progress lines (host pick, checks, staging, container start and end) on stderr, in words,
 * only with --verbose: otherwise the terminal shows the agent, then one line on how the session
 * ended. Nothing here prints a JSON document: what is for programs goes to the ledger.
 */
export type Progress = (line: string) => void;

export function makeProgress(verbose: boolean, write: (line: string) => void): Progress {
  return verbose ? (line) => write(line) : () => undefined;
}

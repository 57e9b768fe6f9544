/**
 * What a running session made, written to <root>/sessions/<id>.json once its lock is held and
 * before anything is created, and updated as it goes: everything a sweep needs to remove it
 * and to write the session's one ledger line when its launcher died.
 */
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';

export interface SessionRecord {
  version: 1;
  /** This launch (also in its ledger line): a sweep never writes a second line for it. */
  runId: string;
  sessionId: string;
  pid: number;
  user: string;
  host: string;
  mode: string;
  startedAt: string;
  containerName: string;
  ledgerFile: string;
  resultFile?: string;
  /** The ledger line's identity fields, for the line a sweep writes. */
  line: Pick<LedgerLine, 'runtime' | 'account' | 'containment' | 'image' | 'limits'>;
  stageDir: string;
  home: string;
  /** Host paths of the credential copies installed in the home (removed after the session). */
  installed: string[];
  /** The parent cgroup podman-attrib made (its own owner record sweeps it too). */
  cgroupParent?: string;
  /** podman's cidfile for the container (podman-attrib makes it in the temp dir). */
  cidfile?: string;
  /** The broker's socket directory (it dies with the launcher; the directory is removed). */
  egressDir?: string;
  /** podman run's pid, once spawned: the sentinel waits for it to be gone. */
  podmanPid?: number;
}

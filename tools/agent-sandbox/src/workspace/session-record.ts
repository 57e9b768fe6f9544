/**
 * What a running session made, written to <root>/sessions/<id>.json once its lock is held and
 * before anything is created, and updated as it goes: everything a sweep needs to remove it
 * and to write the session's one ledger line when its launcher died.
 */
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { PublishedPort } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';

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
  /** The session's network, and the broker's attempt log in broker mode (`ps` counts what was reached and refused so far from it). */
  egress?: { mode: 'broker' | 'none' | 'namespace'; log?: string };
  /** The disk watch's last walk, written by the launcher after each (at least every 15 s): what `ps` shows. */
  disk?: { bytes: number | null; files: number | null; limitBytes: number; limitFiles: number; at: string };
  /** The ports carried from the host's loopback into the container (run --publish). */
  published?: PublishedPort[];
  /** The launcher takes SIGUSR2 as `agent-sandbox stop`'s request (its grace in <id>.stop); absent in records of launchers before it. */
  stopSignal?: 'SIGUSR2';
}

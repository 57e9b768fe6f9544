/**
 * `probe(deps)`: measure, never assume. Reads this process's NoNewPrivs and cgroup,
 * asks systemd-run for its version and runs the user-manager preflight, then says
 * whether `exec` would hand off and with which argv.
 */
import { ToolError } from '@agent-sandbox/shared';
import type { NnpProbeOutput, UserManagerReport } from '@agent-sandbox/shared/schemas/nnp-probe';
import { realDeps, type NnpDeps } from './deps.js';
import { buildHandoffArgv, handoffPath } from './handoff-argv.js';
import { findHandoffUnit, newUnitName } from './handoff-unit.js';
import { parseNoNewPrivs } from './no-new-privs.js';
import { detectSystemdVersion } from './systemd-version.js';
import { checkUserManager } from './user-manager.js';

export interface Measurement {
  noNewPrivs: boolean;
  insideHandoff: string | null;
}

async function readProc(deps: NnpDeps, file: string): Promise<string> {
  try {
    return await deps.readFile(file);
  } catch (err) {
    throw new ToolError('internal', 'proc-unreadable', `cannot read ${file}: ${(err as Error).message}`);
  }
}

/** NoNewPrivs from /proc/self/status and the handoff unit (if any) from /proc/self/cgroup. */
export async function measure(deps: NnpDeps): Promise<Measurement> {
  const noNewPrivs = parseNoNewPrivs(await readProc(deps, '/proc/self/status'));
  const insideHandoff = findHandoffUnit(await readProc(deps, '/proc/self/cgroup'));
  return { noNewPrivs, insideHandoff };
}

/** systemd's version and the user-manager preflight; systemd-run --version and loginctl run at once (each ~5 ms here). */
export async function systemdAndUserManager(deps: NnpDeps): Promise<{ systemdVersion: number | null; userManager: UserManagerReport }> {
  const versionQuery = detectSystemdVersion(deps);
  const [systemdVersion, userManager] = await Promise.all([versionQuery, checkUserManager(deps, versionQuery)]);
  return { systemdVersion, userManager };
}

/** The status file of one handoff: in the caller's runtime directory, which the preflight checked. */
export function statusFileFor(deps: NnpDeps, unit: string): string {
  return `${deps.runtimeRoot}/${deps.uid}/${unit.replace(/\.service$/, '')}/status`;
}

/** The probe report; `command` fills the argv's tail (optional). */
export async function probe(deps: NnpDeps = realDeps(), command: string[] = []): Promise<NnpProbeOutput> {
  const { noNewPrivs, insideHandoff } = await measure(deps);
  const { systemdVersion, userManager } = await systemdAndUserManager(deps);
  const reexec = noNewPrivs && insideHandoff === null;
  const unit = newUnitName();
  const argv = reexec
    ? buildHandoffArgv({
        systemdVersion,
        unit,
        path: handoffPath(deps.env),
        home: deps.home,
        statusFile: statusFileFor(deps, unit),
        command,
      })
    : [];
  return { ok: true, noNewPrivs, reexec, insideHandoff, systemdVersion, userManager, argv };
}

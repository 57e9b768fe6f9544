/**
 * The session's git, around the run: mount-plan's git store made before the container starts
 * (everything git writes inside goes there; nothing reaches the host's repository), and, once
 * the container is gone, the store finished: the session's branch brought home through a
 * checked fetch, fast-forward only, every other ref it made dropped and counted, the store
 * removed. Also what a mount cannot prevent, from one walk of the workspace before and after:
 * nested repositories, and the files host tools run or read when the user opens, enters or
 * builds the workspace (a report, not a block). All of it is printed on stderr (bounded: at
 * most 20 refs, 50 files named) and goes to the ledger line.
 */
import path from 'node:path';
import {
  diffHostRun,
  diffNestedGit,
  finishGitStore,
  maxImportRetries,
  prepareGitStore,
  scanNestedGit,
  type NestedScan,
} from '@agent-sandbox/mount-plan';
import { ToolError } from '@agent-sandbox/shared';
import { boundedList, describeBounded } from '@agent-sandbox/shared/bounded-list';
import type { GitReturn, HostRunReport, MountPlanOutput, NestedGitChange, RefChange } from '@agent-sandbox/shared/schemas/mount-plan';
import { forTerminal, refForTerminal } from '@agent-sandbox/shared/terminal-text';
import { quarantine, toQuarantine, type Quarantined } from './quarantine.js';

export interface GitAudit {
  nestedGit: NestedGitChange[];
  /** What was moved out of the workspace (quarantine in this folder); absent when nothing was. */
  quarantined?: Quarantined;
  /** What came home from the session's store. */
  gitReturn?: GitReturn;
  /** Host-run files the session changed (none: absent). */
  hostRun?: HostRunReport;
}

export interface GitSession {
  /** The workspace's "before" walk is done: await it before the agent starts. */
  ready(): Promise<void>;
  /** Brings the branch home and removes the store; call once the container is gone (idempotent). */
  finish(): Promise<GitAudit>;
}

/** The ledger's part of finishGitStore's report. */
export function gitReturnOf(report: ReturnType<typeof finishGitStore>): GitReturn | undefined {
  if (report.absent) return undefined;
  const { absent: _absent, ...line } = report;
  return line;
}

/**
 * Prepares the store (87 when it cannot be made). A store this workspace's last session left
 * (a launcher that died before anyone finished it, a Pod's, one kept after a failed import) is
 * finished first: its branch comes home before the new session starts from it. When that
 * import fails again, the store stays and the session is refused (87 git-store-kept): a new
 * session must not start from a branch that lacks the last one's commits.
 */
export async function startGitSession(
  mounts: MountPlanOutput,
  workspace: string,
  sessionId: string,
  log: (line: string) => void,
  options: { quarantineRoot?: string; diskBytes?: number } = {},
): Promise<GitSession> {
  const { quarantineRoot } = options;
  const store = mounts.gitStore;
  if (store) {
    const left = gitReturnOf(finishGitStore(store.dir, { by: 'the next session in this workspace' }));
    if (left?.storeKept) throw keptRefusal(left.storeKept);
    if (left) for (const line of describeGitReturn(left)) log(line);
    prepareGitStore(store, sessionId, options.diskBytes ? { diskBytes: options.diskBytes } : {});
  }
  // The walk overlaps the rest of the preparation (egress, cgroup); the launcher awaits it
  // (ready) before the agent starts, so the agent cannot change a file before it was seen.
  const before: Promise<NestedScan> = scanNestedGit(workspace);
  let done: Promise<GitAudit> | undefined;
  return {
    ready: async () => void (await before),
    finish: () =>
      (done ??= (async () => {
        const gitReturn = store ? gitReturnOf(finishGitStore(store.dir)) : undefined;
        const [was, now] = [await before, await scanNestedGit(workspace)];
        const hostRun = diffHostRun(was.hostRun, now.hostRun);
        const nestedGit = diffNestedGit(was, now);
        const quarantined = quarantineRoot
          ? quarantine(workspace, quarantineRoot, toQuarantine(nestedGit, was.special, now.special))
          : undefined;
        return {
          nestedGit: mounts.git.kind !== 'none' ? nestedGit : [],
          ...(quarantined ? { quarantined } : {}),
          ...(gitReturn ? { gitReturn } : {}),
          ...(hostRun.named.length > 0 ? { hostRun } : {}),
        };
      })()),
  };
}

function describeRef(r: RefChange): string {
  const what = r.old === null ? 'made' : r.new === null ? 'deleted' : 'moved';
  return `${refForTerminal(r.name)} (${what})`;
}

type StoreKept = NonNullable<GitReturn['storeKept']>;

/** How the user imports or drops a kept store by hand. */
export function keptRemedy(k: StoreKept): string {
  const root = path.dirname(path.dirname(k.path));
  return `once the cause is fixed, \`agent-sandbox workspace import ${forTerminal(path.basename(k.path))} --root ${forTerminal(root)}\` imports it; \`rm -r ${forTerminal(k.path)}\` drops its commits`;
}

/** The refusal of a session whose workspace still has a kept store that failed its import again. */
export function keptRefusal(k: StoreKept): ToolError {
  return new ToolError(
    'gitMount',
    'git-store-kept',
    `${forTerminal(k.path)} holds commits of this workspace's last session that could not be imported (${forTerminal(k.why)}); no session starts before they are home: ${keptRemedy(k)}`,
    { store: k.path },
  );
}

/** Where a kept store is, what failed, and what happens next. */
export function describeStoreKept(k: StoreKept): string {
  const next = k.retried
    ? `the next agent-sandbox command retries the import (${k.attempts} of ${maxImportRetries + 1} tries made)`
    : `${k.attempts} imports failed, so it waits for you: ${keptRemedy(k)}`;
  return `agent-sandbox: the session's commits are not home yet: ${forTerminal(k.why)}; its git store is kept with them at ${forTerminal(k.path)}; ${next}`;
}

/** The lines for stderr about the store: what did not come home, and why. Nothing when all went well. */
export function describeGitReturn(r: GitReturn): string[] {
  const lines: string[] = [];
  const branch = r.branch === null ? '(none)' : refForTerminal(r.branch);
  if (r.storeKept) lines.push(describeStoreKept(r.storeKept));
  else if (r.outcome === 'side-ref') lines.push(`agent-sandbox: ${branch} was not advanced: ${forTerminal(r.message ?? '')}`);
  else if (r.outcome === 'failed') lines.push(`agent-sandbox: the session's commits did not come home: ${forTerminal(r.message ?? '')}`);
  if (r.outcome === 'none' && r.message && r.branch !== null) lines.push(`agent-sandbox: ${forTerminal(r.message)}`);
  const dropped = r.refsDropped;
  if (dropped.named.length > 0) {
    lines.push(
      `agent-sandbox: ${dropped.named.length + dropped.others} ref change${dropped.named.length + dropped.others === 1 ? '' : 's'} outside ${branch} stayed in the session's store and were dropped: ${describeBounded({ named: dropped.named.map(describeRef), others: dropped.others })}`,
    );
  }
  for (const kept of r.kept) lines.push(`agent-sandbox: ${forTerminal(kept)}`);
  if (r.leftInStore.named.length > 0) {
    lines.push(
      `agent-sandbox: ${r.storeKept ? "left in the session's store (dropped when it goes)" : "dropped with the session's store"}: ${describeBounded({ named: r.leftInStore.named.map((n) => forTerminal(n)), others: r.leftInStore.others })}`,
    );
  }
  return lines;
}

/** One block: the host-run files the session changed, 50 named, then a count. */
export function describeHostRun(report: HostRunReport): string[] {
  const lines = [
    'agent-sandbox: the session changed files that tools on this host run or read when you open, enter or build the workspace; read them before you do:',
  ];
  for (const c of report.named) lines.push(`agent-sandbox:   ${forTerminal(c.path)} (${c.change})`);
  if (report.others > 0) lines.push(`agent-sandbox:   and ${report.others} more`);
  return lines;
}

/** The human lines for stderr: what changed that the user should look at. */
export function describeGitAudit(audit: GitAudit): string[] {
  const lines = audit.gitReturn ? describeGitReturn(audit.gitReturn) : [];
  if (audit.hostRun) lines.push(...describeHostRun(audit.hostRun));
  if (audit.quarantined) {
    const q = audit.quarantined;
    const count = q.named.length + q.others;
    lines.push(
      `agent-sandbox: moved ${count} thing${count === 1 ? '' : 's'} your git or shell would run or block on out of the workspace (nested repositories, FIFOs, sockets): ${describeBounded({ named: q.named.map((n) => forTerminal(n.path)), others: q.others })}; they are in ${forTerminal(q.dir)}, and sh ${forTerminal(q.restore)} puts them back`,
    );
  }
  const nested = boundedList(audit.nestedGit);
  for (const n of nested.named)
    lines.push(
      `agent-sandbox: a nested git ${n.type} was ${n.change} at ${forTerminal(n.path)}: do not run git there before you have looked at it`,
    );
  if (nested.others > 0)
    lines.push(`agent-sandbox: and ${nested.others} more nested git repositories made or changed (see the ledger line)`);
  return lines;
}

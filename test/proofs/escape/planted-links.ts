// Links the agent plants where the launcher cleans up (issue 29): a session replaces every
// credential directory of the runtime table in its home with a symbolic link to the host user's
// own (or to /etc), and the entrypoint log with a link to a credential file (or /etc/passwd),
// then ends normally, or has its launcher and sentinel killed with SIGKILL so that the next
// launcher start sweeps it. The host user (a home the test makes, holding a canary credential of
// every runtime) must keep every byte. The control replays the same plant on a copy with the
// old clean-up (a plain rmSync through the path) and shows it deletes the target.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { entrypointLogName } from '@agent-sandbox/shared/container-layout';
import { runBin, settledWithin, type Teardown } from '@agent-sandbox/testkit';
import { sentinelPids } from './lifecycle.js';
import {
  addWorkspace,
  chownAgent,
  launch,
  launcherCommand,
  ledgerLines,
  sessionRoot,
  sleep,
  waitFor,
  type LaunchEnd,
  type SessionRoot,
} from './session-kit.js';

export interface PlantCase {
  label: string;
  runtime: string;
  /** The links point at /etc instead of the host user's home. */
  toEtc: boolean;
}
export const plantCases: PlantCase[] = [
  { label: 'codex', runtime: 'codex', toEtc: false },
  { label: 'claude', runtime: 'claude', toEtc: false },
  { label: 'cursor', runtime: 'cursor-agent', toEtc: false },
  { label: 'etc', runtime: 'codex', toEtc: true },
];
export type PlantMode = 'normal end' | 'kill -9, then the next start';
export const plantModes: PlantMode[] = ['normal end', 'kill -9, then the next start'];

/** The runtime table as cred-stage prints it: each runtime's credential path below HOME. */
export async function credentialRows(): Promise<Array<{ runtime: string; file: string }>> {
  const out = await runBin('cred-stage', ['runtimes']);
  return (out.json.runtimes as Array<{ runtime: string; containerPath: string }>).map((r) => ({
    runtime: r.runtime,
    file: r.containerPath.replace(/^~\//, ''),
  }));
}

const sha = (file: string) => (existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : 'absent');

/** The host user's canary credential of each runtime, beside the codex one sessionRoot wrote. */
async function addCanaries(r: SessionRoot, rows: Array<{ runtime: string; file: string }>): Promise<string[]> {
  const docs: Record<string, unknown> = {
    claude: { claudeAiOauth: { accessToken: r.canary, refreshToken: r.canary, expiresAt: Date.now() + 30 * 86_400_000 } },
    'cursor-agent': { accessToken: r.canary },
  };
  for (const row of rows.filter((x) => docs[x.runtime])) {
    const file = path.join(r.hostHome, row.file);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify(docs[row.runtime]), { mode: 0o600 });
  }
  return rows.map((row) => path.join(r.hostHome, row.file));
}

/** name below the home -> target, for a case. */
function plantsOf(c: PlantCase, rows: Array<{ runtime: string; file: string }>, hostHome: string): Array<[string, string]> {
  const own = rows.find((row) => row.runtime === c.runtime)!;
  const dirs = rows.map((row) => path.posix.dirname(row.file));
  return [
    ...dirs.map((d): [string, string] => [d, c.toEtc ? '/etc' : path.join(hostHome, d)]),
    [entrypointLogName, c.toEtc ? '/etc/passwd' : path.join(hostHome, own.file)],
  ];
}

/** The agent: checks its credential was installed, plants, records what, and (kill mode) waits ignoring SIGTERM. */
function plantScript(plants: Array<[string, string]>, ownFile: string, wsInside: string): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/sh',
    'set -eu',
    `test -f "$HOME"/${q(ownFile)} && echo installed-before=1`,
    `plant() { rm -rf "$HOME/$1"; mkdir -p "$(dirname "$HOME/$1")"; ln -s "$2" "$HOME/$1"; echo "$1 $2" >> ${q(`${wsInside}/.astest/planted.txt`)}; }`,
    ...plants.map(([name, target]) => `plant ${q(name)} ${q(target)}`),
    `: > ${q(`${wsInside}/.planted`)}`,
    'if [ "${1:-}" = wait ]; then trap "" TERM; while :; do sleep 1; done; fi',
    '',
  ].join('\n');
}

/** Symbolic links anywhere below a directory (lstat: none is followed). */
function linksBelow(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isSymbolicLink() ? [p] : e.isDirectory() ? linksBelow(p) : [];
  });
}

/**
 * The control: the same links in a copy of the home, pointing into a copy of the host user's
 * home (or a throwaway stand-in for /etc holding a file of the installed name), then the old
 * clean-up of this runtime's copy: rmSync through the path (recursive, as the old sweep did).
 */
function oldCleanupOnACopy(dir: string, plants: Array<[string, string]>, ownFile: string, hostHome: string, recursive: boolean) {
  const home = path.join(dir, 'home');
  const user = path.join(dir, 'user');
  const etc = path.join(dir, 'etc');
  cpSync(hostHome, user, { recursive: true });
  mkdirSync(home, { recursive: true });
  mkdirSync(etc, { recursive: true });
  writeFileSync(path.join(etc, path.basename(ownFile)), 'a file of the installed name where the link leads');
  const map = (target: string) =>
    target.startsWith(`${hostHome}/`)
      ? path.join(user, target.slice(hostHome.length))
      : target.startsWith('/etc')
        ? path.join(etc, target.slice(4))
        : target;
  for (const [name, target] of plants) {
    mkdirSync(path.dirname(path.join(home, name)), { recursive: true });
    symlinkSync(map(target), path.join(home, name));
  }
  const ownDir = plants.find(([name]) => name === path.posix.dirname(ownFile));
  if (!ownDir) return { followed: '', existedBefore: false, deleted: false };
  const followed = path.join(map(ownDir[1]), path.basename(ownFile));
  const existedBefore = existsSync(followed);
  rmSync(path.join(home, ownFile), { force: true, recursive });
  return { followed, existedBefore, deleted: existedBefore && !existsSync(followed) };
}

export interface PlantOutcome {
  mode: PlantMode;
  /** The planting session's end (normal mode), or the next start's (kill mode). */
  end: LaunchEnd;
  agentStdout: string;
  plants: Array<[string, string]>;
  expectedPaths: string[];
  hostFiles: Array<{ file: string; before: string; after: string }>;
  linksLeft: string[];
  installedLeft: boolean;
  lines: Array<Record<string, any>>;
  control: { followed: string; existedBefore: boolean; deleted: boolean };
}

/** What of the host the plant aims at, hashed: the host user's credentials, and /etc's files it names. */
function hostFilesOf(c: PlantCase, credentials: string[]): string[] {
  return c.toEtc ? [...credentials, '/etc/passwd', '/etc/auth.json', '/etc/.credentials.json', '/etc/cursor/auth.json'] : credentials;
}

/** One planting session for one case and mode; everything it made goes at teardown. */
export async function plantSession(t: Teardown, c: PlantCase, mode: PlantMode): Promise<PlantOutcome> {
  const rows = await credentialRows();
  const own = rows.find((row) => row.runtime === c.runtime)!;
  const r = await sessionRoot(t, `plant-${c.label}`);
  const credentials = await addCanaries(r, rows);
  const plants = plantsOf(c, rows, r.hostHome);
  const ws = await addWorkspace(t, r, `plant-${c.label}`);
  await writeFile(path.join(ws.path, '.astest', 'plant.sh'), plantScript(plants, own.file, ws.inside));
  await chmod(path.join(ws.path, '.astest', 'plant.sh'), 0o755);
  await chownAgent(ws.path);
  const watched = hostFilesOf(c, credentials);
  const before = watched.map(sha);
  const flags = ['--runtime', c.runtime];
  let end: LaunchEnd;
  let agentStdout = '';
  if (mode === 'normal end') {
    end = await launch(r, ws, `${ws.inside}/.astest/plant.sh`, [], flags).done;
    agentStdout = end.stdout;
  } else {
    const run = launch(r, ws, `${ws.inside}/.astest/plant.sh`, ['wait'], flags);
    const planted = await waitFor(() => existsSync(path.join(ws.path, '.planted')), 120_000, 100);
    if (!planted || !run.pid)
      throw new Error(`the ${c.label} session did not plant: ${JSON.stringify(await Promise.race([run.done, sleep(100)]))}`);
    const sentinels = sentinelPids(ws, r.root);
    if (sentinels.length !== 1) throw new Error(`expected one sentinel for ${ws.id}, found ${sentinels.length}`);
    process.kill(run.pid, 'SIGKILL');
    for (const pid of sentinels) process.kill(pid, 'SIGKILL');
    end = await launcherCommand(r, ws, 'plan');
    agentStdout = (await settledWithin(run.done, 30_000))?.stdout ?? '';
  }
  const recorded = existsSync(path.join(ws.path, '.astest', 'planted.txt'))
    ? readFileSync(path.join(ws.path, '.astest', 'planted.txt'), 'utf8')
    : '';
  const seen = recorded
    .split('\n')
    .filter(Boolean)
    .map((l): [string, string] => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]);
  return {
    mode,
    end,
    agentStdout,
    plants: seen,
    expectedPaths: plants.map(([name]) => `/sandbox/home/${name}`).sort(),
    hostFiles: watched.map((file, i) => ({ file, before: before[i]!, after: sha(file) })),
    linksLeft: linksBelow(ws.home),
    installedLeft: (() => {
      try {
        lstatSync(path.join(ws.home, own.file));
        return true;
      } catch {
        return false;
      }
    })(),
    lines: ledgerLines(ws),
    control: oldCleanupOnACopy(path.join(r.base, 'control'), seen, own.file, r.hostHome, mode !== 'normal end'),
  };
}

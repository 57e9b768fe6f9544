/**
 * One session layout for the tests that start real sessions through the launcher (its own
 * tests, the proofs, the escape attempts, end to end): a permitted root in a temporary
 * directory, a host HOME holding a canary credential (mode 0600) that the session may only get
 * a staged copy of, and workspaces under <root>/workspaces owned by the agent uid (rootful
 * podman, no user namespace: the container's 1000 is the host's), each with its own ledger.
 * Everything is removed when the test ends, pass or fail, the sessions' containers included
 * (one podman call per test: podman is slow under load).
 *
 *   const root = await sessionRoot(t, 'label');
 *   const ws = await sessionWorkspace(t, root, 'label', { files: { 'run.sh': '#!/bin/sh\n...' } });
 *   await runBin('agent-sandbox', ['run', ...launcherFlags(root, ws), '--', ...]);
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, copyFile, lchown, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { tempDir, type Teardown } from './temp-dir.js';

/** The agent's uid and gid inside the container (and, rootful, on the host). */
export const agentUid = 1000;
/** The launcher's default image: the real agent CLIs (image/build-agents.sh). */
export const agentsImage = 'localhost/agent-sandbox-agents:latest';

/** Where each runtime's CLI keeps its credential, relative to HOME (cred-stage's table). */
export const credentialPaths = { codex: '.codex/auth.json', claude: '.claude/.credentials.json' } as const;
export type FixtureRuntime = keyof typeof credentialPaths;

export interface SessionRoot {
  /** The test's temporary directory (mode 0755: the agent uid passes through it). */
  base: string;
  /** The permitted root, <base>/root. */
  root: string;
  /** The launcher's HOME, <base>/host-home. */
  hostHome: string;
  /** The host credential file, or undefined when the test made none. */
  credential: string | undefined;
  /** The secret in it: must never appear where the session could leave it. */
  canary: string;
  /** The launcher's environment: that HOME, this PATH, a UTF-8 locale; nothing else. */
  env: Record<string, string>;
}

export interface RootOptions {
  runtime?: FixtureRuntime;
  /** The credential's document for the canary (default: the runtime's API-key shape); false: no credential at all. */
  credential?: false | ((canary: string) => unknown);
  /** A fixed canary (default: sk-astest-<label>-<random hex>). */
  canary?: string;
}

/** The credential a runtime's CLI reads, as a document holding the canary. */
function defaultCredential(runtime: FixtureRuntime, canary: string): unknown {
  if (runtime === 'codex') return { OPENAI_API_KEY: canary };
  return {
    claudeAiOauth: {
      accessToken: canary,
      refreshToken: 'r',
      expiresAt: Date.now() + 86_400_000,
      scopes: ['user:inference'],
      subscriptionType: 'max',
    },
  };
}

/** A permitted root and a host HOME whose credential holds a canary; removed at teardown. */
export async function sessionRoot(t: Teardown, label: string, options: RootOptions = {}): Promise<SessionRoot> {
  const base = await tempDir(t, `astest-${label}-`);
  await chmod(base, 0o755);
  const root = path.join(base, 'root');
  const hostHome = path.join(base, 'host-home');
  await mkdir(path.join(root, 'workspaces'), { recursive: true });
  await mkdir(hostHome, { recursive: true });
  const runtime = options.runtime ?? 'codex';
  const canary = options.canary ?? `sk-astest-${label}-${randomBytes(8).toString('hex')}`;
  let credential: string | undefined;
  if (options.credential !== false) {
    credential = path.join(hostHome, credentialPaths[runtime]);
    await mkdir(path.dirname(credential), { recursive: true, mode: 0o700 });
    await writeFile(credential, JSON.stringify((options.credential ?? ((c: string) => defaultCredential(runtime, c)))(canary)), {
      mode: 0o600,
    });
  }
  return {
    base,
    root,
    hostHome,
    credential,
    canary,
    env: { HOME: hostHome, PATH: process.env['PATH'] ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
  };
}

export interface SessionWorkspace {
  id: string;
  /** Host path <root>/workspaces/<id>. */
  path: string;
  /** Where the session sees it. */
  inside: string;
  /** The session home the launcher makes, <root>/homes/<id>. */
  home: string;
  /** This workspace's own ledger, <base>/ledger-<id>.jsonl. */
  ledger: string;
  /** The session's container name. */
  container: string;
}

export interface WorkspaceOptions {
  /** A fixed id (default astest-<label>-<random hex>). */
  id?: string;
  /** Files written into the workspace (executable), by name. */
  files?: Record<string, string>;
  /** Files copied into the workspace (executable), name -> source path. */
  copy?: Record<string, string>;
  /** Runs before the files are added: e.g. a git repository made there. */
  prepare?: (workspace: string) => Promise<void>;
  /** Also make the session home, owned by the agent uid (for tests that run sandbox-run directly). */
  home?: boolean;
  /** Tests that name their own containers (sandbox-run directly) leave the launcher's name alone. */
  launcherContainer?: false;
}

const containersOf = new WeakMap<Teardown, Set<string>>();

/** The session's container is removed when the test ends: one podman call for all of a test's. */
export function removeContainerAtTeardown(t: Teardown, name: string): void {
  let names = containersOf.get(t);
  if (!names) {
    const all = new Set<string>();
    containersOf.set(t, all);
    names = all;
    t.teardown(() => runPodman(['rm', '--force', '--ignore', '--time', '0', ...all], { expect: 'any', timeoutMs: 120_000 }));
  }
  names.add(name);
}

/** Gives a tree to the agent uid, links included as links (lchown; nothing is followed). */
export async function chownToAgent(dir: string): Promise<void> {
  await lchown(dir, agentUid, agentUid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownToAgent(child);
    else await lchown(child, agentUid, agentUid);
  }
}

/** A workspace under the root, owned by the agent uid, with the given files; its container removed at teardown. */
export async function sessionWorkspace(
  t: Teardown,
  root: SessionRoot,
  label: string,
  options: WorkspaceOptions = {},
): Promise<SessionWorkspace> {
  const id = options.id ?? `astest-${label}-${randomBytes(3).toString('hex')}`;
  const ws = path.join(root.root, 'workspaces', id);
  if (options.prepare) await options.prepare(ws);
  await mkdir(ws, { recursive: true });
  for (const [name, source] of Object.entries(options.copy ?? {})) {
    await mkdir(path.dirname(path.join(ws, name)), { recursive: true });
    await copyFile(source, path.join(ws, name));
    await chmod(path.join(ws, name), 0o755);
  }
  for (const [name, content] of Object.entries(options.files ?? {})) await writeFile(path.join(ws, name), content, { mode: 0o755 });
  await chownToAgent(ws);
  const home = path.join(root.root, 'homes', id);
  if (options.home) {
    await mkdir(home, { recursive: true });
    await chown(home, agentUid, agentUid);
  }
  const container = `agent-sandbox-${id}`;
  if (options.launcherContainer !== false) removeContainerAtTeardown(t, container);
  return { id, path: ws, inside: `/sandbox/workspaces/${id}`, home, ledger: path.join(root.base, `ledger-${id}.jsonl`), container };
}

/** The launcher's flags for a session in this workspace: runtime (codex unless `extra` names one), workspace, root, ledger. */
export function launcherFlags(root: SessionRoot, ws: SessionWorkspace, extra: string[] = []): string[] {
  return [
    ...(extra.includes('--runtime') ? [] : ['--runtime', 'codex']),
    '--workspace',
    ws.id,
    '--root',
    root.root,
    '--ledger',
    ws.ledger,
    ...extra,
  ];
}

/** A JSON-lines file's documents (none when it does not exist). */
export function jsonLines(file: string): Array<Record<string, any>> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, any>);
}

/**
 * The credential table: one row per runtime, the only place that knows where a
 * runtime keeps its credential file on the host and inside the container.
 * Adding a runtime is adding a row.
 */
import * as nodePath from 'node:path';
import { claudeExpiry, codexExpiry, cursorExpiry, type ExpiryReader } from './expiry.js';

/** Where the host's credential files appear inside the container, read-only. */
export const secretsRoot = '/sandbox-secrets';

/** The container's HOME in localhost/agent-sandbox (image/Containerfile). */
export const defaultContainerHome = '/sandbox/home';

export interface HostContext {
  home: string;
  env: NodeJS.ProcessEnv;
}

export interface CredentialRow {
  runtime: string;
  /** The default account's credential file on the host. */
  hostPath(ctx: HostContext): string;
  /** The same, as documentation ("${CODEX_HOME:-~/.codex}/auth.json"). */
  hostPathTemplate: string;
  /** Where install copies it, relative to the container's HOME. */
  containerPath: string;
  expiry: ExpiryReader;
  expiryDescription: string;
  /** What to run on the host to log in or refresh. */
  login: string;
}

/** An absolute env value, or undefined (XDG: relative values are ignored). */
function absoluteEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value && nodePath.isAbsolute(value) ? value : undefined;
}

export const credentialTable: readonly CredentialRow[] = [
  {
    runtime: 'codex',
    hostPath: ({ home, env }) => nodePath.join(absoluteEnv(env, 'CODEX_HOME') ?? nodePath.join(home, '.codex'), 'auth.json'),
    hostPathTemplate: '${CODEX_HOME:-~/.codex}/auth.json',
    containerPath: '.codex/auth.json',
    expiry: codexExpiry,
    expiryDescription: 'exp claim of the tokens.access_token JWT (ChatGPT login); none for the API-key form',
    login: 'run `codex login` (or any codex command) on the host',
  },
  {
    runtime: 'claude',
    hostPath: ({ home }) => nodePath.join(home, '.claude', '.credentials.json'),
    hostPathTemplate: '~/.claude/.credentials.json',
    containerPath: '.claude/.credentials.json',
    expiry: claudeExpiry,
    expiryDescription: 'claudeAiOauth.expiresAt (ms since the epoch)',
    login: 'run `claude` on the host (or `claude /login`)',
  },
  {
    runtime: 'cursor-agent',
    hostPath: ({ home, env }) =>
      nodePath.join(absoluteEnv(env, 'XDG_CONFIG_HOME') ?? nodePath.join(home, '.config'), 'cursor', 'auth.json'),
    hostPathTemplate: '${XDG_CONFIG_HOME:-~/.config}/cursor/auth.json',
    containerPath: '.config/cursor/auth.json',
    expiry: cursorExpiry,
    expiryDescription: 'expiresAt/expires_at, else the exp of an accessToken JWT; none when neither is present',
    login: 'run `cursor-agent login` on the host',
  },
];

export function findRow(runtime: string): CredentialRow | undefined {
  return credentialTable.find((row) => row.runtime === runtime);
}

export function runtimeNames(): string[] {
  return credentialTable.map((row) => row.runtime);
}

/** The staged file's name: the basename of the container path. */
export function stagedName(row: CredentialRow): string {
  return nodePath.basename(row.containerPath);
}

/** `/sandbox-secrets/<runtime>/<file>`. */
export function stagingPath(row: CredentialRow): string {
  return `${secretsRoot}/${row.runtime}/${stagedName(row)}`;
}

/** The table as `cred-stage runtimes` prints it. */
export function describeTable() {
  return credentialTable.map((row) => ({
    runtime: row.runtime,
    hostPath: row.hostPathTemplate,
    containerPath: `~/${row.containerPath}`,
    stagingPath: stagingPath(row),
    expiry: row.expiryDescription,
    login: row.login,
  }));
}

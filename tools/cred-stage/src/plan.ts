/**
 * Host side: which file, for which account, mounted where, installed where; and
 * is its token good for the whole session? Reads only expiry metadata; the
 * output carries identity and paths, never contents.
 */
import { homedir } from 'node:os';
import * as nodePath from 'node:path';
import { ToolError } from '@agent-sandbox/shared/tool-error';
import type { CredStagePlanInput, CredStagePlanOutput } from '@agent-sandbox/shared/schemas/cred-stage';
import { resolveAccountPath } from './accounts.js';
import { defaultContainerHome, findRow, runtimeNames, stagedName, stagingPath, type CredentialRow } from './credential-table.js';
import { ExpiryUnreadable } from './expiry.js';
import { parseCredential, readCredentialFile } from './read-credential.js';

/** A session's expected length when the caller does not say: two hours. */
export const defaultSessionSeconds = 2 * 3600;

export interface PlanDeps {
  /** Source of CODEX_HOME, XDG_CONFIG_HOME and HOME (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Clock in ms (default Date.now). */
  now?: () => number;
}

/** A plan plus the bytes it checked; only `stage` uses the bytes, and never prints them. */
export interface ResolvedCredential {
  plan: CredStagePlanOutput;
  bytes: Buffer;
}

export function requireRow(runtime: string): CredentialRow {
  const row = findRow(runtime);
  if (!row) {
    throw new ToolError('usage', 'unknown-runtime', `input.runtime: unknown runtime "${runtime}"; known: ${runtimeNames().join(', ')}`, {
      field: 'input.runtime',
    });
  }
  return row;
}

function expiryRefusal(name: string, expiresAtMs: number, now: number, sessionSeconds: number, login: string): ToolError {
  const when = new Date(expiresAtMs).toISOString();
  const state = expiresAtMs <= now ? `expired at ${when}` : `expires at ${when}, within the session's expected ${sessionSeconds} s`;
  return new ToolError(
    'credential',
    'expiring',
    `${name}: the token ${state}; refresh it on the host first (${login}). A refresh inside the container is discarded, ` +
      'and a single-use refresh token used there would log the host out. allowExpiring: true stages it anyway.',
    { expiresAt: when },
  );
}

/** The expiry time in ms, null for none; refuses what cannot be staged for the whole session. */
function checkExpiry(row: CredentialRow, doc: Record<string, unknown>, name: string, input: CredStagePlanInput, now: number) {
  const sessionSeconds = input.sessionSeconds ?? defaultSessionSeconds;
  let expiresAtMs: number | null;
  try {
    expiresAtMs = row.expiry(doc);
  } catch (err) {
    if (!(err instanceof ExpiryUnreadable)) throw err;
    if (!input.allowExpiring) {
      throw new ToolError('credential', 'expiry-unreadable', `${name}: cannot tell when the token expires: ${err.message}`);
    }
    return { expiresAtMs: null, override: true, sessionSeconds };
  }
  const tooSoon = expiresAtMs !== null && expiresAtMs - now < sessionSeconds * 1000;
  if (tooSoon && !input.allowExpiring) throw expiryRefusal(name, expiresAtMs as number, now, sessionSeconds, row.login);
  return { expiresAtMs, override: tooSoon, sessionSeconds };
}

/** The plan and the bytes it checked. */
export async function resolveCredential(input: CredStagePlanInput, deps: PlanDeps = {}): Promise<ResolvedCredential> {
  const env = deps.env ?? process.env;
  const now = (deps.now ?? Date.now)();
  const row = requireRow(input.runtime);
  const home = input.home ?? (env['HOME'] && nodePath.isAbsolute(env['HOME']) ? env['HOME'] : homedir());
  const ctx = { home, env };
  const { account, path } = await resolveAccountPath(row, input.account, input.accounts, ctx);
  const label = `${row.runtime} credential file`;
  const file = await readCredentialFile(path, home, label, row.login);
  const doc = parseCredential(file.bytes, `${label} ${path}`);
  const expiry = checkExpiry(row, doc, `${label} ${path}`, input, now);

  const staged = stagingPath(row);
  const source = input.stageDir ? nodePath.join(input.stageDir, row.runtime, stagedName(row)) : file.real;
  const containerHome = input.containerHome ?? defaultContainerHome;
  const plan: CredStagePlanOutput = {
    ok: true,
    runtime: row.runtime,
    identity: { runtime: row.runtime, account, path },
    expiresAt: expiry.expiresAtMs === null ? null : new Date(expiry.expiresAtMs).toISOString(),
    sessionSeconds: expiry.sessionSeconds,
    expiryOverride: expiry.override,
    mounts: [{ source, destination: staged, readOnly: true }],
    stage: input.stageDir ? [{ from: file.real, to: source, mode: '0400' }] : [],
    install: [{ from: staged, to: nodePath.posix.join(containerHome, row.containerPath), mode: '0600' }],
  };
  return { plan, bytes: file.bytes };
}

/**
 * Plans one runtime's credential: resolves the file for the account, refuses
 * (85) what cannot be staged safely, returns the read-only mount and install step.
 */
export async function planCredentials(input: CredStagePlanInput, deps: PlanDeps = {}): Promise<CredStagePlanOutput> {
  return (await resolveCredential(input, deps)).plan;
}

/**
 * Named accounts: an account maps to a credential file path. The map comes from
 * the input's `accounts` field when given, else from the config file
 * `${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/accounts.json`, shaped
 * `{"<runtime>": {"<account>": "<path>"}}`. Paths are absolute or `~/...`.
 * No account (or "default" without an entry) means the table's path.
 */
import { readFile } from 'node:fs/promises';
import * as nodePath from 'node:path';
import { ToolError } from '@agent-sandbox/shared/tool-error';
import type { CredentialRow, HostContext } from './credential-table.js';

export const defaultAccount = 'default';

export function accountsConfigPath({ home, env }: HostContext): string {
  const xdg = env['XDG_CONFIG_HOME'];
  const base = xdg && nodePath.isAbsolute(xdg) ? xdg : nodePath.join(home, '.config');
  return nodePath.join(base, 'agent-sandbox', 'accounts.json');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The runtime's account map from the config file; {} when the file does not exist. */
async function readAccountsFile(file: string, runtime: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ToolError(
      'credential',
      'accounts-unreadable',
      `accounts file ${file} cannot be read (${(err as NodeJS.ErrnoException).code})`,
    );
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ToolError('credential', 'accounts-unparsable', `accounts file ${file} is not valid JSON`);
  }
  if (!isRecord(doc)) throw new ToolError('credential', 'accounts-unparsable', `accounts file ${file} is not a JSON object`);
  const forRuntime = doc[runtime];
  if (forRuntime === undefined) return {};
  if (!isRecord(forRuntime)) {
    throw new ToolError('credential', 'accounts-unparsable', `accounts file ${file}: "${runtime}" is not an object of account -> path`);
  }
  return forRuntime;
}

function expandPath(raw: string, home: string, account: string, where: string): string {
  const expanded = raw === '~' ? home : raw.startsWith('~/') ? nodePath.join(home, raw.slice(2)) : raw;
  if (!nodePath.isAbsolute(expanded)) {
    throw new ToolError(
      'credential',
      'account-path-relative',
      `account "${account}" in ${where}: path must be absolute or ~/..., got "${raw}"`,
    );
  }
  return nodePath.normalize(expanded);
}

/** The credential file path for (runtime, account): the account map's entry, or the table's path. */
export async function resolveAccountPath(
  row: CredentialRow,
  account: string | undefined,
  accounts: Record<string, string> | undefined,
  ctx: HostContext,
): Promise<{ account: string; path: string }> {
  const name = account ?? defaultAccount;
  const file = accountsConfigPath(ctx);
  const map = accounts ?? (account === undefined ? {} : await readAccountsFile(file, row.runtime));
  const where = accounts ? 'input.accounts' : file;
  const raw = map[name];
  if (raw === undefined) {
    if (name === defaultAccount) return { account: name, path: row.hostPath(ctx) };
    throw new ToolError('credential', 'unknown-account', `account "${name}" for ${row.runtime} is not in ${where}`);
  }
  if (typeof raw !== 'string' || raw === '') {
    throw new ToolError('credential', 'accounts-unparsable', `account "${name}" in ${where}: the path is not a non-empty string`);
  }
  return { account: name, path: expandPath(raw, ctx.home, name, where) };
}

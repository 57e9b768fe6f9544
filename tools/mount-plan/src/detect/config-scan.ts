/**
 * Host git configuration that would make the host's git run, or read configuration from, a
 * file the session can write. The repository's config files are read-only inside (the view),
 * but a value there may name a path inside the workspace: husky's `core.hooksPath=.husky/_`
 * (relative: each worktree's own top, so the session's workspace for the session's worktree),
 * `include.path=../.gitconfig` in a plain repository (the workspace's own file), or a filter
 * command `./tools/clean`. Read-only mounts deep inside the workspace cannot protect such a
 * path: the agent renames a parent directory and the mount moves with it (measured). So the
 * plan refuses (87) unless the caller accepts them (`allowWorkspaceGitConfig`), and lists them.
 */
import * as nodePath from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { captureCommand } from '@agent-sandbox/shared/capture';
import type { WritableConfig } from '@agent-sandbox/shared/schemas/mount-plan';
import { isWithin } from './container-paths.js';

export interface ConfigEntry {
  /** `file:<path>`, `command line:`, ... as git config --show-origin prints it. */
  origin: string;
  key: string;
  value: string;
}

/** Every configuration entry git would use for this git dir (system, global, repository, worktree, includes). */
export type ReadEffectiveConfig = (gitDir: string) => Promise<ConfigEntry[]>;

/** Parses `git config --null --show-origin --list`: origin NUL key LF value NUL (a key without value: no LF). */
export function parseConfigList(out: string): ConfigEntry[] {
  const fields = out.split('\0');
  const entries: ConfigEntry[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const origin = fields[i] ?? '';
    const pair = fields[i + 1] ?? '';
    const lf = pair.indexOf('\n');
    entries.push({ origin, key: (lf < 0 ? pair : pair.slice(0, lf)).toLowerCase(), value: lf < 0 ? '' : pair.slice(lf + 1) });
  }
  return entries;
}

const inherited = ['PATH', 'HOME', 'XDG_CONFIG_HOME', 'GIT_CONFIG_GLOBAL', 'GIT_CONFIG_SYSTEM', 'GIT_CONFIG_NOSYSTEM'];

/** The default reader: the host's git with the caller's own global and system configuration. */
export const gitEffectiveConfig: ReadEffectiveConfig = async (gitDir) => {
  const env: NodeJS.ProcessEnv = {};
  for (const name of inherited) if (process.env[name] !== undefined) env[name] = process.env[name];
  env['PATH'] ??= '/usr/bin:/bin';
  const result = await captureCommand('git', ['--git-dir', gitDir, 'config', '--null', '--show-origin', '--list'], {
    env,
    timeoutMs: 10_000,
  });
  if (result.exitCode !== 0) {
    throw new ToolError(
      'gitMount',
      'git-config-unreadable',
      `cannot list the configuration of ${gitDir}: ${result.spawnError ?? result.stderr.trim()}`,
    );
  }
  return parseConfigList(result.stdout);
};

/** Keys whose value is a path: a directory of hooks, or a file of more configuration. */
const pathKeys = [/^core\.hookspath$/, /^include\.path$/, /^includeif\..+\.path$/];

/** Keys whose value is a command (run by a shell, from the worktree's top or the user's directory). */
const commandKeys = [
  /^core\.(fsmonitor|editor|pager|sshcommand|askpass|gitproxy)$/,
  /^sequence\.editor$/,
  /^diff\.external$/,
  /^diff\..+\.(textconv|command)$/,
  /^filter\..+\.(clean|smudge|process)$/,
  /^merge\..+\.driver$/,
  /^credential\.(.+\.)?helper$/,
  /^gpg\.(.+\.)?program$/,
  /^alias\..+$/,
  /^pager\..+$/,
  /^interactive\.difffilter$/,
  /^(difftool|mergetool)\..+\.(cmd|path)$/,
  /^(browser|man)\..+\.(cmd|path)$/,
  /^web\.browser$/,
  /^remote\..+\.(uploadpack|receivepack)$/,
  /^uploadpack\.packobjectshook$/,
  /^submodule\..+\.update$/,
  /^sendemail\.(smtpserver|sendmailcmd|tocmd|cccmd)$/,
];

const booleans = /^(true|false|yes|no|on|off|1|0|)$/i;

/** The program word of a command value: after a leading "!", the first shell word, quotes removed. */
export function commandWord(value: string): string {
  const text = value.trim().replace(/^!\s*/, '');
  const quoted = /^(["'])(.*?)\1/.exec(text);
  if (quoted) return quoted[2] ?? '';
  return text.split(/\s/, 1)[0] ?? '';
}

export interface ScanContext {
  /** The session worktree's host top (relative hooks paths and commands resolve there). */
  worktree: string;
  /** Host paths the session can write. */
  writable: string[];
  home: string | undefined;
}

function expandHome(p: string, home: string | undefined): string {
  return home && (p === '~' || p.startsWith('~/')) ? `${home}${p.slice(1)}` : p;
}

/** The path an entry names as the host's git would resolve it for the session's worktree, if any. */
function namedPath(entry: ConfigEntry, ctx: ScanContext): string | undefined {
  if (pathKeys.some((re) => re.test(entry.key))) {
    const p = expandHome(entry.value, ctx.home);
    if (p.startsWith('/')) return nodePath.resolve(p);
    if (entry.key === 'core.hookspath') return nodePath.resolve(ctx.worktree, p);
    const file = entry.origin.startsWith('file:') ? entry.origin.slice('file:'.length) : undefined;
    return file ? nodePath.resolve(nodePath.dirname(file), p) : undefined;
  }
  if (!commandKeys.some((re) => re.test(entry.key))) return undefined;
  if (entry.key === 'core.fsmonitor' && booleans.test(entry.value.trim())) return undefined;
  if (entry.key.startsWith('alias.') && !entry.value.trim().startsWith('!')) return undefined;
  if (entry.key.startsWith('submodule.') && !entry.value.trim().startsWith('!')) return undefined;
  const word = expandHome(commandWord(entry.value), ctx.home);
  // A bare name is looked up on PATH; a word with a slash is a file, relative to the current directory.
  if (!word.includes('/')) return undefined;
  return word.startsWith('/') ? nodePath.resolve(word) : nodePath.resolve(ctx.worktree, word);
}

/** Entries that name a path the session can write. */
export function findWritableConfig(entries: ConfigEntry[], ctx: ScanContext): WritableConfig[] {
  const out: WritableConfig[] = [];
  for (const entry of entries) {
    const path = namedPath(entry, ctx);
    if (path !== undefined && ctx.writable.some((w) => isWithin(path, w))) {
      out.push({ key: entry.key, value: entry.value, origin: entry.origin, path });
    }
  }
  return out;
}

/** Refuses (87) unless allowed; returns what was found either way. */
export function checkWritableConfig(found: WritableConfig[], allow: boolean): WritableConfig[] {
  if (found.length > 0 && !allow) {
    const first = found[0] as WritableConfig;
    throw new ToolError(
      'gitMount',
      'git-config-names-session-file',
      `host git configuration ${first.key}=${first.value} (${first.origin}) names ${first.path}, which the session can write: ` +
        "the host's git would run or read the agent's version there. Unset it, or accept it explicitly (allowWorkspaceGitConfig)",
      { found },
    );
  }
  return found;
}

/**
 * Where the launcher's files are when no flag says: the one module of the paths' defaults, all
 * computed from the launcher's HOME and XDG directories (never from a variable that could move
 * containment: the root only ever comes from --root or HOME). --help names them as written here
 * (the schemas' `defaultText`).
 */
import os from 'node:os';
import path from 'node:path';

/** The user's home: $HOME when it is an absolute path, else the passwd entry's. */
export function homeOf(env: NodeJS.ProcessEnv): string {
  const home = env['HOME'];
  return home && path.isAbsolute(home) ? home : os.userInfo().homedir;
}

/** An XDG base directory: the variable when it is an absolute path, else its fallback under the home. */
function xdg(env: NodeJS.ProcessEnv, name: string, fallback: string[]): string {
  const value = env[name];
  return value && path.isAbsolute(value) ? value : path.join(homeOf(env), ...fallback);
}

/** The permitted root: $HOME/sandbox (flag --root; no variable moves it). */
export function defaultRoot(env: NodeJS.ProcessEnv): string {
  return path.join(homeOf(env), 'sandbox');
}

/** The ledger: ${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl (flag --ledger). */
export function defaultLedgerPath(env: NodeJS.ProcessEnv): string {
  return path.join(xdg(env, 'XDG_STATE_HOME', ['.local', 'state']), 'agent-sandbox', 'ledger.jsonl');
}

/** The hosts registry: ${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json (flag --hosts). */
export function defaultRegistryPath(env: NodeJS.ProcessEnv): string {
  return path.join(xdg(env, 'XDG_CONFIG_HOME', ['.config']), 'agent-sandbox', 'hosts.json');
}

/** The launcher's config file: ${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/config.json (its defaults, e.g. the caches). */
export function defaultConfigPath(env: NodeJS.ProcessEnv): string {
  return path.join(xdg(env, 'XDG_CONFIG_HOME', ['.config']), 'agent-sandbox', 'config.json');
}

/** Where each package manager keeps its cache on the host, by its own default (--cache). */
export function hostCacheDirs(env: NodeJS.ProcessEnv): { npm: string; pnpm: string; pip: string } {
  return {
    npm: path.join(homeOf(env), '.npm'),
    pnpm: path.join(xdg(env, 'XDG_DATA_HOME', ['.local', 'share']), 'pnpm', 'store'),
    pip: path.join(xdg(env, 'XDG_CACHE_HOME', ['.cache']), 'pip'),
  };
}

/** This machine's identity, which the hosts registry and a node's receiver check requests against. */
export { machineIdFile } from '@agent-sandbox/shared/host-facts';

/** The per-session logs (exec's, the broker's): beside the ledger. */
export function logDirOf(ledgerFile: string): string {
  return path.join(path.dirname(ledgerFile), 'logs');
}

/** The defaults every command that takes --root, --ledger or --hosts starts from. */
export function pathDefaults(env: NodeJS.ProcessEnv): { root: string; ledgerFile: string; registryFile: string } {
  return { root: defaultRoot(env), ledgerFile: defaultLedgerPath(env), registryFile: defaultRegistryPath(env) };
}

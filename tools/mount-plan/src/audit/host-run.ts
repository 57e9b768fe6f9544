/**
 * Workspace files that tools on the host run, or read as configuration, when the user merely
 * opens, enters or builds the workspace: direnv's `.envrc`, an editor's `.vscode/` (tasks,
 * settings, launch), `.idea/`, `.devcontainer/`, CI definitions, `Makefile`, the `scripts` of a
 * `package.json`, `.npmrc`, `.yarnrc*`, `.cargo/config*`, `.pre-commit-config.yaml`,
 * `.tool-versions`, `mise.toml`, `.gitattributes` (which selects filter and diff drivers) and
 * `.gitmodules`, and the hooks of nested repositories. The agent's job is to edit code, so none
 * of this is blocked: the launcher scans before and after the session (in the same walk as
 * nested-git.ts) and reports every one the session added, changed or removed.
 *
 * Below `node_modules/` nothing is matched: that is installed code, not the project's own
 * configuration, and a session that runs `npm install` would otherwise list thousands.
 */
import { createHash } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { fsPath, type NamedEntry } from '@agent-sandbox/shared/byte-names';
import { boundedList } from '@agent-sandbox/shared/bounded-list';
import type { HostRunChange, HostRunReport } from '@agent-sandbox/shared/schemas/mount-plan';
import { clip, readRegularBounded } from '../store/store-refs.js';
import { specialKind } from '../store/bounded-read.js';

export interface HostRunFile {
  /** Relative to the workspace. */
  path: string;
  /** Changes when what a host tool would take from it changes. */
  signature: string;
}

const names = new Set([
  '.envrc',
  '.gitlab-ci.yml',
  'Makefile',
  'makefile',
  'GNUmakefile',
  'package.json',
  '.npmrc',
  '.pre-commit-config.yaml',
  '.tool-versions',
  'mise.toml',
  '.mise.toml',
  '.gitattributes',
  '.gitmodules',
]);
const configDirs = new Set(['.vscode', '.idea', '.devcontainer']);

/** True when a file at `rel` (split in `parts`) is one the host runs or reads without being asked. */
export function isHostRunPath(parts: string[]): boolean {
  if (parts.includes('node_modules')) return false;
  const name = parts.at(-1)!;
  const parent = parts.at(-2);
  if (names.has(name) || name.startsWith('.yarnrc')) return true;
  if (parent === '.cargo' && name.startsWith('config')) return true;
  const dirs = parts.slice(0, -1);
  if (dirs.some((d) => configDirs.has(d))) return true;
  return dirs.some((d, i) => d === '.github' && dirs[i + 1] === 'workflows');
}

const maxRead = 1 << 20;

/** A FIFO, socket or device at a host-run name: what it is is its signature (it is never opened). */
export function specialSignature(entry: NamedEntry): string {
  return `special:${specialKind(entry.type)}`;
}

/** What a host tool takes from the file: its content (a package.json: only its scripts), its mode, or a link's target. */
export function hostRunSignature(path: string, entry: NamedEntry): string | undefined {
  if (entry.type.isSymbolicLink()) return `link:${readlinkSync(fsPath(path), 'buffer').toString('hex')}`;
  if (!entry.type.isFile()) return undefined;
  const read = readRegularBounded(path, maxRead);
  if (!read) return undefined;
  const { data } = read;
  let body: Buffer | string = data;
  if (entry.name === 'package.json') {
    try {
      body = `scripts:${JSON.stringify((JSON.parse(data.toString('utf8')) as { scripts?: unknown }).scripts ?? null)}`;
    } catch {
      body = data; // not JSON: npm refuses it, but it changed
    }
  }
  return `${(read.mode & 0o111) !== 0 ? 'x' : '-'}:${createHash('sha256').update(body).digest('hex')}`;
}

/** What is new, changed or gone between two scans: 50 named (sorted by path), then a count. */
export function diffHostRun(before: HostRunFile[], after: HostRunFile[]): HostRunReport {
  const old = new Map(before.map((e) => [e.path, e.signature]));
  const now = new Map(after.map((e) => [e.path, e.signature]));
  const out: HostRunChange[] = [];
  for (const [path, signature] of now) {
    const was = old.get(path);
    if (was === undefined) out.push({ path, change: 'added' });
    else if (was !== signature) out.push({ path, change: 'changed' });
  }
  for (const path of old.keys()) if (!now.has(path)) out.push({ path, change: 'removed' });
  out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const bounded = boundedList(out, 50);
  return { named: bounded.named.map((c) => ({ ...c, path: clip(c.path) })), others: bounded.others };
}

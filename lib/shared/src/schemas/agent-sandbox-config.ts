/**
 * The launcher's config file (${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/config.json: defaults
 * a flag overrides) and the host package caches it and --cache name: which there are, and the
 * ledger's record of one given to a session. The launch request and the ledger line
 * (agent-sandbox.ts) take these.
 */
import { Closed, Type, type Static } from '../schema.js';
import { cacheNames } from '../container-layout.js';

/** The host package caches a session may be given read-only, below a private layer (--cache; tools/agent-sandbox/src/session/caches.ts). */
export const CacheName = Type.Union(
  cacheNames.map((name) => Type.Literal(name)),
  { description: 'npm: $HOME/.npm; pnpm: ${XDG_DATA_HOME:-~/.local/share}/pnpm/store; pip: ${XDG_CACHE_HOME:-~/.cache}/pip' },
);
export type CacheName = Static<typeof CacheName>;

/** The launcher's own settings, ${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/config.json: defaults a flag overrides. */
export const LauncherConfig = Closed(
  {
    cache: Type.Optional(Type.Array(CacheName, { description: 'the caches every session on this machine gets unless --cache says otherwise (--cache none: none)' })),
  },
  { $id: 'agent-sandbox.config', description: 'the launcher\'s config file: defaults for run and exec' },
);
export type LauncherConfig = Static<typeof LauncherConfig>;

/** One cache a session was given: its host directory (the lower layer, never written) and where the session saw it. */
export const CacheGrant = Closed({
  name: CacheName,
  host: Type.String({ description: 'the host directory, after realpath: read by the session, never written' }),
  container: Type.String({ description: 'where the session saw it, over a private writable layer discarded with the container' }),
});
export type CacheGrant = Static<typeof CacheGrant>;

/** --cache as the launch request holds it: the names, each once (session/request.ts splits commas and reads none). */
export const CachesByFlag = Type.Array(CacheName, {
  flag: 'cache',
  description: "give the session this host package cache read-only, below a private writable layer discarded with it: npm, pnpm, pip; repeatable or comma-separated; none: no cache; local sessions only",
  defaultText: 'the config file\'s "cache", else none',
  expect: 'npm, pnpm, pip or none (repeatable, or comma-separated)',
});

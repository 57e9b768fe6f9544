// --cache gives a session the host's package cache read-only, below a private writable layer
// that dies with it (issue 36), proved with the real npm (10.9.2, from the npm registry, run by
// the image's node 18 from the workspace; its tarballs kept in a directory git ignores, so the VM
// tier's guest, with no npm and no network, runs it too) on a project whose one package (is-number 7.0.0) is
// in a test-only host cache (the launcher's HOME is a temporary directory). The broker refuses
// registry.npmjs.org (not on the codex runtime's allowlist), so without --cache `npm ci` fails
// (and the broker logs the refusal); with --cache npm it succeeds. The session then poisons the
// cache: a new file, and every tarball in it overwritten. The next session sees none of it (its
// own `npm ci` from the same cache succeeds), and the host's cache is byte-identical throughout.
// The layer is the session's own directory (<root>/cache-layers/<id>), gone when it ended, and
// the disk ceiling counts it: a session that writes past --disk into its cache is stopped.
// The host cache is given to the agent's uid, as a rootless user's own cache is under keep-id:
// that is when the layer is writable. Owned by root (a rootful launcher's own ~/.npm), the agent
// can only read it, and npm ci from it still succeeds (the last subtest, as root).
import t from 'tap';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { nothingLeft, sessionFixture, sessionNeeds, type SessionFixture } from '../fixtures/session-fixture.js';
import { chownTree, hostHasNpm, npmCi, npmProject, tarballsHere, treeDigest } from '../fixtures/npm-cache.js';

const image = 'localhost/agent-sandbox:latest';
const requirements = sessionNeeds({
  images: [image],
  commands: ['tar'],
  ...(tarballsHere() || hostHasNpm ? {} : { commands: ['tar', 'npm'] }),
});

/** What each step below works with: one session fixture and its host cache, run again and again. */
interface CacheCase {
  fx: SessionFixture;
  hostCache: string;
  /** The host cache's digest before any session: it must stay so. */
  before: string[];
  /** The cache layers' directory of this session id: gone once each session ended. */
  layers: string;
  session(extra: string[], script: string): ReturnType<SessionFixture['run']>;
  /** A file the script left in the workspace ('' when none). */
  inWorkspace(name: string): string;
}

async function cacheCase(t: Test): Promise<CacheCase> {
  const fx = await sessionFixture(t, 'cache');
  const hostCache = await npmProject(t, fx);
  const before = treeDigest(hostCache);
  t.ok(
    before.some((row) => row.startsWith('_cacache/content-v2/')),
    `the host cache holds the tarball (${before.length} names)`,
  );
  const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
  return {
    fx,
    hostCache,
    before,
    layers: path.join(fx.root, 'cache-layers', fx.id),
    session: (extra, script) =>
      fx.run(['run', ...flags, '--image', image, '--memory', '1g', ...extra, '--agent-bin', '/bin/sh', '--', '-c', script], {
        timeoutMs: 240_000,
      }),
    inWorkspace: (name) => (existsSync(path.join(fx.workspace, name)) ? readFileSync(path.join(fx.workspace, name), 'utf8') : ''),
  };
}

/** Without --cache the registry is out of reach: the broker refuses it, so npm ci fails. */
async function withoutCache(t: Test, c: CacheCase): Promise<void> {
  const { fx, session, inWorkspace } = c;
  const ran = await session([], `${npmCi} > .ci-without.log 2>&1`);
  t.not(ran.exitCode, 0, `npm ci fails without the cache (exit ${ran.exitCode}): ${inWorkspace('.ci-without.log').slice(-400)}`);
  t.notOk(existsSync(path.join(fx.workspace, 'node_modules', 'is-number')), 'nothing was installed');
  const [line] = fx.ledgerLines();
  t.equal(line.caches, undefined, 'the ledger line names no cache');
  t.notOk(line.egress.allow.includes('registry.npmjs.org'), 'the registry is not on the allowlist');
  t.ok(
    line.egress.summary.refused.some((r: { host: string }) => r.host === 'registry.npmjs.org'),
    `the broker refused registry.npmjs.org (${JSON.stringify(line.egress.summary.refused)})`,
  );
}

/** With --cache npm, npm ci installs from the host cache; the session then rewrites every file of its layer. */
async function withCacheThenPoison(t: Test, c: CacheCase): Promise<void> {
  const { fx, session, layers, inWorkspace, hostCache, before } = c;
  const poison = [
    'echo poisoned > "$npm_config_cache/poison.txt" && echo new-file >> .poisoned',
    'for f in $(find "$npm_config_cache/_cacache/content-v2" -type f); do echo poisoned > "$f" && echo rewrote >> .poisoned; done',
    'grep -rl poisoned "$npm_config_cache" | wc -l > .poisoned-count',
  ].join('; ');
  const ran = await session(
    ['--cache', 'npm'],
    `${npmCi} > .ci-with.log 2>&1; status=$?; echo "$npm_config_cache" > .cache-env; ${poison}; exit $status`,
  );
  t.equal(ran.exitCode, 0, `npm ci succeeds with the cache: ${inWorkspace('.ci-with.log').slice(-400)}`);
  t.ok(existsSync(path.join(fx.workspace, 'node_modules', 'is-number', 'package.json')), 'is-number is installed');
  t.equal(inWorkspace('.cache-env'), '/sandbox/caches/npm\n', 'npm_config_cache names the cache where the session sees it');
  t.match(inWorkspace('.poisoned'), /^new-file\n(rewrote\n)+$/, 'inside, the layer is writable: a new file and every tarball rewritten');
  t.ok(Number(inWorkspace('.poisoned-count')) >= 2, `the session saw its poison (${inWorkspace('.poisoned-count').trim()} files)`);
  const line = fx.ledgerLines()[1];
  t.same(
    line.caches,
    [{ name: 'npm', host: realpathSync(hostCache), container: '/sandbox/caches/npm' }],
    'the ledger line names the cache given',
  );
  t.same(treeDigest(hostCache), before, "the host's cache is byte-identical: nothing the session wrote reached it");
  t.notOk(existsSync(path.join(hostCache, 'poison.txt')), 'the poison file is not on the host');
  t.notOk(existsSync(layers), `its layer (${layers}) is gone with it`);
}

/** The poison stayed in the last session's layer: the next session's npm ci reads intact tarballs. */
async function nextSessionUnpoisoned(t: Test, c: CacheCase): Promise<void> {
  const { fx, session, inWorkspace, hostCache, before } = c;
  const ran = await session(
    ['--cache', 'npm'],
    `grep -rl poisoned "$npm_config_cache" > .seen 2>&1; test -e "$npm_config_cache/poison.txt" && echo poison.txt >> .seen; rm -rf node_modules; ${npmCi} > .ci-again.log 2>&1`,
  );
  t.equal(ran.exitCode, 0, `npm ci succeeds again, every tarball intact: ${inWorkspace('.ci-again.log').slice(-400)}`);
  t.equal(inWorkspace('.seen'), '', 'no file of the cache holds the poison in the next session');
  t.ok(existsSync(path.join(fx.workspace, 'node_modules', 'is-number', 'package.json')), 'is-number is installed again');
  t.same(treeDigest(hostCache), before, "the host's cache is still byte-identical");
}

/** A session that fills its cache layer past --disk is stopped like one that fills its workspace. */
async function diskCeilingCountsLayer(t: Test, c: CacheCase): Promise<void> {
  const { fx, session, layers, hostCache, before } = c;
  const ran = await session(
    ['--cache', 'npm', '--disk', '64m'],
    'dd if=/dev/zero of="$npm_config_cache/big" bs=1M count=160 2> .dd.log; sleep 60',
  );
  const line = fx.ledgerLines()[3];
  t.equal(
    line.reason,
    'disk-limit',
    `stopped for the disk (exit ${ran.exitCode}, ${line.reason}): ${ran.stderr
      .split('\n')
      .filter((l: string) => /disk/.test(l))
      .join(' | ')}`,
  );
  t.notOk(existsSync(layers), 'its layer is gone');
  t.same(treeDigest(hostCache), before, "the host's cache is still byte-identical");
}

/** A cache owned by root: the agent's layer cannot be written, and reading it is enough for npm ci. */
async function rootOwnedCache(t: Test, c: CacheCase): Promise<void> {
  const { fx, session, layers, inWorkspace, hostCache } = c;
  await chownTree(hostCache, 0);
  const rootOwned = treeDigest(hostCache);
  const ran = await session(
    ['--cache', 'npm'],
    `rm -rf node_modules; ${npmCi} > .ci-root.log 2>&1; status=$?; { echo poisoned > "$npm_config_cache/poison.txt"; } 2> .poison-root.log; test -e "$npm_config_cache/poison.txt" && echo written >> .poison-root.log; exit $status`,
  );
  t.equal(ran.exitCode, 0, `npm ci succeeds from a cache it cannot write: ${inWorkspace('.ci-root.log').slice(-400)}`);
  t.ok(existsSync(path.join(fx.workspace, 'node_modules', 'is-number', 'package.json')), 'is-number is installed');
  t.match(
    inWorkspace('.poison-root.log'),
    /^[^\n]*Permission denied\n$/,
    'writing into it is refused: the layer takes the owner of the host directory (podman 4.3.1)',
  );
  t.same(treeDigest(hostCache), rootOwned, "the host's cache is byte-identical");
  t.notOk(existsSync(layers), 'its layer is gone');
}

t.test('a host package cache is given read-only below a private layer that dies with the session', requirements, async (t) => {
  const c = await cacheCase(t);
  await t.test('without --cache, npm ci fails: the broker refuses the registry', (t) => withoutCache(t, c));
  await t.test('with --cache npm, npm ci succeeds from the host cache; the session then poisons its layer', (t) =>
    withCacheThenPoison(t, c),
  );
  await t.test('the next session sees none of the poison: its npm ci from the same cache succeeds', (t) => nextSessionUnpoisoned(t, c));
  await t.test('the disk ceiling counts the layer: writing past --disk into the cache stops the session', (t) =>
    diskCeilingCountsLayer(t, c),
  );

  const rootOnly =
    process.getuid?.() === 0
      ? false
      : "needs root (only root gives a cache to root; rootless, the user's own cache is the agent's: the subtests above)";
  await t.test(
    "a cache owned by root (a rootful launcher's own): the agent only reads it, and npm ci from it still succeeds",
    { skip: rootOnly },
    (t) => rootOwnedCache(t, c),
  );

  t.same(await c.fx.leftovers(), nothingLeft, 'nothing is left');
  t.notOk(existsSync(c.layers), 'no layer is left');
});

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
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { cp, lchown, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { chownToAgent, repoRoot, tempDir, type Teardown } from '@agent-sandbox/testkit';
import { nothingLeft, sessionFixture, sessionNeeds, type SessionFixture } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';
const npmVersion = '10.9.2';
/**
 * The two tarballs from the npm registry (npm itself, and is-number), packed once by the host's
 * npm into a directory of the checkout that git ignores: the VM tier's payload carries the
 * checkout into its guest, which has neither npm nor a network, so the same test runs there.
 */
const tarballDir = path.join(repoRoot, 'tools/agent-sandbox/test/fixtures/npm-tarballs');
const tarball = (name: string) => path.join(tarballDir, `${name}.tgz`);
const tarballsHere = () => [`npm-${npmVersion}`, 'is-number-7.0.0'].every((name) => existsSync(tarball(name)));
const hostHasNpm = spawnSync('npm', ['--version'], { stdio: 'ignore' }).status === 0;
const requirements = sessionNeeds({ images: [image], commands: ['tar'], ...(tarballsHere() || hostHasNpm ? {} : { commands: ['tar', 'npm'] }) });

const packageJson = { name: 'cache-fixture', version: '1.0.0', private: true, dependencies: { 'is-number': '7.0.0' } };
const packageLock = {
  name: 'cache-fixture',
  version: '1.0.0',
  lockfileVersion: 3,
  requires: true,
  packages: {
    '': { name: 'cache-fixture', version: '1.0.0', dependencies: { 'is-number': '7.0.0' } },
    'node_modules/is-number': {
      version: '7.0.0',
      resolved: 'https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz',
      integrity: 'sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==',
      license: 'MIT',
      engines: { node: '>=0.12.0' },
    },
  },
};

/** The host's npm, with a cache and HOME of the test's own: the user's ~/.npm is never touched. */
function hostNpm(args: string[], home: string, cwd: string): string {
  const out = spawnSync('npm', args, { cwd, encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home }, timeout: 180_000 });
  if (out.status !== 0) throw new Error(`npm ${args.join(' ')}: exit ${out.status}: ${out.stderr}`);
  return out.stdout;
}

/** Every name under a directory with its type, mode, owner and content hash (a link: its target): what "byte-identical" compares. */
function treeDigest(dir: string): string[] {
  const rows: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const full = path.join(at, name);
      const info = lstatSync(full);
      const what = info.isDirectory() ? 'dir' : info.isSymbolicLink() ? `link ${readlinkSync(full)}` : info.isFile() ? `file ${createHash('sha256').update(readFileSync(full)).digest('hex')}` : 'other';
      rows.push(`${path.relative(dir, full)} ${what} ${info.mode.toString(8)} ${info.uid}:${info.gid} ${info.mtimeMs}`);
      if (info.isDirectory()) walk(full);
    }
  };
  walk(dir);
  return rows;
}

/** Gives a tree to a uid (lchown: a link itself, never what it names). */
async function chownTree(dir: string, uid: number): Promise<void> {
  await lchown(dir, uid, uid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(child, uid);
    else await lchown(child, uid, uid);
  }
}

const npmCi = 'node ./npm-pkg/bin/npm-cli.js ci --no-audit --no-fund --fetch-retries=0';

/** The tarballs, packed from the registry by the host's npm when they are not here yet. */
function ensureTarballs(): void {
  if (tarballsHere()) return;
  mkdirSync(tarballDir, { recursive: true });
  const cache = path.join(tarballDir, '.pack-cache');
  for (const spec of [`npm@${npmVersion}`, 'is-number@7.0.0']) hostNpm(['pack', spec, '--cache', cache, '--silent'], tarballDir, tarballDir);
  rmSync(cache, { recursive: true, force: true });
}

/**
 * The project in the workspace (package.json, its lock, the real npm unpacked: the image has node
 * but no npm) and the test-only host cache ($HOME/.npm of the launcher's HOME, holding
 * is-number, added by that same npm from its tarball, offline), given to the agent's uid.
 * Returns the cache's path.
 */
async function npmProject(t: Teardown, fx: SessionFixture): Promise<string> {
  ensureTarballs();
  const work = await tempDir(t, 'astest-cache-npm-');
  await mkdir(path.join(work, 'npm-pkg'));
  const untar = spawnSync('tar', ['-xzf', tarball(`npm-${npmVersion}`), '-C', path.join(work, 'npm-pkg'), '--strip-components=1']);
  if (untar.status !== 0) throw new Error(`tar: exit ${untar.status}: ${untar.stderr}`);
  await cp(path.join(work, 'npm-pkg'), path.join(fx.workspace, 'npm-pkg'), { recursive: true });
  await writeFile(path.join(fx.workspace, 'package.json'), JSON.stringify(packageJson, null, 2));
  await writeFile(path.join(fx.workspace, 'package-lock.json'), JSON.stringify(packageLock, null, 2));
  await chownToAgent(fx.workspace);
  const hostCache = path.join(fx.home, '.npm');
  const added = spawnSync(process.execPath, [path.join(work, 'npm-pkg', 'bin', 'npm-cli.js'), 'cache', 'add', tarball('is-number-7.0.0'), '--cache', hostCache, '--offline', '--silent'], {
    cwd: work,
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: fx.home },
    timeout: 120_000,
  });
  if (added.status !== 0) throw new Error(`npm cache add: exit ${added.status}: ${added.stderr}`);
  await chownToAgent(hostCache);
  return hostCache;
}

t.test('a host package cache is given read-only below a private layer that dies with the session', requirements, async (t) => {
  const fx = await sessionFixture(t, 'cache');
  const hostCache = await npmProject(t, fx);
  const before = treeDigest(hostCache);
  t.ok(before.some((row) => row.startsWith('_cacache/content-v2/')), `the host cache holds the tarball (${before.length} names)`);

  const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
  const session = (extra: string[], script: string) => fx.run(['run', ...flags, '--image', image, '--memory', '1g', ...extra, '--agent-bin', '/bin/sh', '--', '-c', script], { timeoutMs: 240_000 });
  const layers = path.join(fx.root, 'cache-layers', fx.id);
  const inWorkspace = (name: string) => (existsSync(path.join(fx.workspace, name)) ? readFileSync(path.join(fx.workspace, name), 'utf8') : '');

  await t.test('without --cache, npm ci fails: the broker refuses the registry', async (t) => {
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
  });

  await t.test('with --cache npm, npm ci succeeds from the host cache; the session then poisons its layer', async (t) => {
    const poison = [
      'echo poisoned > "$npm_config_cache/poison.txt" && echo new-file >> .poisoned',
      'for f in $(find "$npm_config_cache/_cacache/content-v2" -type f); do echo poisoned > "$f" && echo rewrote >> .poisoned; done',
      'grep -rl poisoned "$npm_config_cache" | wc -l > .poisoned-count',
    ].join('; ');
    const ran = await session(['--cache', 'npm'], `${npmCi} > .ci-with.log 2>&1; status=$?; echo "$npm_config_cache" > .cache-env; ${poison}; exit $status`);
    t.equal(ran.exitCode, 0, `npm ci succeeds with the cache: ${inWorkspace('.ci-with.log').slice(-400)}`);
    t.ok(existsSync(path.join(fx.workspace, 'node_modules', 'is-number', 'package.json')), 'is-number is installed');
    t.equal(inWorkspace('.cache-env'), '/sandbox/caches/npm\n', 'npm_config_cache names the cache where the session sees it');
    t.match(inWorkspace('.poisoned'), /^new-file\n(rewrote\n)+$/, 'inside, the layer is writable: a new file and every tarball rewritten');
    t.ok(Number(inWorkspace('.poisoned-count')) >= 2, `the session saw its poison (${inWorkspace('.poisoned-count').trim()} files)`);
    const line = fx.ledgerLines()[1];
    t.same(line.caches, [{ name: 'npm', host: realpathSync(hostCache), container: '/sandbox/caches/npm' }], 'the ledger line names the cache given');
    t.same(treeDigest(hostCache), before, "the host's cache is byte-identical: nothing the session wrote reached it");
    t.notOk(existsSync(path.join(hostCache, 'poison.txt')), 'the poison file is not on the host');
    t.notOk(existsSync(layers), `its layer (${layers}) is gone with it`);
  });

  await t.test('the next session sees none of the poison: its npm ci from the same cache succeeds', async (t) => {
    const ran = await session(['--cache', 'npm'], `grep -rl poisoned "$npm_config_cache" > .seen 2>&1; test -e "$npm_config_cache/poison.txt" && echo poison.txt >> .seen; rm -rf node_modules; ${npmCi} > .ci-again.log 2>&1`);
    t.equal(ran.exitCode, 0, `npm ci succeeds again, every tarball intact: ${inWorkspace('.ci-again.log').slice(-400)}`);
    t.equal(inWorkspace('.seen'), '', 'no file of the cache holds the poison in the next session');
    t.ok(existsSync(path.join(fx.workspace, 'node_modules', 'is-number', 'package.json')), 'is-number is installed again');
    t.same(treeDigest(hostCache), before, "the host's cache is still byte-identical");
  });

  await t.test('the disk ceiling counts the layer: writing past --disk into the cache stops the session', async (t) => {
    const ran = await session(['--cache', 'npm', '--disk', '64m'], 'dd if=/dev/zero of="$npm_config_cache/big" bs=1M count=160 2> .dd.log; sleep 60');
    const line = fx.ledgerLines()[3];
    t.equal(line.reason, 'disk-limit', `stopped for the disk (exit ${ran.exitCode}, ${line.reason}): ${ran.stderr.split('\n').filter((l: string) => /disk/.test(l)).join(' | ')}`);
    t.notOk(existsSync(layers), 'its layer is gone');
    t.same(treeDigest(hostCache), before, "the host's cache is still byte-identical");
  });

  const rootOnly = process.getuid?.() === 0 ? false : "needs root (only root gives a cache to root; rootless, the user's own cache is the agent's: the subtests above)";
  await t.test("a cache owned by root (a rootful launcher's own): the agent only reads it, and npm ci from it still succeeds", { skip: rootOnly }, async (t) => {
    await chownTree(hostCache, 0);
    const rootOwned = treeDigest(hostCache);
    const ran = await session(['--cache', 'npm'], `rm -rf node_modules; ${npmCi} > .ci-root.log 2>&1; status=$?; { echo poisoned > "$npm_config_cache/poison.txt"; } 2> .poison-root.log; test -e "$npm_config_cache/poison.txt" && echo written >> .poison-root.log; exit $status`);
    t.equal(ran.exitCode, 0, `npm ci succeeds from a cache it cannot write: ${inWorkspace('.ci-root.log').slice(-400)}`);
    t.ok(existsSync(path.join(fx.workspace, 'node_modules', 'is-number', 'package.json')), 'is-number is installed');
    t.match(inWorkspace('.poison-root.log'), /^[^\n]*Permission denied\n$/, 'writing into it is refused: the layer takes the owner of the host directory (podman 4.3.1)');
    t.same(treeDigest(hostCache), rootOwned, "the host's cache is byte-identical");
    t.notOk(existsSync(layers), 'its layer is gone');
  });

  t.same(await fx.leftovers(), nothingLeft, 'nothing is left');
  t.notOk(existsSync(path.join(fx.root, 'cache-layers', fx.id)), 'no layer is left');
});

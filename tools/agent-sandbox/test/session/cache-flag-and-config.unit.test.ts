// --cache without podman: the flag (repeatable, comma-separated, none) becomes one list or a
// refusal (80) naming the flag; the config file's default applies when the flag is absent and
// a bad file is refused (80) naming the file; a cache the host lacks is skipped and said, one
// that is a link, not a directory, or outside the home is refused (86); a cache becomes an
// overlay mount (--volume SOURCE:DEST:O,upperdir=,workdir=, the layer the session's own) and its
// variable; a layer an earlier session left is gone before the next starts; no Pod gets one.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buildRunArgv, resolvePlan } from '@agent-sandbox/sandbox-run';
import { tempDir } from '@agent-sandbox/testkit';
import { parseRequest } from '../../dist/index.js';
import { cachesAsked, planCaches, prepareCacheLayers, removeCacheLayers } from '../../dist/session/caches.js';
import { kubeManifest } from '../../dist/commands/kube/manifest.js';

const env = { HOME: '/home/u' };
const parse = (flags: Record<string, unknown>) => parseRequest('run', { runtime: 'codex', workspace: 's1', ...flags }, [], env, []);

t.test('--cache: repeatable and comma-separated, each name once; none alone asks for none; absent is undefined', async (t) => {
  const rows: [unknown, unknown][] = [
    [undefined, undefined],
    ['npm', ['npm']],
    [
      ['npm,pip', 'pnpm'],
      ['npm', 'pip', 'pnpm'],
    ],
    [['npm', 'npm'], ['npm']],
    ['none', []],
    ['', []],
  ];
  for (const [given, caches] of rows) t.same(parse(given === undefined ? {} : { cache: given }).caches, caches, JSON.stringify(given));
  t.equal(rows.length, 6, 'every row ran');
});

t.test('--cache: a name it does not know, or none beside a name, is refused with 80 naming the flag', async (t) => {
  t.throws(() => parse({ cache: 'yarn' }), { exitCode: 80, message: /^--cache: expected one of npm, pnpm, pip, got "yarn"/ });
  t.throws(() => parse({ cache: 'none,npm' }), {
    exitCode: 80,
    message: /^--cache: none \(or an empty value\) asks for no cache and goes alone/,
  });
});

t.test("the config file's cache is the default; --cache none overrides it; a bad file is refused naming it", async (t) => {
  const home = await tempDir(t, 'astest-cache-config-');
  const home_env = { HOME: home };
  t.same(cachesAsked({}, home_env), [], 'no file: no cache');
  const file = path.join(home, '.config', 'agent-sandbox', 'config.json');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify({ cache: ['npm', 'pip'] }));
  t.same(cachesAsked({}, home_env), ['npm', 'pip'], "the file's default");
  t.same(cachesAsked({ caches: [] }, home_env), [], '--cache none: none');
  t.same(cachesAsked({ caches: ['pnpm'] }, home_env), ['pnpm'], '--cache replaces the default');
  t.same(cachesAsked({}, { HOME: home, XDG_CONFIG_HOME: path.join(home, 'elsewhere') }), [], 'XDG_CONFIG_HOME moves the file');
  for (const bad of ['{"cache": ["yarn"]}', '{"caches": ["npm"]}', 'not json']) {
    await writeFile(file, bad);
    t.throws(
      () => cachesAsked({}, home_env),
      { exitCode: 80, message: new RegExp(file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) },
      `${bad}: refused naming the file`,
    );
  }
});

t.test('a cache the host lacks is skipped and said; a link, a file or a path outside the home is refused with 86', async (t) => {
  const base = await tempDir(t, 'astest-cache-dirs-');
  const home = path.join(base, 'home');
  await mkdir(path.join(home, '.npm'), { recursive: true });
  const planned = await planCaches(['npm', 'pip'], { HOME: home }, '/r/cache-layers/s1');
  t.same(planned.grants, [{ name: 'npm', host: path.join(home, '.npm'), container: '/sandbox/caches/npm' }], 'npm given');
  t.same(
    planned.mounts,
    [
      {
        source: path.join(home, '.npm'),
        destination: '/sandbox/caches/npm',
        readOnly: false,
        overlay: { upper: '/r/cache-layers/s1/npm/upper', work: '/r/cache-layers/s1/npm/work' },
      },
    ],
    "as an overlay mount over a layer of the session's own",
  );
  t.same(planned.env, { npm_config_cache: '/sandbox/caches/npm' }, 'named by npm_config_cache');
  t.match(planned.skipped, [/--cache pip: .*\/\.cache\/pip does not exist; the session runs without that cache/], 'pip skipped, and said');

  const xdg = { HOME: home, XDG_DATA_HOME: path.join(home, 'data') };
  await mkdir(path.join(home, 'data', 'pnpm', 'store'), { recursive: true });
  t.same(
    (await planCaches(['pnpm'], xdg, '/r/cache-layers/s1')).env,
    { npm_config_store_dir: '/sandbox/caches/pnpm' },
    'pnpm: its store under XDG_DATA_HOME',
  );

  await mkdir(path.join(home, 'real-pip'), { recursive: true });
  await mkdir(path.join(home, '.cache'), { recursive: true });
  await symlink(path.join(home, 'real-pip'), path.join(home, '.cache', 'pip'));
  await t.rejects(
    planCaches(['pip'], { HOME: home }, '/r/cache-layers/s1'),
    { exitCode: 86, code: 'cache-dir-unsafe', message: /is a symbolic link/ },
    'a link, even to the home',
  );
  await mkdir(path.join(base, 'outside', 'pip'), { recursive: true });
  await t.rejects(
    planCaches(['pip'], { HOME: home, XDG_CACHE_HOME: path.join(base, 'outside') }, '/r/cache-layers/s1'),
    { exitCode: 86, code: 'cache-dir-unsafe', message: /not under the home/ },
    'outside the home',
  );
  await mkdir(path.join(home, 'data2', 'pnpm'), { recursive: true });
  await writeFile(path.join(home, 'data2', 'pnpm', 'store'), '');
  await t.rejects(
    planCaches(['pnpm'], { HOME: home, XDG_DATA_HOME: path.join(home, 'data2') }, '/r/cache-layers/s1'),
    { exitCode: 86, code: 'cache-dir-unsafe', message: /is not a directory/ },
    'a file',
  );
});

t.test("a session's layers are made empty, whatever an earlier one left, and removed following no link", async (t) => {
  const root = await tempDir(t, 'astest-cache-layers-');
  const layers = path.join(root, 'cache-layers', 's1');
  const mounts = [
    {
      source: '/h/.npm',
      destination: '/sandbox/caches/npm',
      readOnly: false,
      overlay: { upper: path.join(layers, 'npm', 'upper'), work: path.join(layers, 'npm', 'work') },
    },
  ];
  await mkdir(path.join(layers, 'npm', 'upper'), { recursive: true });
  await writeFile(path.join(layers, 'npm', 'upper', 'poison'), 'left by an earlier session');
  await mkdir(path.join(root, 'kept'));
  await symlink(path.join(root, 'kept'), path.join(layers, 'npm', 'upper', 'link'));
  prepareCacheLayers(layers, mounts);
  t.same(await readdir(path.join(layers, 'npm', 'upper')), [], 'the upper is empty');
  t.same(await readdir(path.join(layers, 'npm', 'work')), [], 'the work directory too');
  t.ok(existsSync(path.join(root, 'kept')), 'what a link in it named is untouched');
  removeCacheLayers(layers);
  t.notOk(existsSync(layers), 'removed');
  removeCacheLayers(layers);
  t.pass('removing what is gone is quiet');
});

t.test('an overlay mount is --volume SOURCE:DEST:O with its layer, never read-only, no colon; a Pod refuses it', async (t) => {
  const plan = { image: 'i', sessionId: 's1', limits: { memory: '1g', memorySwap: '1g', pids: 64, cpus: 1, cpuShares: 512 } };
  const mount = {
    source: '/home/u/.npm',
    destination: '/sandbox/caches/npm',
    readOnly: false,
    overlay: { upper: '/r/l/npm/upper', work: '/r/l/npm/work' },
  };
  t.same(resolvePlan({ ...plan, mounts: [mount] }).mounts, [mount]);
  const facts = {
    podman: '/usr/bin/podman',
    cgroupMode: 'v1' as const,
    runtime: 'runc',
    rootless: false,
    ulimits: { nofile: 4096, nproc: 4096 },
    seccompProfile: '/x/p.json',
  };
  const argv = buildRunArgv({ ...plan, mounts: [mount] }, facts);
  t.ok(
    argv.includes('--volume=/home/u/.npm:/sandbox/caches/npm:O,upperdir=/r/l/npm/upper,workdir=/r/l/npm/work'),
    'podman run --volume SOURCE:DEST:O,upperdir=,workdir=',
  );
  t.notOk(
    argv.some((a) => a.startsWith('--mount=') && a.includes('.npm')),
    'not a bind mount',
  );
  t.throws(() => resolvePlan({ ...plan, mounts: [{ ...mount, readOnly: true }] }), { exitCode: 80, message: /readOnly must be false/ });
  t.throws(() => resolvePlan({ ...plan, mounts: [{ ...mount, source: '/home/u/a:b' }] }), {
    exitCode: 80,
    message: /must not contain a colon/,
  });
  t.throws(() => resolvePlan({ ...plan, mounts: [{ ...mount, overlay: { upper: '/r/a,b', work: '/r/w' } }] }), {
    exitCode: 80,
    message: /overlay\.upper: must not contain a comma/,
  });
  const pod = { sessionId: 's1', image: 'i', command: ['x'], workdir: '/w', limits: parse({}).limits, env: {} };
  t.throws(() => kubeManifest({ ...pod, mounts: [mount] } as never), {
    exitCode: 80,
    message: /overlay mount \(--cache\) cannot be a hostPath/,
  });
});

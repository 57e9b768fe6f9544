// The plan is the exact mount list: the session's workspace and home, git
// metadata only as the kind needs, credentials read-only; never the whole root,
// never another session's directories. Checked against the JSON Schema too.
import t from 'tap';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { validateDocument } from '@agent-sandbox/shared';
import { MountPlanOutput } from '@agent-sandbox/shared/validators/mount-plan';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import { git, worktreeSession } from './fixtures/git-tree.js';

const rw = (source: string, destination: string) => ({ source, destination, readOnly: false });
const ro = (source: string, destination: string) => ({ source, destination, readOnly: true });

async function plan(input: unknown) {
  const out = await runBin('mount-plan', [], { input });
  if (out.exitCode !== 0) throw new Error(`mount-plan exited ${out.exitCode}: ${out.stdout}`);
  return out.json;
}

async function others(root: string) {
  await mkdir(`${root}/workspaces/s2`, { recursive: true });
  await mkdir(`${root}/homes/s2`, { recursive: true });
}

function exposesOthers(doc: any, root: string): boolean {
  return doc.mounts.some((m: any) => m.source === root || m.source.includes('/s2') || root.startsWith(`${m.source}/`));
}

t.test('no git: exactly the workspace and a freshly created home', async (t) => {
  const base = await tempDir(t);
  const root = `${base}/root`;
  await mkdir(`${root}/workspaces/s1`, { recursive: true });
  await others(root);
  const doc = await plan({ workspace: `${root}/workspaces/s1`, root, sessionId: 's1' });
  t.doesNotThrow(() => validateDocument(MountPlanOutput, doc, 'output'), 'output matches the schema');
  t.same(doc.mounts, [rw(`${root}/homes/s1`, '/sandbox/home'), rw(`${root}/workspaces/s1`, '/sandbox/workspaces/s1')]);
  t.equal(doc.workdir, '/sandbox/workspaces/s1');
  t.same(doc.git, { kind: 'none' });
  t.same(doc.env, {});
  t.ok((await stat(`${root}/homes/s1`)).isDirectory(), 'the home was created');
  t.notOk(exposesOthers(doc, root), 'neither the root nor another session is mounted');
});

t.test("plain repo: .git is the session's own store; the host's git dir is only read-only", async (t) => {
  const base = await tempDir(t);
  const root = `${base}/root`;
  const ws = `${root}/workspaces/s1`;
  const store = `${root}/git-stores/s1`;
  await mkdir(ws, { recursive: true });
  await git(['init', '-q'], ws);
  await git(['commit', '-q', '--allow-empty', '-m', 'x'], ws);
  let doc = await plan({ workspace: ws, root, sessionId: 's1' });
  t.doesNotThrow(() => validateDocument(MountPlanOutput, doc, 'output'), 'output matches the schema');
  const inside = '/sandbox/workspaces/s1/.git';
  t.same(doc.mounts, [
    rw(`${root}/homes/s1`, '/sandbox/home'),
    rw(ws, '/sandbox/workspaces/s1'),
    ro(`${ws}/.git`, '/sandbox/git/live'),
    rw(`${store}/common`, inside),
    rw(`${store}/common/objects`, `${inside}/objects`),
    rw(`${store}/common/objects/info`, `${inside}/objects/info`),
    ro(`${store}/common/objects/info/alternates`, `${inside}/objects/info/alternates`),
  ]);
  t.same(doc.git, { kind: 'repo', gitDir: `${ws}/.git`, commonDir: `${ws}/.git` });
  t.same(doc.gitStore.copies, ['HEAD', 'index'], 'the worktree state is copied in (and the index, checked, back)');
  t.same(doc.gitConfig[0], { key: 'safe.directory', value: '/sandbox/workspaces/s1' });
  t.same(doc.gitConfig.at(-1), { key: 'core.splitIndex', value: 'false' });
  t.notOk(
    doc.gitConfig.some((e: any) => e.key === 'gc.packRefs'),
    "packed-refs is the store's own: gc may pack refs",
  );
  await git(['worktree', 'add', '-q', `${base}/elsewhere`], ws);
  doc = await plan({ workspace: ws, root, sessionId: 's1' });
  t.same(
    doc.mounts.filter((m: any) => m.destination === `${inside}/worktrees`),
    [ro(`${ws}/.git/worktrees`, `${inside}/worktrees`)],
    'the registry of other worktrees goes read-only',
  );
});

t.test('linked worktree: the common dir and its own gitdir are the store, the real ones read-only, the registry ro, .git ro', async (t) => {
  const tree = await worktreeSession(await tempDir(t));
  await others(tree.root);
  const doc = await plan({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  t.doesNotThrow(() => validateDocument(MountPlanOutput, doc, 'output'), 'output matches the schema');
  const c = tree.common;
  const g = `${c}/worktrees/s1`;
  const store = `${tree.root}/git-stores/s1`;
  t.same(
    [...doc.mounts].sort((a: any, b: any) => (a.destination < b.destination ? -1 : 1)),
    [
      rw(`${tree.root}/homes/s1`, '/sandbox/home'),
      ro(c, '/sandbox/git/live'),
      rw(tree.workspace, '/sandbox/workspaces/s1'),
      ro(`${tree.workspace}/.git`, '/sandbox/workspaces/s1/.git'),
      rw(`${store}/common`, c),
      rw(`${store}/common/objects`, `${c}/objects`),
      rw(`${store}/common/objects/info`, `${c}/objects/info`),
      ro(`${store}/common/objects/info/alternates`, `${c}/objects/info/alternates`),
      ro(`${c}/worktrees`, `${c}/worktrees`),
      rw(`${store}/own`, g),
      rw(tree.workspace, tree.workspace),
      ro(`${tree.workspace}/.git`, `${tree.workspace}/.git`),
    ].sort((a, b) => (a.destination < b.destination ? -1 : 1)),
  );
  t.notOk(
    doc.mounts.some((m: any) => !m.readOnly && (m.source === c || m.source.startsWith(`${c}/`))),
    'nothing of the real common dir is mounted read-write',
  );
  t.same(
    doc.mounts
      .filter((m: any) => m.source.startsWith(`${store}/common/objects`))
      .map((m: any) => [m.destination.slice(c.length), m.readOnly]),
    [
      ['/objects', false],
      ['/objects/info', false],
      ['/objects/info/alternates', true],
    ],
    "what ties the store to the host's objects is pinned: the alternates file read-only, its directories mount points (no rename moves them)",
  );
  const depth = (p: string) => p.split('/').length;
  t.ok(
    doc.mounts.every((m: any, i: number) => doc.mounts.slice(0, i).every((p: any) => !p.destination.startsWith(`${m.destination}/`))),
    'every parent mount comes before the mounts below it',
  );
  t.ok(depth(doc.mounts[0].destination) <= depth(doc.mounts.at(-1).destination));
  t.same(
    doc.gitStore.ownLinks.map((l: any) => l.name),
    ['commondir', 'gitdir'],
    "the own gitdir's redirects are links into the read-only view",
  );
  t.same(doc.git, {
    kind: 'worktree',
    gitDir: `${tree.common}/worktrees/s1`,
    commonDir: tree.common,
    worktreeName: 's1',
    hostPathAlias: tree.workspace,
  });
  t.same(doc.env, {
    GIT_CONFIG_COUNT: '6',
    GIT_CONFIG_KEY_0: 'safe.directory',
    GIT_CONFIG_VALUE_0: '/sandbox/workspaces/s1',
    GIT_CONFIG_KEY_1: 'safe.directory',
    GIT_CONFIG_VALUE_1: tree.workspace,
    GIT_CONFIG_KEY_2: 'gc.worktreePruneExpire',
    GIT_CONFIG_VALUE_2: 'never',
    GIT_CONFIG_KEY_3: 'gc.reflogExpire',
    GIT_CONFIG_VALUE_3: 'never',
    GIT_CONFIG_KEY_4: 'gc.reflogExpireUnreachable',
    GIT_CONFIG_VALUE_4: 'never',
    GIT_CONFIG_KEY_5: 'core.splitIndex',
    GIT_CONFIG_VALUE_5: 'false',
  });
  t.notOk(exposesOthers(doc, tree.root), 'neither the root nor another session is mounted');
});

t.test('credentials are mounted read-only from their realpath, below /sandbox-secrets', async (t) => {
  const base = await tempDir(t);
  const root = `${base}/root`;
  await mkdir(`${root}/workspaces/s1`, { recursive: true });
  await mkdir(`${base}/creds`);
  await writeFile(`${base}/creds/auth.json`, 'canary-secret');
  const doc = await plan({
    workspace: `${root}/workspaces/s1`,
    root,
    sessionId: 's1',
    credentials: [{ source: `${base}/creds/auth.json`, destination: '/sandbox-secrets/codex/auth.json', readOnly: true }],
  });
  t.same(doc.mounts.at(-1), ro(`${base}/creds/auth.json`, '/sandbox-secrets/codex/auth.json'));
  t.notMatch(JSON.stringify(doc), /canary-secret/, 'no credential contents in the plan');
});

t.test('flags give the same plan as stdin', async (t) => {
  const base = await tempDir(t);
  const root = `${base}/root`;
  await mkdir(`${root}/workspaces/s1`, { recursive: true });
  const viaStdin = await plan({ workspace: `${root}/workspaces/s1`, root, sessionId: 's1' });
  const viaFlags = await runBin('mount-plan', ['--workspace', `${root}/workspaces/s1`, '--root', root, '--session-id', 's1']);
  t.equal(viaFlags.exitCode, 0);
  t.same(viaFlags.json, viaStdin);
});

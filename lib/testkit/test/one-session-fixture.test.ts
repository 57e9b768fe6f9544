// The one session layout every real-session test starts from (session-fixture.ts): a root and
// a host HOME whose credential holds a canary at the runtime's path, mode 0600; workspaces owned
// by the agent uid (links given to it as links, never followed), with their files; the flags a
// launcher needs for them; and everything gone when the test ends, the sessions' containers too.
import t from 'tap';
import { existsSync, lstatSync, readFileSync, statSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { agentUid, busyboxImage, jsonLines, launcherFlags, needs, sessionRoot, sessionWorkspace, type Teardown } from '../dist/index.js';

/** A teardown list run by hand, to look at the state after it. */
function ownTeardown(): Teardown & { run(): Promise<void> } {
  const fns: (() => unknown)[] = [];
  return {
    teardown: (fn) => void fns.push(fn),
    run: async () => {
      for (const fn of fns.reverse()) await fn();
    },
  };
}

t.test("a root and a host HOME with a canary credential at the runtime's path, readable by its owner only", async (t) => {
  const root = await sessionRoot(t, 'fixture', { runtime: 'claude' });
  t.equal(statSync(root.base).mode & 0o777, 0o755, 'the agent uid can pass through the base');
  t.ok(statSync(path.join(root.root, 'workspaces')).isDirectory());
  t.equal(root.credential, path.join(root.hostHome, '.claude', '.credentials.json'));
  t.equal(statSync(root.credential!).mode & 0o777, 0o600);
  t.match(readFileSync(root.credential!, 'utf8'), root.canary);
  t.match(root.canary, /^sk-astest-fixture-[0-9a-f]{16}$/);
  t.same(Object.keys(root.env).sort(), ['HOME', 'LANG', 'PATH'], 'the launcher gets nothing else of this environment');
  const bare = await sessionRoot(t, 'fixture', { credential: false, canary: 'sk-fixed' });
  t.equal(bare.credential, undefined);
  t.notOk(existsSync(path.join(bare.hostHome, '.codex')));
  t.equal(bare.canary, 'sk-fixed');
});

t.test(
  'a workspace owned by the agent uid, links as links, with its files, and the flags for it',
  needs({ root: true, podman: true }),
  async (t) => {
    const root = await sessionRoot(t, 'fixture');
    const outside = path.join(root.base, 'outside');
    await writeFile(outside, "not the agent's");
    const ws = await sessionWorkspace(t, root, 'fixture', {
      files: { 'run.sh': '#!/bin/sh\nexit 0\n' },
      copy: { 'sub/copied': outside },
      prepare: async (dir) => {
        await mkdir(dir, { recursive: true });
        await symlink(outside, path.join(dir, 'link-out'));
      },
      home: true,
    });
    t.match(ws, {
      path: path.join(root.root, 'workspaces', ws.id),
      inside: `/sandbox/workspaces/${ws.id}`,
      home: path.join(root.root, 'homes', ws.id),
      container: `agent-sandbox-${ws.id}`,
    });
    for (const p of [ws.path, path.join(ws.path, 'run.sh'), path.join(ws.path, 'sub'), path.join(ws.path, 'sub', 'copied'), ws.home])
      t.equal(lstatSync(p).uid, agentUid, p);
    t.equal(statSync(path.join(ws.path, 'run.sh')).mode & 0o111, 0o111, 'files are executable');
    t.equal(lstatSync(path.join(ws.path, 'link-out')).uid, agentUid, "the link itself is the agent's");
    t.equal(statSync(outside).uid, process.getuid?.(), 'what it points at is not');
    t.same(launcherFlags(root, ws), ['--runtime', 'codex', '--workspace', ws.id, '--root', root.root, '--ledger', ws.ledger]);
    t.same(launcherFlags(root, ws, ['--runtime', 'claude']).slice(0, 2), ['--workspace', ws.id], 'a runtime in extra replaces codex');
    const fixed = await sessionWorkspace(t, root, 'fixture', { id: 's1' });
    t.equal(fixed.id, 's1');
  },
);

t.test(
  "the workspace, the root and the sessions' containers are gone once the test ends",
  needs({ root: true, podman: true, images: [busyboxImage] }),
  async (t) => {
    const own = ownTeardown();
    const root = await sessionRoot(own, 'fixture');
    const wss = [await sessionWorkspace(own, root, 'fixture'), await sessionWorkspace(own, root, 'fixture')];
    for (const ws of wss) await runPodman(['create', '--name', ws.container, busyboxImage, 'true'], { expect: [0] });
    await own.run();
    t.notOk(existsSync(root.base), 'the temporary directory is gone');
    const left = await runPodman(['ps', '-a', '--format', '{{.Names}}'], { expect: [0] });
    for (const ws of wss) t.notOk(left.stdout.split('\n').includes(ws.container), `${ws.container} is gone`);
  },
);

t.test('a JSON-lines file reads back as its documents; a missing one as none', async (t) => {
  const root = await sessionRoot(t, 'fixture', { credential: false });
  const file = path.join(root.base, 'l.jsonl');
  t.same(jsonLines(file), []);
  await writeFile(file, '{"a":1}\n\n{"b":2}\n');
  t.same(jsonLines(file), [{ a: 1 }, { b: 2 }]);
});

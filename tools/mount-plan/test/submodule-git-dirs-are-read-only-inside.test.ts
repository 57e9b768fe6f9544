// A plain repository with a submodule: the submodule's git dir (.git/modules/<name>: config,
// hooks, info) is read-only inside, so the host's `git status`, which recurses into the
// submodule, runs nothing planted there. The submodule's gitfile lies in the workspace: rewritten,
// it sends the host's git to a git dir the agent made. That stays open (documented), and the
// nested-repository scan reports the changed gitfile.
import t from 'tap';
import { mkdir } from 'node:fs/promises';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import { diffNestedGit, planMounts, scanNestedGit } from '../dist/index.js';
import { git, image, prepareStore, runInContainer } from './fixtures/git-tree.js';
import { chownToHostUser, hostUid, hostUser } from './fixtures/host-user.js';

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

t.test("a submodule's git dir cannot be planted from inside; its gitfile in the workspace can (open, reported)", async (t) => {
  const base = await tempDir(t, 'mount-plan-submodule-');
  const ws = `${base}/root/workspaces/s1`;
  await mkdir(`${base}/subsrc`, { recursive: true });
  await git(['init', '-q', '-b', 'main'], `${base}/subsrc`);
  await git(['commit', '-q', '--allow-empty', '-m', 'sub'], `${base}/subsrc`);
  await git(['init', '-q', '-b', 'main', ws], base);
  await git(['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', `${base}/subsrc`, 'sub'], ws);
  await git(['commit', '-q', '-m', 'add sub'], ws);
  await chownToHostUser(base);
  const user = await hostUser(base);
  const plan = await planMounts({ workspace: ws, root: `${base}/root`, sessionId: 's1' });
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const before = await scanNestedGit(ws);
  const inside = '/sandbox/workspaces/s1';
  const m = user.markers;
  const script = [
    `printf "[core]\\n\\tfsmonitor = touch ${m}/sub-fsmonitor; false\\n" >> ${inside}/.git/modules/sub/config; echo "config rc=$?"`,
    `printf "#!/bin/sh\\ntouch ${m}/sub-hook\\n" > ${inside}/.git/modules/sub/hooks/post-checkout; echo "hook rc=$?"`,
    'git status --porcelain 2>&1; echo "status rc=$?"',
    'echo x > top && git add top && git commit -q -m "agent commit"; echo "commit rc=$?"',
  ].join('\n');
  const run = await runInContainer(t, plan, script, { user: `${hostUid}:${hostUid}` });
  t.match(run.stdout, /config rc=[1-9]/, "the submodule's config is read-only inside");
  t.match(run.stdout, /hook rc=[1-9]/, 'and so are its hooks');
  t.match(run.stdout, /status rc=0/, 'git status inside still works, submodule included');
  t.match(run.stdout, /commit rc=0/, 'the agent commits in the superproject');
  t.match(store.finish(), { outcome: 'fast-forward' }, "the agent's commit came home");
  await user.git(['status'], ws);
  await user.git(['-C', 'sub', 'checkout', '-q', '--detach'], ws);
  t.same(await user.ran(), [], 'nothing planted in the submodule git dir ran on the host');

  // The open part: the gitfile lies in the workspace.
  const evil = [
    `git init -q --bare ${inside}/evil.git && printf "[core]\\n\\tfsmonitor = touch ${m}/evil-sub; false\\n\\tbare = false\\n" >> ${inside}/evil.git/config`,
    `printf "gitdir: ${ws}/evil.git\\n" > ${inside}/sub/.git`,
  ].join(' && ');
  const plan2 = await planMounts({ workspace: ws, root: `${base}/root`, sessionId: 's1' });
  const store2 = prepareStore(t, plan2, { uid: hostUid, gid: hostUid });
  t.equal((await runInContainer(t, plan2, evil, { user: `${hostUid}:${hostUid}` })).exitCode, 0);
  store2.finish();
  t.same(
    diffNestedGit(before, await scanNestedGit(ws)),
    [
      { path: 'evil.git', change: 'added', type: 'bare' },
      { path: 'sub/.git', change: 'changed', type: 'gitfile' },
    ],
    'the scan names the rewritten gitfile and the new repository',
  );
  await user.git(['status'], ws, false);
  t.same(await user.ran(), ['evil-sub'], "open, as documented: the host's git status followed the rewritten gitfile");
});

// A workspace that is a linked worktree of a repository outside the permitted root: refused (87)
// by default, since its git metadata would be mounted from outside the root; --git-root permits
// that directory, and git inside the container then works on it (the launcher passes
// mount-plan's command-scope git configuration, whose safe.directory git needs for a
// repository the agent's uid does not own).
import t from 'tap';
import { chown, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { sessionNeeds, sessionFixture, type SessionFixture } from '../fixtures/session-fixture.js';
import { git } from '@agent-sandbox/testkit';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ commands: ['git'] });

/** <base>/repos/main (owned by root, one commit) and its worktree <root>/workspaces/<id>-wt (owned by uid 1000). */
async function outsideWorktree(fx: SessionFixture) {
  const repos = path.join(fx.base, 'repos');
  const main = path.join(repos, 'main');
  await mkdir(main, { recursive: true });
  await git(main, 'init', '-q');
  await git(main, 'commit', '-q', '--allow-empty', '-m', 'the subject git prints inside');
  const id = `${fx.id}-wt`;
  const workspace = path.join(fx.root, 'workspaces', id);
  await git(main, 'worktree', 'add', '-q', workspace);
  await execa('chown', ['-R', '1000:1000', workspace]);
  await chown(path.join(fx.root, 'workspaces'), 0, 0);
  const flags = ['--runtime', 'codex', '--workspace', id, '--root', fx.root, '--ledger', fx.ledger, '--result-file', fx.resultFile];
  return { repos, main, id, workspace, flags };
}

t.test('without --git-root the outside repository is refused with 87, naming it', requirements, async (t) => {
  const fx = await sessionFixture(t, 'gitroot-no');
  const wt = await outsideWorktree(fx);
  const out = await fx.run(['plan', ...wt.flags, '--agent-bin', 'true']);
  t.equal(out.exitCode, 87, out.stderr);
  t.equal(out.json?.error?.code, 'git-outside-permitted-root');
  t.match(out.json?.error?.message, `${wt.main}/.git`);
});

t.test('--git-root permits it: the repository is mounted at its own path and git configuration is planned', requirements, async (t) => {
  const fx = await sessionFixture(t, 'gitroot-plan');
  const wt = await outsideWorktree(fx);
  const out = await fx.run(['plan', ...wt.flags, '--agent-bin', 'true', '--git-root', wt.repos]);
  t.equal(out.exitCode, 0, out.stderr);
  const plan = out.json;
  t.equal(plan.git.kind, 'worktree');
  t.equal(plan.git.commonDir, `${wt.main}/.git`);
  t.ok(
    plan.mounts.some((m: any) => m.destination === `${wt.main}/.git` && m.source === `${fx.root}/git-stores/${wt.id}/common`),
    "the common git dir's path is mounted inside, as the session's own git store (nothing written there reaches the host's git but its branch, after a checked import)",
  );
  t.ok(
    plan.mounts.some((m: any) => m.source === `${wt.main}/.git` && m.destination === '/sandbox/git/live' && m.readOnly),
    'and the real common dir is there read-only',
  );
  t.ok(plan.runPlan.env.includes('GIT_CONFIG_COUNT'), 'git configuration is passed by name');
  const values = Object.entries(plan.containerEnv)
    .filter(([k]) => k.startsWith('GIT_CONFIG_VALUE_'))
    .map(([, v]) => v);
  t.ok(values.includes(`/sandbox/workspaces/${wt.id}`), `safe.directory for the workspace: ${JSON.stringify(plan.containerEnv)}`);
});

t.test('--git-root may be given more than once; each must be absolute (80 otherwise)', requirements, async (t) => {
  const fx = await sessionFixture(t, 'gitroot-flags');
  const wt = await outsideWorktree(fx);
  const twice = await fx.run(['plan', ...wt.flags, '--agent-bin', 'true', '--git-root', '/srv/none-such', '--git-root', wt.repos]);
  t.equal(twice.exitCode, 0, twice.stderr);
  const relative = await fx.run(['plan', ...wt.flags, '--agent-bin', 'true', '--git-root', 'repos']);
  t.equal(relative.exitCode, 80, relative.stderr);
  t.match(relative.stderr, /--git-root: expected an absolute path/);
});

t.test('git runs inside the container on the outside worktree (a real session)', requirements, async (t) => {
  const fx = await sessionFixture(t, 'gitroot-run');
  const wt = await outsideWorktree(fx);
  const out = await fx.run(['run', ...wt.flags, '--git-root', wt.repos, '--agent-bin', 'git', '--', 'log', '--format=%s', '-1']);
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stdout, /the subject git prints inside/);
  t.notMatch(out.stderr, /dubious ownership/);
  t.equal(fx.ledgerLines()[0]?.outcome, 'ran');
});

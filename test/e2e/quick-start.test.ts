// The README's quick start, as a new user runs it: the tools put on PATH by setup's step
// (scripts/install-bins.sh, into a PREFIX of this test's own), then by bare name, with the
// default root $HOME/sandbox: doctor names the command that makes a workspace, `workspace new`
// makes one from a repository, `run --runtime codex` runs the real Codex CLI in the agents image
// there, `workspace list` shows the session, and doctor then says a session would start.
import t from 'tap';
import { execa } from 'execa';
import { lstatSync, readlinkSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';

t.test('setup puts every tool on PATH; workspace new, then run --runtime codex by bare name, runs a session', async (t) => {
  const dir = await tempDir(t, 'astest-quickstart-');
  await chmod(dir, 0o755);
  const prefix = path.join(dir, 'bin');
  const install = await execa('bash', [path.join(repoRoot, 'scripts/install-bins.sh')], {
    env: { PREFIX: prefix, PATH: '/usr/bin:/bin' },
    reject: false,
  });
  t.equal(install.exitCode, 0, String(install.stderr));
  const tools = [
    'agent-sandbox',
    'cred-stage',
    'egress-proxy',
    'mount-plan',
    'nnp-probe',
    'path-guard',
    'podman-attrib',
    'sandbox-run',
    'agent-unsafe',
    'cdx-unsafe',
    'cld-unsafe',
    'ca-unsafe',
  ];
  for (const tool of tools) t.ok(lstatSync(path.join(prefix, tool)).isSymbolicLink(), `${tool} is linked`);
  const again = await execa('bash', [path.join(repoRoot, 'scripts/install-bins.sh')], { env: { PREFIX: prefix, PATH: '/usr/bin:/bin' } });
  t.match(String(again.stderr), /(\d+) tools on PATH in .* \(0 linked now, \1 already there\)/, 'running it again changes nothing');
  t.equal(readlinkSync(path.join(prefix, 'cdx-unsafe')), path.join(repoRoot, 'tools/agent-unsafe/bin/cdx-unsafe'));

  const home = path.join(dir, 'home');
  await mkdir(path.join(home, '.codex'), { recursive: true });
  await writeFile(path.join(home, '.codex', 'auth.json'), JSON.stringify({ OPENAI_API_KEY: 'sk-canary-quickstart' }), { mode: 0o600 });
  const repo = path.join(dir, 'project');
  await mkdir(repo);
  const gitEnv = {
    GIT_AUTHOR_NAME: 'U',
    GIT_AUTHOR_EMAIL: 'u@sandbox.invalid',
    GIT_COMMITTER_NAME: 'U',
    GIT_COMMITTER_EMAIL: 'u@sandbox.invalid',
    HOME: home,
    PATH: '/usr/bin:/bin',
  };
  await execa('git', ['init', '-q', '-b', 'main'], { cwd: repo, env: gitEnv });
  await writeFile(path.join(repo, 'README'), 'the project\n');
  await execa('git', ['add', '-A'], { cwd: repo, env: gitEnv });
  await execa('git', ['commit', '-qm', 'initial'], { cwd: repo, env: gitEnv });
  t.teardown(() => runPodman(['rm', '--force', '--ignore', '--time', '0', 'agent-sandbox-fix-1'], { expect: 'any' }));

  // By bare name: PATH is the prefix and the system's, as after setup.
  const user = (cmd: string, ...args: string[]) =>
    execa(cmd, args, {
      env: { HOME: home, PATH: `${prefix}:/usr/bin:/bin`, LANG: 'C.UTF-8' },
      extendEnv: false,
      reject: false,
      timeout: 120_000,
    });
  const fresh = await user('agent-sandbox', 'doctor', '--runtime', 'codex');
  t.equal(fresh.exitCode, 86, 'a fresh install has no root yet');
  t.match(
    String(fresh.stderr),
    `FAIL root: the root ${home}/sandbox does not exist; \`agent-sandbox workspace new fix-1 --repo /path/to/your/repo\` makes it with a first workspace`,
  );
  const made = await user('agent-sandbox', 'workspace', 'new', 'fix-1', '--repo', repo);
  t.equal(made.exitCode, 0, String(made.stderr));
  t.match(String(made.stderr), /start a session there: agent-sandbox run --runtime codex --workspace fix-1$/m);
  const run = await user('agent-sandbox', 'run', '--runtime', 'codex', '--workspace', 'fix-1', '--', '--version');
  t.equal(run.exitCode, 0, String(run.stderr));
  t.match(String(run.stdout), /^codex-cli \d+\.\d+\.\d+/, 'the real Codex CLI ran in the session');
  t.equal(
    String(run.stderr),
    'agent-sandbox: session fix-1 ended: exit 0, exited',
    'and nothing else was said but how the session ended (the last line)',
  );
  const list = await user('agent-sandbox', 'workspace', 'list', '--json');
  t.match(JSON.parse(String(list.stdout)).workspaces, [
    { id: 'fix-1', repository: repo, branch: 'agent/fix-1', lastSession: { outcome: 'ran', exitCode: 0 } },
  ]);
  const ready = await user('agent-sandbox', 'doctor', '--runtime', 'codex');
  t.equal(ready.exitCode, 0, String(ready.stderr));
  t.match(String(ready.stderr), /ok   workspaces: 1 \(fix-1\)\n[\s\S]*a session would start here/);
});

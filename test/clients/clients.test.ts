// Callers in other languages use the executables as documented.
import t from 'tap';
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { binPath, repoRoot, tempDir } from '@agent-sandbox/testkit';

t.test('a Python caller pipes JSON through path-guard and reads the answers', async (t) => {
  const root = await tempDir(t, 'client-py-');
  const out = await execa('python3', [`${repoRoot}/test/clients/path_guard_client.py`, binPath('path-guard'), root], { reject: false });
  t.equal(out.exitCode, 0, out.stdout);
  t.match(out.stdout, /^ok: /);
});

t.test('a shell caller creates a workspace and uses the resolved path', async (t) => {
  const root = await tempDir(t, 'client-sh-');
  const out = await execa('bash', [`${repoRoot}/test/clients/path-guard-client.sh`, binPath('path-guard'), root, 's7'], { reject: false });
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(out.stdout, `${root}/workspaces/s7`);
  t.ok(existsSync(`${root}/workspaces/s7/.created-by-shell-client`));
});

t.test('the shell caller passes a refusal status through', async (t) => {
  const root = await tempDir(t, 'client-sh-');
  const out = await execa('bash', [`${repoRoot}/test/clients/path-guard-client.sh`, binPath('path-guard'), root, '../../escape'], {
    reject: false,
  });
  t.equal(out.exitCode, 86);
});

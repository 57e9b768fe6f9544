// The create path checks after creating: a link swapped in between mkdir and lstat is caught.
import t from 'tap';
import { mkdir, rm, symlink } from 'node:fs/promises';
import { tempDir } from '@agent-sandbox/testkit';
import { guardPath, realFs, type GuardFs } from '../dist/guard-path.js';

t.test('a symlink swapped in right after mkdir is refused as a create race', async (t) => {
  const base = await tempDir(t, 'path-guard-race-');
  await mkdir(`${base}/root`);
  await mkdir(`${base}/outside`);
  const racingFs: GuardFs = {
    ...realFs,
    mkdir: async (p, o) => {
      const made = await realFs.mkdir(p, o);
      // The attacker's move: replace the fresh directory with a link out.
      await rm(p, { recursive: true });
      await symlink(`${base}/outside`, p);
      return made;
    },
  };
  await t.rejects(guardPath({ path: `${base}/root/ws`, root: `${base}/root`, create: true }, { fs: racingFs }), {
    code: 'create-race',
    exitCode: 86,
  });
});

// A `codex` on PATH that is really cdx-unsafe (a symlink a user might make)
// would start the hatch again and again; it is refused (90) before launching.
import t from 'tap';
import { symlink } from 'node:fs/promises';
import { isToolError } from '@agent-sandbox/shared';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';
import { resolveAgentBinary } from '../dist/index.js';

t.test('codex on PATH linked to cdx-unsafe is refused as a hatch loop', async (t) => {
  const dir = await tempDir(t);
  await symlink(`${repoRoot}/tools/agent-unsafe/bin/cdx-unsafe`, `${dir}/codex`);
  let caught: unknown;
  try {
    resolveAgentBinary('codex', (name) => `${dir}/${name}`);
  } catch (err) {
    caught = err;
  }
  t.ok(isToolError(caught, 'hatch-loop'), String(caught));
  t.equal((caught as { exitCode?: number }).exitCode, 90);
});

t.test('a runtime missing from PATH is a usage error naming the program', async (t) => {
  let caught: unknown;
  try {
    resolveAgentBinary('cursor-agent', () => undefined);
  } catch (err) {
    caught = err;
  }
  t.ok(isToolError(caught, 'agent-cli-not-found'));
  t.match((caught as Error).message, /^cursor-agent: not found on PATH/);
});

// The launcher's clean-up of a session home (issue 29), on real files without podman: the
// installed copy is removed, every credential path of the runtime table and the entrypoint log
// are cleared of planted links (removed as links, reported with what they pointed at), the
// simulated host user's files keep their bytes, and the stderr line escapes what the agent
// named. The planted names and the expected paths come from the credential table and the files.
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { credentialTable } from '@agent-sandbox/cred-stage';
import { cleanupPaths, describePlanted, plantedField, scrubHome } from '../../dist/workspace/home.js';
import { takeEntrypointLog } from '../../dist/session/entrypoint-log.js';

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const credentialDirs = credentialTable.map((row) => path.posix.dirname(row.containerPath));

/** A home and a simulated host user's home holding every runtime's canary credential. */
function world(t: { teardown(fn: () => void): void }) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'home-cleanup-test-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'homes', 's1');
  const user = path.join(base, 'user');
  mkdirSync(home, { recursive: true });
  const files = credentialTable.map((row) => {
    const file = path.join(user, row.containerPath);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `canary-${row.runtime}`);
    return file;
  });
  return { base, home, user, files, hashes: files.map(sha) };
}

t.test(
  'links planted at every credential directory and at the entrypoint log are removed as links; the host files keep their bytes',
  async (t) => {
    const w = world(t);
    t.equal(credentialDirs.length, 3, 'three runtimes in the table (.codex, .claude, .config/cursor)');
    for (const dir of credentialDirs) {
      mkdirSync(path.dirname(path.join(w.home, dir)), { recursive: true });
      symlinkSync(path.join(w.user, dir), path.join(w.home, dir));
    }
    symlinkSync(w.files[0]!, path.join(w.home, '.agent-sandbox-entrypoint.log'));
    const taken = takeEntrypointLog(w.home);
    t.equal(taken.entrypoint, undefined, 'nothing is read through the link at the log');
    t.same(taken.planted, [{ path: '/sandbox/home/.agent-sandbox-entrypoint.log', target: w.files[0] }]);
    const installed = [path.join(w.home, credentialTable[0]!.containerPath)];
    const planted = scrubHome(w.home, installed);
    t.same(
      planted.map((p) => p.path).sort(),
      credentialDirs.map((d) => `/sandbox/home/${d}`).sort(),
      'each credential directory named as the session saw it',
    );
    t.same(planted.map((p) => p.target).sort(), credentialDirs.map((d) => path.join(w.user, d)).sort(), 'with what it pointed at');
    for (const dir of credentialDirs) t.notOk(existsSync(path.join(w.home, dir)), `${dir} is gone from the home`);
    t.same(w.files.map(sha), w.hashes, "every host user's credential is byte-identical");
    t.ok(lstatSync(path.join(w.home, '.config')).isDirectory(), 'the real .config above the cursor link stays');
  },
);

t.test("the installed copy is removed; another runtime's real file in the home is kept", async (t) => {
  const w = world(t);
  const [codex, claude] = [credentialTable[0]!, credentialTable[1]!];
  for (const row of [codex, claude]) {
    mkdirSync(path.dirname(path.join(w.home, row.containerPath)), { recursive: true });
    writeFileSync(path.join(w.home, row.containerPath), 'copy');
  }
  const planted = scrubHome(w.home, [path.join(w.home, codex.containerPath)]);
  t.same(planted, [], 'nothing was planted');
  t.notOk(existsSync(path.join(w.home, codex.containerPath)), 'the installed copy is gone');
  t.ok(existsSync(path.join(w.home, claude.containerPath)), "a real file at another runtime's path is not this session's to remove");
  t.equal(cleanupPaths(w.home).length, credentialTable.length + 1, 'every runtime and the entrypoint log are watched');
});

t.test('the stderr line escapes every name the session chose; the ledger field is bounded', async (t) => {
  const planted = [{ path: '/sandbox/home/.codex', target: '/home/u/\x1b]0;pwned\x07\x1b[2K\u009b1A' }];
  const line = describePlanted('s1', planted)!;
  t.notOk(/[\x00-\x1f\x7f-\x9f]/.test(line), 'no control character in the line');
  t.match(line, '/sandbox/home/.codex -> /home/u/\\e]0;pwned\\a\\e[2K\\u009b1A');
  t.equal(describePlanted('s1', []), undefined, 'no line when nothing was planted');
  const many = Array.from({ length: 25 }, (_, i) => ({ path: `/sandbox/home/l${i}`, target: '/' }));
  t.match(plantedField(many), { others: 5 }, '20 named, then a count');
  t.equal(plantedField(many)!.named.length, 20);
});

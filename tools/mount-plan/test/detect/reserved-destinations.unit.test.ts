// Same-path mounts (git metadata, the workspace's host-path alias) must not land
// on, under or above a reserved container path. In-process, table-driven.
import t from 'tap';
import { reservedCollision, reservedPaths } from '../../dist/index.js';
import { checkSamePathDestination } from '../../dist/detect/container-paths.js';

const rows: [string, string | undefined][] = [
  ['/proc/1', '/proc'],
  ['/sys', '/sys'],
  ['/dev/shm/x', '/dev'],
  ['/sandbox/git/main.git', '/sandbox'],
  ['/sandbox-secrets/x', '/sandbox-secrets'],
  ['/etc/repo.git', '/etc'],
  ['/usr/local/src/repo/.git', '/usr'],
  ['/run/user/0/repo', '/run'],
  ['/', '/proc'],
  ['/home/me/src/repo/.git', undefined],
  ['/srv/git/main.git', undefined],
  ['/sandboxes/x', undefined],
  ['/usrdata/repo', undefined],
  ['/tmp/x/.git', undefined],
];

t.test('reserved collisions are found on, under and above reserved paths, and only there', async (t) => {
  let ran = 0;
  for (const [path, hit] of rows) {
    t.equal(reservedCollision(path), hit, `${path} -> ${hit ?? 'no collision'}`);
    if (hit) {
      t.throws(() => checkSamePathDestination(path, 'git metadata'), { exitCode: 87, code: 'reserved-destination' });
    } else {
      t.doesNotThrow(() => checkSamePathDestination(path, 'git metadata'));
    }
    ran += 1;
  }
  t.equal(ran, rows.length);
  for (const r of ['/proc', '/sys', '/dev', '/sandbox', '/sandbox-secrets', '/etc', '/usr']) {
    t.ok(reservedPaths.includes(r), `${r} is reserved (from the issue)`);
  }
});

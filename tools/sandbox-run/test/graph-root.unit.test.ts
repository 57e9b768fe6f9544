// Where podman keeps this caller's images: what the storage preflight (83) and the image check
// (82) look at must be the store podman itself will use.
import t from 'tap';
import { graphRoot, type HostProbe } from '../dist/index.js';

function probe(uid: number, files: Record<string, string>): HostProbe {
  return { uid, env: { HOME: '/home/dev' }, readFile: (f) => files[f], exists: (f) => f in files, isExecutable: () => false };
}
const system = '[storage]\ndriver = "overlay"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n';

t.test("root: the system storage.conf's graphroot, else podman's default", async (t) => {
  t.equal(
    graphRoot(probe(0, { '/etc/containers/storage.conf': system.replace('/var/lib/containers/storage', '/srv/containers') })),
    '/srv/containers',
  );
  t.equal(graphRoot(probe(0, {})), '/var/lib/containers/storage');
});

t.test("rootless: the system file's graphroot is root's and does not apply (Debian's containers-storage sets it)", async (t) => {
  t.equal(graphRoot(probe(1000, { '/etc/containers/storage.conf': system })), '/home/dev/.local/share/containers/storage');
});

t.test("rootless: the user's own graphroot, else the system's rootless_storage_path, else the default", async (t) => {
  t.equal(
    graphRoot(
      probe(1000, {
        '/home/dev/.config/containers/storage.conf': '[storage]\ngraphroot = "/data/dev-store"\n',
        '/etc/containers/storage.conf': system,
      }),
    ),
    '/data/dev-store',
  );
  t.equal(
    graphRoot(probe(1000, { '/etc/containers/storage.conf': `${system}rootless_storage_path = "$HOME/.store-$UID"\n` })),
    '/home/dev/.store-1000',
  );
  t.equal(graphRoot(probe(1000, {})), '/home/dev/.local/share/containers/storage');
});

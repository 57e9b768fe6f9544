// A V8 startup snapshot loads only where V8 finds what it found when the blob was made: node
// refuses a blob whose tag (V8's version, its flags, the CPU features it detected) differs, and
// exits 1 before any of the tool runs. An image built on one machine runs on others (a copy in
// the VM tier's guest, a pod on another node), so the image's run-snapshot starts a tool from
// its blob only on a CPU like the builder's (built-on-cpu) and from the plain bundle elsewhere.
//
// Here, in the real image: the blob is used on this machine (which built it), the plain bundle
// when built-on-cpu names another CPU, and the control: a blob made with other V8 settings (a
// foreign tag, as another CPU's would be) fails the start where run-snapshot believes the CPU.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { containerName, hardeningFlags, needs, sessionImage, tempDir, type Teardown } from '@agent-sandbox/testkit';

const lib = '/usr/local/lib/agent-sandbox';

// The relay's command prints its parent's argv (the relay's node): whether --snapshot-blob was
// given is how the relay was started.
const probe = [
  'egress-relay',
  '--socket',
  '/run/none.sock',
  '--listen',
  '127.0.0.1:0',
  '--',
  'sh',
  '-c',
  'tr "\\0" " " </proc/$PPID/cmdline; exit 7',
];

async function relay(t: Teardown, label: string, mounts: string[]) {
  const run = await runPodman(
    [
      'run',
      '--rm',
      '--name',
      containerName(t, label),
      ...hardeningFlags,
      '--user',
      '1000:1000',
      ...mounts,
      '--entrypoint',
      probe[0]!,
      sessionImage,
      ...probe.slice(1),
    ],
    {
      expect: 'any',
    },
  );
  return run;
}

t.test(
  "the relay starts from its blob on the builder's CPU, from the plain bundle on another, and runs either way",
  needs({ podman: true, images: [sessionImage] }),
  async (t) => {
    const base = await tempDir(t, 'astest-snapshot-cpu-');

    const here = await relay(t, 'snap-here', []);
    t.equal(here.exitCode, 7, `status passes through: ${here.stderr}`);
    t.match(
      here.stdout,
      `--snapshot-blob ${lib}/egress-relay.blob`,
      'on this machine (it built the image) the relay started from its blob',
    );
    t.equal(here.stderr, '', 'nothing on stderr');

    const other = path.join(base, 'other-cpu');
    await writeFile(other, 'vendor_id\t: SomeOtherVendor\ncpu family\t: 6\nmodel\t\t: 1\nflags\t\t: fpu sse2\n', { mode: 0o644 });
    const elsewhere = await relay(t, 'snap-other', ['-v', `${other}:${lib}/built-on-cpu:ro`]);
    t.equal(elsewhere.exitCode, 7, `status passes through: ${elsewhere.stderr}`);
    t.notMatch(elsewhere.stdout, '--snapshot-blob', 'on another CPU the relay started from the plain bundle');
    t.match(elsewhere.stdout, `${lib}/egress-relay.js`, 'the same bundle');
    t.equal(elsewhere.stderr, '', 'nothing on stderr');
  },
);

t.test(
  'control: a blob with another tag fails the start, exit 1, before the tool runs',
  needs({ podman: true, images: [sessionImage] }),
  async (t) => {
    const base = await tempDir(t, 'astest-snapshot-tag-');
    const blobs = path.join(base, 'blobs');
    await mkdir(blobs, { mode: 0o777 });
    // Made by the image's own node, from the image's own bundle, with one V8 flag more: V8 hashes
    // its flags into the tag as it does the CPU's features, so this is a foreign blob for any CPU.
    const make = await runPodman(
      [
        'run',
        '--rm',
        '--name',
        containerName(t, 'snap-make'),
        ...hardeningFlags,
        '--user',
        '0:0',
        '-v',
        `${blobs}:/out`,
        '--entrypoint',
        '/usr/bin/node',
        sessionImage,
        '--no-enable-popcnt',
        '--snapshot-blob',
        '/out/egress-relay.blob',
        '--build-snapshot',
        `${lib}/egress-relay.js`,
      ],
      { expect: 'any' },
    );
    t.equal(make.exitCode, 0, `the foreign blob is made: ${make.stderr}`);

    const foreign = ['-v', `${blobs}/egress-relay.blob:${lib}/egress-relay.blob:ro`];
    const refused = await relay(t, 'snap-foreign', foreign);
    t.equal(refused.exitCode, 1, 'node refuses the blob: exit 1');
    t.match(refused.stderr, /Failed to load the startup snapshot/, `node says why: ${refused.stderr}`);
    t.equal(refused.stdout, '', "the relay's command never ran");

    const other = path.join(base, 'other-cpu');
    await writeFile(other, 'vendor_id\t: SomeOtherVendor\nflags\t\t: fpu sse2\n', { mode: 0o644 });
    const plain = await relay(t, 'snap-foreign-plain', [...foreign, '-v', `${other}:${lib}/built-on-cpu:ro`]);
    t.equal(plain.exitCode, 7, `with another CPU recorded, the same foreign blob is never read and the relay runs: ${plain.stderr}`);
  },
);

// --network only ever selects the container's network: "none" or a named network namespace.
// The host's network, a bridge, another container's namespace or a path elsewhere is refused
// (80) before anything is staged or started, and kube takes only "none".
import t from 'tap';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ images: [] });

const refused = [
  'host',
  'bridge',
  'slirp4netns',
  'container:other',
  'ns:/proc/1/ns/net',
  'ns:/run/netns/../x',
  'ns:/run/netns/',
  'pasta',
  '',
];
let rows = 0;

for (const value of refused) {
  t.test(`--network ${JSON.stringify(value)} is refused with 80 and nothing runs`, requirements, async (t) => {
    const fx = await sessionFixture(t, `net${rows}`);
    const out = await fx.run(['run', ...fx.flags, '--network', value, '--', ...fx.agentArgs(0)]);
    t.equal(out.exitCode, 80, out.stderr);
    t.match(out.stderr, /--network: expected/, 'the message names the flag');
    t.equal(fx.ranInWorkspace(), undefined, 'the agent did not run');
    t.notOk(fx.ranOnHost(), 'not on the host either');
    rows++;
  });
}

t.test('every refused value was tried', requirements, async (t) => {
  t.equal(rows, refused.length, `${rows} of ${refused.length} rows`);
});

t.test('plan carries the named namespace into the podman argv; none is the default', requirements, async (t) => {
  const fx = await sessionFixture(t, 'netplan');
  const named = await fx.run(['plan', ...fx.flags, '--network', 'ns:/run/netns/astest-none-such', '--', ...fx.agentArgs(0)]);
  t.equal(named.exitCode, 0, named.stderr);
  t.ok(JSON.parse(named.stdout).argv.includes('--network=ns:/run/netns/astest-none-such'), 'the namespace is the network');
  const plain = await fx.run(['plan', ...fx.flags, '--', ...fx.agentArgs(0)]);
  t.ok(JSON.parse(plain.stdout).argv.includes('--network=none'), 'without the flag: --network=none');
});

t.test('kube refuses a network namespace', requirements, async (t) => {
  const fx = await sessionFixture(t, 'netkube');
  const out = await fx.run(['kube', ...fx.flags, '--network', 'ns:/run/netns/x', '--', ...fx.agentArgs(0)]);
  t.equal(out.exitCode, 80, out.stderr);
  t.match(out.stdout + out.stderr, /kube takes only "none"/);
});

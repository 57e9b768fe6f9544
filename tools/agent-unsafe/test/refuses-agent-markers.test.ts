// Every variable in the marker table makes the hatch refuse (90) under a real
// PTY on a host-like root, naming the variable and never its value; the stub
// agent never runs. The table is the source, so a row added there is tested here.
import t from 'tap';
import { envMarkers } from '../dist/markers.js';
import { makeHatchEnv, ranLines, runInHostLikeRoot, binDir } from './fixtures/hatch-env.js';
import { needs } from '@agent-sandbox/testkit';

// The host-like root is made with unshare and chroot: root only, reported as a skip elsewhere.
const hostLike = needs({ root: true, commands: ['unshare', 'chroot'] });

const canary = 'canary-marker-value-5f1c';
let ran = 0;
for (const marker of envMarkers) {
  t.test(`${marker.name} set (by ${marker.setBy}) refuses the hatch`, hostLike, async (t) => {
    ran += 1;
    const hatch = await makeHatchEnv(t);
    const value = marker.value ?? canary;
    const result = await runInHostLikeRoot(t, `${binDir}/cdx-unsafe`, hatch, { env: { [marker.name]: value } });
    t.equal(result.exitCode, 90, 'exit 90', { output: result.output });
    t.equal(result.refusal?.error?.code, 'agent-marker');
    t.same(
      result.refusal?.error?.reasons?.map((r: any) => r.code),
      ['agent-marker'],
      'the marker is the only reason',
    );
    t.match(result.refusal?.error?.message, marker.name, 'the message names the variable');
    t.notMatch(result.output, canary, "the variable's value is never printed");
    t.same(await ranLines(hatch), [], 'the stub agent never ran');
  });
}
t.test('every marker in the table was tried', hostLike, async (t) => {
  t.equal(ran, envMarkers.length);
  t.ok(ran >= 13, 'the table has the documented rows');
});

t.test('a marker set to the empty string still refuses (presence counts)', hostLike, async (t) => {
  const hatch = await makeHatchEnv(t);
  const result = await runInHostLikeRoot(t, `${binDir}/cld-unsafe`, hatch, { env: { CLAUDECODE: '' } });
  t.equal(result.exitCode, 90, 'exit 90', { output: result.output });
  t.same(await ranLines(hatch), []);
});

t.test('CURSOR_EXTENSION_HOST_ROLE other than agent-exec is not a marker (a human in the Cursor IDE)', hostLike, async (t) => {
  const hatch = await makeHatchEnv(t);
  const result = await runInHostLikeRoot(t, `${binDir}/ca-unsafe`, hatch, { env: { CURSOR_EXTENSION_HOST_ROLE: 'user' } });
  t.equal(result.exitCode, 0, 'exit 0', { output: result.output });
  t.same(await ranLines(hatch), ['cursor-agent ']);
});

// needs() turns only what the machine lacks into a skip. An absent image is a skip naming the
// script that builds it; podman failing while asked (here: podman as a user whose HOME does
// not exist, which exits 1 with its reason on stderr) is an error, never "the image is
// missing", which would skip the whole file and hide the failure.
import t from 'tap';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { imageBuildScript, missing, needs, sessionImage } from '../dist/index.js';

const requirements = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'requirements.js');
const rootOnly = { skip: process.getuid?.() === 0 ? false : 'needs root (runs the check as user nobody)' };

t.test('an absent image is a skip that names the script that builds it', async (t) => {
  const absent = 'localhost/astest-no-such-image:latest';
  t.same(needs({ images: [absent] }), { skip: `needs the image ${absent} (bash image/build-all.sh)` });
  t.equal(imageBuildScript('localhost/agent-sandbox-agents:latest'), 'image/build-agents.sh', 'the agents image has its own build script');
  t.equal(imageBuildScript(sessionImage), 'image/build-all.sh');
});

t.test('a present image is no skip (control)', async (t) => {
  t.same(missing({ images: [sessionImage] }), [], `${sessionImage} is here (built by setup)`);
});

t.test('podman failing while asked is thrown, not reported as a missing image', rootOnly, async (t) => {
  // Control: the same podman call as nobody really fails, with its reason on stderr.
  const direct = await execa('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'podman', 'image', 'exists', sessionImage], {
    reject: false,
    cwd: '/',
    env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' },
    extendEnv: false,
  });
  t.equal(direct.exitCode, 1, 'podman as nobody exits 1, the status of an absent image');
  t.match(direct.stderr, /\S/, 'and says why on stderr');
  const script = `import(${JSON.stringify(requirements)}).then((m) => { try { console.log(JSON.stringify({ gaps: m.missing({ images: [${JSON.stringify(sessionImage)}] }) })); } catch (e) { console.log(JSON.stringify({ thrown: e.message })); } })`;
  const out = await execa('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script], {
    reject: false,
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    extendEnv: false,
  });
  t.equal(out.exitCode, 0, 'node ran as nobody');
  const answer = JSON.parse(String(out.stdout));
  t.notOk(answer.gaps, 'no list of missing things came back (that would be a skip)');
  t.match(answer.thrown, /podman .*image exists.* failed \(exit 1\).*this is not a skip/, 'the failure is thrown with its cause');
});

// The README's main job, `pnpm run demo` (scripts/demo.sh): one command runs a real agent CLI
// contained, with the default egress: it reaches the scripted model server as api.openai.com
// (or api.anthropic.com) through its session's broker, and the demo ends with a summary of the
// edit, the commit, the ledger verdict with peaks, the egress line (what was reached, what was
// refused), the staged token seen by the server and the untouched host credential. Whatever it
// made (fake internet, server, temp dirs, containers) is gone afterwards, on success and when it
// is interrupted mid-session, and the host's /etc/hosts is never written.
import t, { type Test } from 'tap';
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { repoRoot } from '@agent-sandbox/testkit';
import { ensureAgentsImage } from './fixtures/real-agent-session.js';

t.before(ensureAgentsImage);

const demo = path.join(repoRoot, 'scripts/demo.sh');

/** What the demo says it made: its temp dir, namespace and session ids (from its stderr). */
function madeBy(stderr: string) {
  return {
    tmp: /workspace (\/\S+?)\/root\/workspaces\//.exec(stderr)?.[1],
    netns: /fake internet (asfi-[0-9a-f]+)/.exec(stderr)?.[1],
    ids: [...stderr.matchAll(/--workspace (demo-[a-z]+-[0-9a-f]+)/g)].map((m) => m[1]!),
  };
}

async function leftBehind(t: Test, made: ReturnType<typeof madeBy>) {
  t.ok(made.tmp && made.netns && made.ids.length > 0, `the demo named what it made: ${JSON.stringify(made)}`);
  t.notOk(existsSync(made.tmp!), 'its temp dir is removed');
  const netns = (await execa('ip', ['netns', 'list'])).stdout;
  t.notOk(netns.includes(made.netns!), 'its network namespace is removed');
  for (const id of made.ids) {
    const exists = await runPodman(['container', 'exists', `agent-sandbox-${id}`], { expect: 'any' });
    t.equal(exists.exitCode, 1, `its container agent-sandbox-${id} is gone`);
  }
  const server = await execa('pgrep', ['-f', `model-server.mjs --script ${made.tmp}`], { reject: false });
  t.equal(server.exitCode, 1, 'its model server is stopped');
  const helper = await execa('pgrep', ['-f', `fake-api.mjs --dir ${made.tmp}`], { reject: false });
  t.equal(helper.exitCode, 1, 'its fake internet helper is gone');
  const slots = '/run/agent-sandbox-fake-internet';
  const held = existsSync(slots)
    ? readdirSync(slots).filter(
        (d) => existsSync(`${slots}/${d}/names.json`) && readFileSync(`${slots}/${d}/names.json`, 'utf8').includes(made.netns!),
      )
    : [];
  t.same(held, [], 'its fake internet slot is released');
}

const hostsSha = () => createHash('sha256').update(readFileSync('/etc/hosts')).digest('hex');

t.test(
  'the demo runs a contained real agent through its broker and summarises the edit, the commit, the verdict, the peaks and the egress',
  async (t) => {
    const hostsBefore = hostsSha();
    const out = await execa('bash', [demo, '--runtime', 'codex'], { reject: false, timeout: 180_000, stdin: 'ignore' });
    t.equal(out.exitCode, 0, out.stderr);
    t.match(out.stdout, /^codex:$/m);
    t.match(out.stdout, /edit: +src\/sum\.mjs: return a - b; -> return a \+ b;/, 'the agent’s edit');
    t.match(out.stdout, /commit: +[0-9a-f]{7,} sum: add instead of subtract \(Scripted Agent\)/, 'the commit');
    t.match(
      out.stdout,
      /ledger: +ran, exited, exit 0; peak \d+ MiB, \d+ pids, [0-9.]+ CPU s; staged token seen by the server on 4\/4 model requests/,
      'the verdict and peaks',
    );
    t.match(
      out.stdout,
      /egress: +broker, allowlist api\.openai\.com chatgpt\.com auth\.openai\.com; reached api\.openai\.com:443 \(\d+ connections?, \d+ KB up, \d+ KB down\); refused none$/m,
      'the egress line: the API host reached by name through the broker, nothing refused',
    );
    t.match(
      out.stderr,
      /agent-sandbox run --runtime codex --workspace \S+ --image \S+ --ca-file \S+ -- /,
      'the session is started with the default egress (no --network)',
    );
    t.notMatch(out.stderr, /--network/, 'no network namespace of the caller');
    t.match(out.stdout, /host credential file byte-identical: yes/);
    t.equal(hostsSha(), hostsBefore, "the host's /etc/hosts is byte-identical");
    t.notMatch(out.stdout + out.stderr, /sk-demo-canary-/, 'the canary is never printed');
    await leftBehind(t, madeBy(out.stderr));
  },
);

t.test('interrupted mid-session, the demo still removes everything it made', async (t) => {
  const child = execa('bash', [demo, '--runtime', 'claude'], { reject: false, timeout: 180_000, stdin: 'ignore', detached: true });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the session did not start: ${stderr}`)), 60_000);
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('agent-sandbox run --runtime')) {
        clearTimeout(timer);
        // Let podman get going, then Ctrl-C-like: SIGTERM to the whole process group.
        setTimeout(() => {
          process.kill(-child.pid!, 'SIGTERM');
          resolve();
        }, 700);
      }
    });
  });
  const out = await child;
  t.not(out.exitCode, 0, `the interrupted demo does not report success (exit ${out.exitCode})`);
  await leftBehind(t, madeBy(stderr + String(out.stderr)));
});

// Real containers (localhost/agent-sandbox:latest, with the cred-stage bundle inside):
// the staged source is read-only inside, the installed copy is writable, a refresh inside
// leaves the host file byte-identical with its mtime unchanged, and a canary token shows up
// nowhere it must not: tool output, stderr, container logs, podman inspect, the process
// lists, the environment inside, and the files the session wrote into its container (read
// through `podman diff` and `podman mount` after the canary was staged; the same search finds
// the installed copy before the refresh replaces it).
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { runPodman } from '@agent-sandbox/shared/podman';
import { containerName, imageExists, repoRoot, runBin, tempDir } from '@agent-sandbox/testkit';
import { canary, codexChatgpt, hostEnv, inSeconds, writeCredential } from './fixtures/credentials.js';

const image = 'localhost/agent-sandbox:latest';
const hardening = [
  '--cap-drop=ALL',
  '--security-opt=no-new-privileges',
  '--user',
  '1000:1000',
  '--network=none',
  '--ulimit',
  'nofile=4096:4096',
  '--ulimit',
  'nproc=4096:4096',
];

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

/**
 * The files the container added or changed in its own layer (`podman diff`) that hold
 * `needle`, read through `podman mount`: what a session left in its container, written after
 * the canary existed (the image, built before, cannot hold a fresh canary).
 */
async function layerFilesHolding(name: string, needle: string): Promise<string[]> {
  const diff = await runPodman(['diff', '--format', 'json', name]);
  const changed = [...(JSON.parse(diff.stdout).added ?? []), ...(JSON.parse(diff.stdout).changed ?? [])] as string[];
  const root = (await runPodman(['mount', name])).stdout.trim();
  try {
    const holding: string[] = [];
    for (const file of changed) {
      const info = await lstat(path.join(root, file)).catch(() => undefined);
      if (info?.isFile() && (await readFile(path.join(root, file))).includes(needle)) holding.push(file);
    }
    return holding;
  } finally {
    await runPodman(['unmount', name], { expect: 'any' });
  }
}

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
  const bundle = await sha256(path.join(repoRoot, 'image/build/bin/cred-stage'));
  // The image keeps the bundle in /usr/local/lib/agent-sandbox and starts it from a snapshot made of it (image/run-snapshot.sh).
  const inside = await runPodman(
    ['run', '--rm', ...hardening, '--entrypoint', 'sha256sum', image, '/usr/local/lib/agent-sandbox/cred-stage.js'],
    { expect: 'any' },
  );
  if (!inside.stdout.startsWith(bundle)) {
    throw new Error(`${image} does not carry the current cred-stage bundle: run the cred-stage bundle script, then bash image/build.sh`);
  }
});

/** A refresh as codex does it, by rename and then in place: the copy takes it, the staged source and host bytes do not, and no copy of the canary is left behind. */
async function refreshInside(t: Test, name: string, hostHash: string, secret: string, seen: string[]): Promise<void> {
  const refresh = [
    `printf '{"tokens":{"access_token":"refreshed-inside"}}' > ~/.codex/auth.json.new && mv ~/.codex/auth.json.new ~/.codex/auth.json && echo refresh=ok`,
    `printf '{"tokens":{"access_token":"rewritten-in-place"}}' > ~/.codex/auth.json && echo rewrite=ok`,
    'echo "sourcehash=$(sha256sum < /sandbox-secrets/codex/auth.json | cut -d" " -f1)"',
  ].join('\n');
  const refreshed = await runPodman(['exec', name, 'sh', '-c', refresh], { timeoutMs: 30_000 });
  seen.push(refreshed.stdout, refreshed.stderr);
  t.match(refreshed.stdout, /^refresh=ok$/m, 'the copy is writable: a refresh by rename succeeds');
  t.match(refreshed.stdout, /^rewrite=ok$/m, 'and so does a rewrite in place');
  t.match(refreshed.stdout, new RegExp(`^sourcehash=${hostHash}$`, 'm'), 'the staged source is unchanged inside');
  t.same(
    await layerFilesHolding(name, secret),
    [],
    'after the refresh no file the session wrote in its container holds the canary (no leftover copy, temp file or log)',
  );
}

/** Where the canary must not be while the container runs: inspect, the process lists inside and on the host, the logs. */
async function canaryNowhereWhileRunning(t: Test, name: string, secret: string, seen: string[]): Promise<void> {
  const inspect = await runPodman(['inspect', name]);
  seen.push(inspect.stdout);
  t.notOk(inspect.stdout.includes(secret), 'podman inspect of the running container has no canary');
  const hostPs = await execa('ps', ['-eo', 'pid,args', '--no-headers']);
  t.notOk(hostPs.stdout.includes(secret), 'the host process list has no canary');
  const procs = await runPodman(['exec', name, 'sh', '-c', 'cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"']);
  t.ok(procs.stdout.includes('sleep'), 'control: the process list inside was read');
  t.notOk(procs.stdout.includes(secret), 'no argv or environment inside the container has the canary');
  const logs = await runPodman(['logs', name]);
  seen.push(logs.stdout, logs.stderr);
  t.match(logs.stderr, /installed codex credential at \/sandbox\/home\/\.codex\/auth\.json/, 'control: install logged its step');
}

t.test('staged read-only, copied writable, refreshed inside, host file untouched, canary nowhere', async (t) => {
  const base = await tempDir(t, 'cred-stage-ctr-');
  const home = `${base}/home`;
  const secret = canary();
  const hostFile = await writeCredential(`${home}/.codex/auth.json`, codexChatgpt(inSeconds(86400), secret));
  const before = { hash: await sha256(hostFile), mtime: (await stat(hostFile)).mtimeMs };
  t.ok((await readFile(hostFile, 'utf8')).includes(secret), 'control: the host file carries the canary');

  const seen: string[] = []; // every byte any tool or podman printed
  const staged = await runBin('cred-stage', ['stage'], {
    input: { runtime: 'codex', home, stageDir: `${base}/stage/s1` },
    env: hostEnv(home),
  });
  seen.push(staged.stdout, staged.stderr);
  t.equal(staged.exitCode, 0, staged.stderr);
  const mount = staged.json.mounts[0];
  t.equal((await stat(mount.source)).mode & 0o777, 0o400, 'the staged copy is 0400');
  t.equal((await stat(mount.source)).uid, 1000, 'owned by the container user');
  t.equal((await stat(path.dirname(mount.source))).mode & 0o777, 0o700, 'in a 0700 per-session dir');
  const stagedHash = await sha256(mount.source);
  t.equal(stagedHash, before.hash, 'the staged copy has the same bytes');

  const name = containerName(t, 'cred-stage');
  const run = await runPodman(
    ['run', '-d', '--name', name, ...hardening, '-v', `${mount.source}:${mount.destination}:ro`, image, 'sleep', '300'],
    { timeoutMs: 60_000 },
  );
  seen.push(run.stdout, run.stderr);
  // The entrypoint runs `cred-stage install` before exec'ing sleep; wait for the copy.
  const script = [
    'set -u',
    'for i in $(seq 50); do [ -f ~/.codex/auth.json ] && break; sleep 0.1; done',
    `echo "mountopts=$(awk '$5 == "/sandbox-secrets/codex/auth.json" {print $6}' /proc/self/mountinfo)"`,
    'if echo refreshed >> /sandbox-secrets/codex/auth.json 2>/dev/null; then echo write-source=ok; else echo write-source=failed; fi',
    'chmod 600 /sandbox-secrets/codex/auth.json 2>&1 | sed "s/^/chmod-source: /"',
    'echo "copy=$(stat -c "%a %U" ~/.codex/auth.json) dir=$(stat -c "%a %U" ~/.codex)"',
    'echo "copyhash=$(sha256sum < ~/.codex/auth.json | cut -d" " -f1)"',
  ].join('\n');
  const inside = await runPodman(['exec', name, 'sh', '-c', script], { timeoutMs: 30_000 });
  seen.push(inside.stdout, inside.stderr);
  t.match(inside.stdout, /^mountopts=ro[,\s]/m, 'the staged source is mounted read-only');
  t.match(inside.stdout, /^write-source=failed$/m, 'a write to the staged source fails inside');
  t.match(inside.stdout, /^chmod-source: .*Read-only file system/m, 'even its owner cannot chmod it: the mount is read-only');
  t.match(inside.stdout, /^copy=600 agent dir=700 agent$/m, 'the copy is 0600 in a 0700 dir, owned by the agent user');
  t.match(inside.stdout, new RegExp(`^copyhash=${before.hash}$`, 'm'), 'the installed copy has the host bytes (so the canary was inside)');
  t.same(
    await layerFilesHolding(name, secret),
    ['/sandbox/home/.codex/auth.json'],
    "control: the search of the container's own files finds the canary in the installed copy, and only there",
  );

  await refreshInside(t, name, before.hash, secret, seen);
  await canaryNowhereWhileRunning(t, name, secret, seen);

  await runPodman(['rm', '--force', '--time', '0', name]);

  t.equal(await sha256(hostFile), before.hash, 'the host file is byte-identical after the session');
  t.equal((await stat(hostFile)).mtimeMs, before.mtime, "the host file's mtime is unchanged");
  t.equal(await sha256(mount.source), stagedHash, 'the staged copy is byte-identical too');
  t.notOk(seen.join('\n').includes(secret), 'no tool output, stderr, container log or inspect carried the canary');
  t.notOk(JSON.stringify(staged.json).includes(secret), 'the plan the launcher records in its ledger has no canary');
});

t.test('a root-owned 0600 host file mounted directly is unreadable to uid 1000: the entrypoint fails closed with 85', async (t) => {
  const base = await tempDir(t, 'cred-stage-ctr-');
  const file = await writeCredential(`${base}/auth.json`, codexChatgpt(inSeconds(86400), canary()));
  const name = containerName(t, 'cred-direct');
  const out = await runPodman(['run', '--name', name, ...hardening, '-v', `${file}:/sandbox-secrets/codex/auth.json:ro`, image, 'true'], {
    expect: 'any',
    timeoutMs: 60_000,
  });
  t.equal(out.exitCode, 85, out.stderr);
  t.match(out.stderr, /staged file \/sandbox-secrets\/codex\/auth\.json cannot be opened \(EACCES\)/);
});

t.test('a staged runtime directory without its file fails the session closed with 85 naming the file', async (t) => {
  const base = await tempDir(t, 'cred-stage-ctr-');
  // codex staged properly, claude's directory staged but its file missing.
  const staged = await writeCredential(`${base}/stage/codex/auth.json`, codexChatgpt(inSeconds(86400), canary()), 0o400);
  await execa('chown', ['1000:1000', staged]);
  await mkdir(`${base}/stage/claude-empty`);
  const name = containerName(t, 'cred-missing');
  const out = await runPodman(
    [
      'run',
      '--name',
      name,
      ...hardening,
      '-v',
      `${staged}:/sandbox-secrets/codex/auth.json:ro`,
      '-v',
      `${base}/stage/claude-empty:/sandbox-secrets/claude:ro`,
      image,
      'true',
    ],
    { expect: 'any', timeoutMs: 60_000 },
  );
  t.equal(out.exitCode, 85, out.stderr);
  t.match(out.stderr, /staged file \/sandbox-secrets\/claude\/\.credentials\.json is missing/);
});

// What a dispatch refuses, against a real sshd on 127.0.0.1 and a real repository (the work it
// carries: dispatch-carries-work.test.ts): a malformed, altered, truncated, oversized or
// over-reaching bundle sent to the node's forced command is refused (80) without touching the
// mirror; a second session on the same workspace is refused (92), here while one runs and on
// the node from another client.
import t from 'tap';
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { binPath, git } from '@agent-sandbox/testkit';
import { lines, setup, type Setup } from './fixtures/dispatch-setup.js';

/** A raw request to the forced command: the line, then `payload` (stdin then closes). */
async function rawDispatch(s: Setup, offer: Record<string, unknown>, payload: Buffer) {
  const known = path.join(s.dir, 'known_hosts');
  await writeFile(known, `[127.0.0.1]:${s.sshd.port} ${s.sshd.hostKey}\n`);
  const request = {
    version: 1,
    nodeMachineId: s.sshd.machineId,
    runtime: 'codex',
    workspaceId: s.id,
    limits: { memory: '1g', memorySwap: '1g', pids: 256, cpus: 1, cpuShares: 512, disk: '1g', timeout: '10m' },
    image: 'localhost/agent-sandbox-agents:latest',
    agentBin: 'true',
    agentArgs: [],
    work: offer,
  };
  const out = await execa(
    'ssh',
    [
      '-F',
      '/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      `UserKnownHostsFile=${known}`,
      '-o',
      'IdentitiesOnly=yes',
      '-i',
      s.sshd.clientKey,
      '-p',
      String(s.sshd.port),
      'root@127.0.0.1',
    ],
    {
      input: Buffer.concat([Buffer.from(`${JSON.stringify(request)}\n`), payload]),
      reject: false,
      timeout: 60_000,
    },
  );
  return { exitCode: out.exitCode, stderr: String(out.stderr) };
}

async function snapshot(dir: string | undefined): Promise<string> {
  if (!dir) return 'no mirror';
  const files = String((await execa('find', [dir, '-printf', '%P %s %T@\n'])).stdout)
    .split('\n')
    .sort()
    .join('\n');
  return `${files}\n${await git(dir, 'for-each-ref')}`;
}

t.test('malformed, altered, truncated, oversized and over-reaching bundles are refused (80) without touching the mirror', async (t) => {
  const s = await setup(t, 'refuse');
  t.equal((await s.run('true')).exitCode, 0, 'a first session makes the mirror');
  const before = await snapshot(s.mirrorDir());
  const branch = `refs/heads/agent/${s.id}`;
  const tip = await git(s.repo, 'rev-parse', branch);
  const offer = (bytes: Buffer, extra: Record<string, unknown> = {}) => ({
    branch,
    tip,
    bytes: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    mirror: path.basename(s.mirrorDir()!, '.git'),
    ...extra,
  });
  const good = path.join(s.dir, 'good.bundle');
  await git(s.repo, 'bundle', 'create', '-q', good, branch);
  const goodBytes = readFileSync(good);
  await git(s.repo, 'branch', 'other-branch');
  const twoRefs = path.join(s.dir, 'two.bundle');
  await git(s.repo, 'bundle', 'create', '-q', twoRefs, branch, 'other-branch');
  const header = goodBytes.subarray(0, goodBytes.indexOf('PACK'));
  const brokenPack = Buffer.concat([
    header,
    Buffer.from('PACK'),
    Buffer.from([0, 0, 0, 2, 0, 0, 0, 9]),
    Buffer.from('garbage-garbage-garbage'),
  ]);
  const cases: [string, Record<string, unknown>, Buffer, RegExp][] = [
    ['junk', offer(Buffer.from('not a bundle at all\n')), Buffer.from('not a bundle at all\n'), /bundle-invalid|not a valid git bundle/],
    ['a valid header over a broken pack', offer(brokenPack), brokenPack, /bundle-invalid|not a valid git bundle|git fetch/],
    [
      'altered (sha256 differs)',
      { ...offer(goodBytes), sha256: '0'.repeat(64) },
      goodBytes,
      /sha256 is [0-9a-f]{64}, the request announced 0{64}/,
    ],
    [
      'truncated',
      offer(goodBytes),
      goodBytes.subarray(0, 100),
      new RegExp(`announced ${goodBytes.length} bytes and the connection ended after 100`),
    ],
    [
      'oversized',
      { ...offer(goodBytes), bytes: 4 * 1024 ** 3 },
      Buffer.alloc(0),
      /is 4294967296 bytes; this node takes at most 1073741824/,
    ],
    [
      'another ref besides the branch',
      offer(readFileSync(twoRefs)),
      readFileSync(twoRefs),
      /must hold exactly refs\/heads\/agent\/.* it holds .*other-branch/,
    ],
    ['another tip than announced', offer(goodBytes, { tip: 'f'.repeat(40) }), goodBytes, /must hold exactly .* at f{40}/],
  ];
  for (const [what, o, payload, message] of cases) {
    const out = await rawDispatch(s, o, payload);
    t.equal(out.exitCode, 80, `${what}: refused with 80\n${out.stderr}`);
    t.match(out.stderr, message, `${what}: the refusal names it`);
    t.equal(await snapshot(s.mirrorDir()), before, `${what}: the mirror is untouched`);
  }
  t.equal(cases.length, 7, 'every case ran');
  t.equal(
    lines(s.sshd.nodeLedger).filter((l) => l.outcome === 'refused' && l.exitCode === 80).length,
    7,
    'each refusal is a line in the node ledger',
  );
});

t.test('a second session on the same workspace is refused (92): here while one runs, and on the node from another client', async (t) => {
  const s = await setup(t, 'busy');
  // The first agent runs until the test says go (a loaded host may take many seconds to start it).
  const nodeWorkspace = path.join(s.sshd.nodeRoot, 'workspaces', s.id);
  const first = s.run('touch .running; i=0; while [ ! -f .go ] && [ $i -lt 900 ]; do i=$((i+1)); sleep 0.1; done; rm -f .running .go');
  for (let i = 0; i < 900 && !existsSync(path.join(nodeWorkspace, '.running')); i += 1) await new Promise((r) => setTimeout(r, 100));
  t.ok(existsSync(path.join(nodeWorkspace, '.running')), 'the first session runs on the node');
  const second = await s.run('true');
  t.equal(second.exitCode, 92, second.stderr);
  t.match(second.stderr, /workspace .* is busy/);
  // Another client (its own root and workspace of the same id) reaches the node: the node's lock refuses it.
  const otherRoot = path.join(s.dir, 'other-root');
  t.equal(
    (
      await execa(
        binPath('agent-sandbox'),
        ['workspace', 'new', s.id, '--repo', s.repo, '--root', otherRoot, '--branch', `other/${s.id}`],
        { env: s.env, extendEnv: false, reject: false },
      )
    ).exitCode,
    0,
  );
  const fromOther = await execa(
    binPath('agent-sandbox'),
    [
      'run',
      '--runtime',
      'codex',
      '--workspace',
      s.id,
      '--root',
      otherRoot,
      '--host',
      'node1',
      '--hosts',
      s.registry,
      '--ledger',
      s.ledger,
      '--agent-bin',
      'true',
    ],
    { env: s.env, extendEnv: false, reject: false, timeout: 60_000 },
  );
  t.equal(fromOther.exitCode, 92, String(fromOther.stderr));
  t.match(String(fromOther.stderr), /is busy: session .* started .* on /, "the node's refusal names the running session");
  await writeFile(path.join(nodeWorkspace, '.go'), '');
  t.equal((await first).exitCode, 0);
});

// Dispatch carries the work, against a real sshd on 127.0.0.1 and a real repository: a workspace
// made locally with `workspace new` goes to the node as a git bundle of its branch, the node keeps
// a mirror and runs the session in a linked worktree of it, and the agent's commit, made on the
// node, comes back into the local repository on the session's branch. Uncommitted work stays on
// the node and is named in the verdict. A malformed, altered, truncated, oversized or
// over-reaching bundle is refused (80) without touching the mirror; a second session on the same
// workspace is refused (92), here and on the node. The node's session writes its own git store and
// its branch comes into the mirror through the same checked import as a local session's.
import t, { type Test } from 'tap';
import { execa } from 'execa';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { validateDocument } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { binPath, git, tempDir } from '@agent-sandbox/testkit';
import { startSshd, type SshdFixture } from './fixtures/sshd-fixture.js';

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

interface Setup {
  dir: string;
  sshd: SshdFixture;
  repo: string;
  localRoot: string;
  id: string;
  registry: string;
  ledger: string;
  env: Record<string, string>;
  run: (agentScript: string, extra?: string[]) => Promise<{ exitCode: number; stdout: string; stderr: string }>;
  mirrorDir: () => string | undefined;
}

async function setup(t: Test, label: string): Promise<Setup> {
  const dir = await tempDir(t, `astest-carry-${label}-`);
  await chmod(dir, 0o755);
  const sshd = await startSshd(t, dir);
  const id = `astest-carry-${label}-${randomBytes(3).toString('hex')}`;
  t.teardown(() => runPodman(['rm', '--force', '--ignore', '--time', '0', `agent-sandbox-${id}`], { expect: 'any' }));
  await mkdir(path.join(sshd.nodeHome, '.codex'), { recursive: true });
  await writeFile(path.join(sshd.nodeHome, '.codex', 'auth.json'), JSON.stringify({ OPENAI_API_KEY: 'sk-canary-carry-node' }), { mode: 0o600 });
  const repo = path.join(dir, 'project');
  await mkdir(path.join(repo, 'src'), { recursive: true });
  await git(dir, 'init', '-q', '-b', 'main', repo);
  await writeFile(path.join(repo, 'src', 'app.txt'), 'version 1\n');
  await git(repo, 'add', '-A');
  await git(repo, 'commit', '-qm', 'initial');
  const registry = path.join(dir, 'hosts.json');
  await writeFile(registry, JSON.stringify({ version: 1, hosts: [sshd.registryEntry()] }));
  const localRoot = path.join(dir, 'local-root');
  const ledger = path.join(dir, 'local-state', 'ledger.jsonl');
  const env = { HOME: path.join(dir, 'local-home'), PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  await mkdir(env.HOME);
  const made = await execa(binPath('agent-sandbox'), ['workspace', 'new', id, '--repo', repo, '--root', localRoot], { env, extendEnv: false, reject: false });
  if (made.exitCode !== 0) throw new Error(made.stderr);
  return {
    dir,
    sshd,
    repo,
    localRoot,
    id,
    registry,
    ledger,
    env,
    run: async (agentScript, extra = []) => {
      const out = await execa(
        binPath('agent-sandbox'),
        ['run', '--runtime', 'codex', '--workspace', id, '--root', localRoot, '--host', 'node1', '--hosts', registry, '--ledger', ledger, ...extra, '--agent-bin', 'sh', '--', '-c', agentScript],
        { env, extendEnv: false, reject: false, timeout: 120_000 },
      );
      return { exitCode: out.exitCode ?? -1, stdout: String(out.stdout), stderr: String(out.stderr) };
    },
    mirrorDir: () => {
      const mirrors = path.join(sshd.nodeRoot, 'mirrors');
      const names = existsSync(mirrors) ? readdirSync(mirrors) : [];
      return names.length === 1 ? path.join(mirrors, names[0]!) : undefined;
    },
  };
}

const commitOnNode = (file: string, message: string) => `echo made-on-the-node > ${file} && git add ${file} && git -c user.name=Agent -c user.email=agent@sandbox.invalid commit -qm '${message}'`;

t.test("the agent's commit, made on the node, comes back into the local repository on the session's branch", async (t) => {
  const s = await setup(t, 'back');
  const out = await s.run(`${commitOnNode('agent.txt', 'made on the node')} && echo left > not-committed.txt && echo agent-done`);
  t.equal(out.exitCode, 0, `${out.stderr}\nsshd: ${s.sshd.log()}`);
  t.match(out.stdout, /agent-done/);
  t.equal(await git(s.repo, 'log', '-1', '--format=%s|%an', `agent/${s.id}`), 'made on the node|Agent', 'the commit is on the branch in the local repository');
  const localWorkspace = path.join(s.localRoot, 'workspaces', s.id);
  t.equal(readFileSync(path.join(localWorkspace, 'agent.txt'), 'utf8'), 'made-on-the-node\n', 'the local worktree advanced with it');
  t.equal(await git(localWorkspace, 'status', '--porcelain'), '', 'and is clean');
  t.equal(await git(s.repo, 'rev-parse', 'main'), await git(s.repo, 'rev-parse', `agent/${s.id}~1`), 'main did not move');
  const nodeWorkspace = path.join(s.sshd.nodeRoot, 'workspaces', s.id);
  t.equal(readFileSync(path.join(nodeWorkspace, 'not-committed.txt'), 'utf8'), 'left\n', 'uncommitted work stays on the node');
  t.notOk(existsSync(path.join(localWorkspace, 'not-committed.txt')), 'and does not travel');
  t.match(out.stderr, /1 uncommitted path stay on the node in .*not|1 uncommitted path stay on the node/);
  const [line] = lines(s.ledger);
  validateDocument(LedgerLine, line, 'local line');
  t.match(line, {
    host: 'node1',
    exitCode: 0,
    outcome: 'ran',
    work: { branch: `refs/heads/agent/${s.id}`, fetched: 'fast-forward', nodeWorkspace, uncommitted: { count: 1, paths: ['not-committed.txt'] }, applied: { worktree: 'created' } },
  });
  t.equal(line.work.received.bytes, line.work.sent.bytes, 'the node received exactly the bytes sent');
  t.equal(line.work.received.sha256, line.work.sent.sha256);
  t.ok(line.work.returned.bytes > 0 && line.work.returned.base === line.work.sent.tip, 'what came back builds on what was sent');
  const [node] = lines(s.sshd.nodeLedger);
  t.match(node, { sessionId: s.id, outcome: 'ran', work: { received: { bytes: line.work.sent.bytes } } }, "the node's own line has the bundle it received");
  t.comment(`figures: sent ${line.work.sent.bytes} B in ${line.work.sent.ms} ms; received+checked ${line.work.received.ms} ms; applied ${line.work.applied.ms} ms; returned ${line.work.returned.bytes} B, fetched back in ${line.work.returned.ms} ms`);
  t.ok(s.mirrorDir(), 'the node keeps one mirror');

  // A second dispatch of the same workspace: a local commit goes along, the node's worktree moves to it and keeps its leftover.
  await writeFile(path.join(localWorkspace, 'local.txt'), 'from the client\n');
  await git(localWorkspace, 'add', 'local.txt');
  await git(localWorkspace, 'commit', '-qm', 'made locally');
  const again = await s.run(`test -f local.txt && test -f not-committed.txt && rm not-committed.txt && ${commitOnNode('second.txt', 'second on the node')}`);
  t.equal(again.exitCode, 0, again.stderr);
  t.same((await git(s.repo, 'log', '--format=%s', `agent/${s.id}`)).split('\n'), ['second on the node', 'made locally', 'made on the node', 'initial']);
  t.match(lines(s.ledger)[1], { work: { applied: { worktree: 'updated' }, fetched: 'fast-forward', uncommitted: { count: 0 } } });
});

t.test('a branch moved locally while the session ran: the commits wait at refs/agent-sandbox/returned/<id>', async (t) => {
  const s = await setup(t, 'side');
  const localWorkspace = path.join(s.localRoot, 'workspaces', s.id);
  // Someone moves the local branch while the session runs on the node (its record there exists): before the commits return.
  const pending = s.run(`${commitOnNode('a.txt', 'node side')} && sleep 3`);
  const nodeRecord = path.join(s.sshd.nodeRoot, 'sessions', `${s.id}.json`);
  for (let i = 0; i < 300 && !existsSync(nodeRecord); i += 1) await new Promise((r) => setTimeout(r, 50));
  t.ok(existsSync(nodeRecord), 'the session runs on the node');
  await git(s.repo, 'update-ref', `refs/heads/agent/${s.id}`, await git(s.repo, 'commit-tree', '-p', 'main', '-m', 'moved here', `main^{tree}`));
  const out = await pending;
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(await git(s.repo, 'log', '-1', '--format=%s', `refs/agent-sandbox/returned/${s.id}`), 'node side');
  t.equal(await git(s.repo, 'log', '-1', '--format=%s', `agent/${s.id}`), 'moved here', 'the local branch is not overwritten');
  t.match(lines(s.ledger)[0], { work: { fetched: 'side-ref', sideRef: `refs/agent-sandbox/returned/${s.id}` } });
  t.notOk(existsSync(path.join(localWorkspace, 'a.txt')));
});

t.test('the node runs the same store and import: moved refs stay on the node, a rewritten branch comes back aside, the mirror stays whole', async (t) => {
  const s = await setup(t, 'rewrite');
  const first = await s.run(commitOnNode('a.txt', 'first on the node'));
  t.equal(first.exitCode, 0, first.stderr);
  const mirror = s.mirrorDir()!;
  const mirrorRefs = await git(mirror, 'for-each-ref', '--format=%(refname)');
  const agentScript = [
    'git update-ref refs/heads/main HEAD', // another branch, in the store only
    'git tag -f planted HEAD',
    'git reset -q --hard HEAD~1', // the branch rewritten: its last commit dropped...
    commitOnNode('b.txt', 'rewritten on the node'), // ...and another in its place
  ].join('; ');
  const out = await s.run(agentScript);
  t.equal(out.exitCode, 0, out.stderr);
  const side = `refs/agent-sandbox/returned/${s.id}`;
  t.equal(await git(s.repo, 'log', '-1', '--format=%s', side), 'rewritten on the node', 'the rewritten history waits at the side ref here');
  t.equal(await git(s.repo, 'log', '-1', '--format=%s', `agent/${s.id}`), 'first on the node', 'the local branch is not rewritten');
  t.match(lines(s.ledger)[1], { work: { fetched: 'side-ref', sideRef: side } });
  t.equal(await git(mirror, 'for-each-ref', '--format=%(refname)'), mirrorRefs, "no ref the session made or moved reached the node's mirror");
  t.equal((await execa('git', ['-c', 'safe.directory=*', '-C', mirror, 'fsck', '--full', '--no-progress'], { reject: false })).exitCode, 0, "the node's mirror passes git fsck --full");
  t.equal((await execa('git', ['-c', 'safe.directory=*', '-C', s.repo, 'fsck', '--full', '--no-progress'], { reject: false })).exitCode, 0, 'and so does the local repository');
  const node = lines(s.sshd.nodeLedger).at(-1);
  t.match(node?.gitReturn, { outcome: 'side-ref', refsDropped: { named: [{ name: 'refs/heads/main' }, { name: 'refs/tags/planted' }] } }, "the node's line counts what its import dropped");
});

/** A raw request to the forced command: the line, then `payload` (stdin then closes). */
async function rawDispatch(s: Setup, offer: Record<string, unknown>, payload: Buffer) {
  const known = path.join(s.dir, 'known_hosts');
  await writeFile(known, `[127.0.0.1]:${s.sshd.port} ${s.sshd.hostKey}\n`);
  const request = { version: 1, nodeMachineId: s.sshd.machineId, runtime: 'codex', workspaceId: s.id, limits: { memory: '1g', memorySwap: '1g', pids: 256, cpus: 1, cpuShares: 512, disk: '1g', timeout: '10m' }, image: 'localhost/agent-sandbox-agents:latest', agentBin: 'true', agentArgs: [], work: offer };
  const out = await execa('ssh', ['-F', '/dev/null', '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${known}`, '-o', 'IdentitiesOnly=yes', '-i', s.sshd.clientKey, '-p', String(s.sshd.port), 'root@127.0.0.1'], {
    input: Buffer.concat([Buffer.from(`${JSON.stringify(request)}\n`), payload]),
    reject: false,
    timeout: 60_000,
  });
  return { exitCode: out.exitCode, stderr: String(out.stderr) };
}

async function snapshot(dir: string | undefined): Promise<string> {
  if (!dir) return 'no mirror';
  const files = String((await execa('find', [dir, '-printf', '%P %s %T@\n'])).stdout).split('\n').sort().join('\n');
  return `${files}\n${await git(dir, 'for-each-ref')}`;
}

t.test('malformed, altered, truncated, oversized and over-reaching bundles are refused (80) without touching the mirror', async (t) => {
  const s = await setup(t, 'refuse');
  t.equal((await s.run('true')).exitCode, 0, 'a first session makes the mirror');
  const before = await snapshot(s.mirrorDir());
  const branch = `refs/heads/agent/${s.id}`;
  const tip = await git(s.repo, 'rev-parse', branch);
  const offer = (bytes: Buffer, extra: Record<string, unknown> = {}) => ({ branch, tip, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), mirror: path.basename(s.mirrorDir()!, '.git'), ...extra });
  const good = path.join(s.dir, 'good.bundle');
  await git(s.repo, 'bundle', 'create', '-q', good, branch);
  const goodBytes = readFileSync(good);
  await git(s.repo, 'branch', 'other-branch');
  const twoRefs = path.join(s.dir, 'two.bundle');
  await git(s.repo, 'bundle', 'create', '-q', twoRefs, branch, 'other-branch');
  const header = goodBytes.subarray(0, goodBytes.indexOf('PACK'));
  const brokenPack = Buffer.concat([header, Buffer.from('PACK'), Buffer.from([0, 0, 0, 2, 0, 0, 0, 9]), Buffer.from('garbage-garbage-garbage')]);
  const cases: [string, Record<string, unknown>, Buffer, RegExp][] = [
    ['junk', offer(Buffer.from('not a bundle at all\n')), Buffer.from('not a bundle at all\n'), /bundle-invalid|not a valid git bundle/],
    ['a valid header over a broken pack', offer(brokenPack), brokenPack, /bundle-invalid|not a valid git bundle|git fetch/],
    ['altered (sha256 differs)', { ...offer(goodBytes), sha256: '0'.repeat(64) }, goodBytes, /sha256 is [0-9a-f]{64}, the request announced 0{64}/],
    ['truncated', offer(goodBytes), goodBytes.subarray(0, 100), new RegExp(`announced ${goodBytes.length} bytes and the connection ended after 100`)],
    ['oversized', { ...offer(goodBytes), bytes: 4 * 1024 ** 3 }, Buffer.alloc(0), /is 4294967296 bytes; this node takes at most 1073741824/],
    ['another ref besides the branch', offer(readFileSync(twoRefs)), readFileSync(twoRefs), /must hold exactly refs\/heads\/agent\/.* it holds .*other-branch/],
    ['another tip than announced', offer(goodBytes, { tip: 'f'.repeat(40) }), goodBytes, /must hold exactly .* at f{40}/],
  ];
  for (const [what, o, payload, message] of cases) {
    const out = await rawDispatch(s, o, payload);
    t.equal(out.exitCode, 80, `${what}: refused with 80\n${out.stderr}`);
    t.match(out.stderr, message, `${what}: the refusal names it`);
    t.equal(await snapshot(s.mirrorDir()), before, `${what}: the mirror is untouched`);
  }
  t.equal(cases.length, 7, 'every case ran');
  t.equal(lines(s.sshd.nodeLedger).filter((l) => l.outcome === 'refused' && l.exitCode === 80).length, 7, 'each refusal is a line in the node ledger');
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
  t.equal((await execa(binPath('agent-sandbox'), ['workspace', 'new', s.id, '--repo', s.repo, '--root', otherRoot, '--branch', `other/${s.id}`], { env: s.env, extendEnv: false, reject: false })).exitCode, 0);
  const fromOther = await execa(binPath('agent-sandbox'), ['run', '--runtime', 'codex', '--workspace', s.id, '--root', otherRoot, '--host', 'node1', '--hosts', s.registry, '--ledger', s.ledger, '--agent-bin', 'true'], { env: s.env, extendEnv: false, reject: false, timeout: 60_000 });
  t.equal(fromOther.exitCode, 92, String(fromOther.stderr));
  t.match(String(fromOther.stderr), /is busy: session .* started .* on /, "the node's refusal names the running session");
  await writeFile(path.join(nodeWorkspace, '.go'), '');
  t.equal((await first).exitCode, 0);
});

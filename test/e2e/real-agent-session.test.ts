// The real Codex CLI and the real Claude Code, each through `agent-sandbox run` in the agents
// image, against the scripted model server: as root on the session's own loopback (a network
// namespace the container joins); as any other user, where that namespace is not theirs to
// make or join, by the real API name through the session's broker and the API route root opened
// for that user (lib/testkit api-route.ts: the VM tier's guest opens one for uid 1000), and
// then the ledger's egress line names the API host as the only one reached. The agent reads the
// failing project, edits it, runs the project's tests with node inside the container and
// commits. Shown from the host: the edit is in the worktree, the commit in git log, the server
// saw the staged canary as the bearer token, the host credential file is byte-identical with
// its mtime unchanged, and the ledger line carries the peaks. The canary is in no output, no
// ledger and not in the container's configuration (podman argv of the plan). The server records
// every request whole (credential headers as their hash): the staged canary arrived as the
// credential of every request and nowhere else, and the other runtime's credential, which the
// host HOME also holds, arrived nowhere; a control shows that what the agent read from its
// workspace did reach the server in a request body, where a leaked token would be found.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { validateDocument } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { apiRouteFile, findApiRoute, sightingsOf } from '@agent-sandbox/testkit';
import {
  agentArgs,
  agentsImage,
  credentialPath,
  demoSteps,
  ensureAgentsImage,
  hostGit,
  measuredLimitFlags,
  realSession,
  type Reach,
  type RealRuntime,
  type RealSession,
} from './fixtures/real-agent-session.js';

t.before(ensureAgentsImage);

const rows: { runtime: RealRuntime; version: RegExp; api: string; host: string }[] = [
  { runtime: 'codex', version: /^codex-cli 0\.171\.0/, api: 'responses', host: 'api.openai.com' },
  { runtime: 'claude', version: /^2\.1\.197 \(Claude Code\)/, api: 'messages', host: 'api.anthropic.com' },
];

// Root makes the model server's namespace; anyone else needs the route root opened for them.
const reach: Reach = process.getuid?.() === 0 ? 'namespace' : 'route';
const noWay =
  reach === 'route' && !findApiRoute()
    ? `no way to the model server: not root (its network namespace is root's) and no API route root opened for uid ${process.getuid?.()} (${apiRouteFile})`
    : false;
/** `podman container inspect` of the session's container, read while it runs ('' if it never showed). */
async function inspectWhileRunning(name: string, running: Promise<unknown>): Promise<string> {
  let ended = false;
  running.then(
    () => (ended = true),
    () => (ended = true),
  );
  // Until podman has the container (a loaded or emulated host starts it late) or the run ended.
  while (!ended) {
    const r = await runPodman(['container', 'inspect', name], { expect: 'any' });
    if (r.exitCode === 0) return r.stdout;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return '';
}

/** The host user's credential for the other runtime, a canary of its own: the session must carry it nowhere. */
async function otherCredential(hostHome: string, runtime: RealRuntime): Promise<{ other: RealRuntime; otherCanary: string }> {
  const other = runtime === 'codex' ? 'claude' : 'codex';
  const otherCanary = `sk-canary-other-${other}-${randomBytes(8).toString('hex')}`;
  const file = path.join(hostHome, credentialPath[other]);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const content =
    other === 'codex'
      ? { auth_mode: 'apikey', OPENAI_API_KEY: otherCanary }
      : {
          claudeAiOauth: {
            accessToken: otherCanary,
            refreshToken: otherCanary,
            expiresAt: Date.now() + 86_400_000,
            scopes: ['user:inference'],
          },
        };
  await writeFile(file, JSON.stringify(content), { mode: 0o600 });
  return { other, otherCanary };
}

/** The model server: every step answered once; the staged canary only as each request's credential, the other runtime's nowhere. */
async function checkWhatTheServerGot(t: Test, s: RealSession, api: string, other: RealRuntime, otherCanary: string): Promise<void> {
  // The model server: every step answered, and each main request carried the staged canary.
  const requests = (await s.server.requests()).filter((r) => r.api === api && !r.side);
  t.same(
    requests.map((r) => r.step),
    demoSteps.map((_, i) => i),
    'the server answered every scripted step once, in order',
  );
  t.ok(requests.length > 0 && requests.every((r) => r.tokenMatched === true), 'the bearer token the agent presented is the staged canary');

  // What reached the server, searched for both canaries (every request, side requests too).
  const all = await s.server.requests();
  t.ok(
    requests.every((r) => sightingsOf([r], s.canary).asCredential.length === 1),
    'control: each main request carried the staged canary as its credential header (its hash in the record)',
  );
  t.ok(
    all.some((r) => r.received?.body.includes('return a - b;')),
    'control: request bodies are recorded: the file the agent read in its workspace reached the server in a tool result',
  );
  t.same(sightingsOf(all, s.canary).raw, [], 'the staged canary reached the server in no URL, other header or body');
  t.same(sightingsOf(all, otherCanary), { raw: [], asCredential: [] }, `the host's ${other} credential reached the server nowhere`);
}

/** reach 'route': the session's only way out was its broker, to the API host at the route's addresses. */
function checkTheRoute(t: Test, s: RealSession, line: any, host: string): void {
  t.match(line.egress, { mode: 'broker' }, 'the session went out through its broker');
  const summary = line.egress.summary;
  t.same(
    summary.reached.map((r: { host: string; port: number }) => `${r.host}:${r.port}`),
    [`${host}:443`],
    `${host}:443 is the only host reached`,
  );
  t.same(summary.refused, [], 'nothing was refused: the CLI tried no other host');
  const attempts = readFileSync(line.egress.log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  t.ok(
    attempts.length > 0 &&
      attempts.every((a) => a.decision === 'allowed' && a.host === host && [s.route!.v4, s.route!.v6].includes(a.address)),
    `every attempt was dialed at the route's ${s.route!.v4} or ${s.route!.v6}, as the system resolver gave ${host}`,
  );
}

let ran = 0;

for (const row of rows) {
  t.test(
    `${row.runtime}: the real CLI edits, tests and commits in the contained workspace, presenting the staged credential`,
    { skip: noWay },
    async (t) => {
      const s = await realSession(t, { runtime: row.runtime, label: row.runtime, reach });
      const { other, otherCanary } = await otherCredential(s.hostHome, row.runtime);

      // The binary is real: it answers --version inside the same image, through the launcher.
      const version = await s.run(['run', ...s.launcherFlags, '--', '--version']);
      t.equal(version.exitCode, 0, version.stderr);
      t.match(version.stdout.trim(), row.version, `the image's ${row.runtime} binary runs and reports its pinned version`);

      // Under the defaults derived from the measurements (scripts/measure-agents.mjs).
      const running = s.run(['run', ...s.launcherFlags, ...measuredLimitFlags, '--', ...agentArgs(row.runtime)]);
      // While the session runs: the container's whole configuration, as podman reports it.
      const inspect = await inspectWhileRunning(`agent-sandbox-${s.id}`, running);
      const out = await running;
      t.match(inspect, /"Name": "agent-sandbox-/, 'podman inspect was read while the session ran');
      t.equal(out.exitCode, 0, `the agent exited 0\n${out.stderr.slice(-3000)}`);

      // The agent's edit, in the host's worktree.
      t.match(readFileSync(path.join(s.workspace, 'src/sum.mjs'), 'utf8'), /return a \+ b;/, 'the edit is in the host worktree');
      // The commit, in the host's git log: made inside the container, after the project's tests passed there.
      const log = await hostGit(s.workspace, ['log', '--format=%s|%an|%ae']);
      t.same(
        log.split('\n'),
        ['sum: add instead of subtract|Scripted Agent|agent@sandbox.invalid', 'initial: sum subtracts|Test|test@sandbox.invalid'],
        'the commit is in the host git log',
      );
      t.equal(await hostGit(s.workspace, ['status', '--porcelain']), '', 'the worktree is clean: the commit holds the edit');

      await checkWhatTheServerGot(t, s, row.api, other, otherCanary);

      // The host credential file is untouched.
      t.equal(s.credential.sha256(), s.credential.sha256Before, 'the host credential file is byte-identical');
      t.equal(statSync(s.credential.path).mtimeMs, s.credential.mtimeMs, 'and its mtime is unchanged');
      t.notOk(existsSync(path.join(s.home, credentialPath[row.runtime])), 'the installed copy does not outlive the session in the home');
      t.notOk(existsSync(path.join(s.root, 'secrets', s.id)), 'the staged copy is removed');

      // The ledger: one line per session, the second is the agent's, with its peaks.
      const lines = s.ledgerLines();
      t.equal(lines.length, 2, 'one ledger line per session (--version, then the task)');
      const line = lines[1];
      t.doesNotThrow(() => validateDocument(LedgerLine, line, 'ledger'), 'the ledger line matches its schema');
      t.match(line, {
        sessionId: s.id,
        runtime: row.runtime,
        image: agentsImage,
        limits: { memory: '4g', memorySwap: '4g', pids: 512, cpus: 2, cpuShares: 512 },
        outcome: 'ran',
        reason: 'exited',
        exitCode: 0,
        evidence: { network: s.server.network ?? 'none' },
      });
      if (s.route) checkTheRoute(t, s, line, row.host);
      t.ok(line.peak.memoryBytes > 10 * 1024 * 1024, `peak memory measured: ${line.peak.memoryBytes} B`);
      t.ok(line.peak.pids >= 3, `peak pids measured: ${line.peak.pids}`);
      t.ok(line.peak.cpuSeconds > 0, `CPU seconds measured: ${line.peak.cpuSeconds}`);
      t.comment(
        `${row.runtime}: peak ${(line.peak.memoryBytes / 2 ** 20).toFixed(1)} MiB, ${line.peak.pids} pids, ${line.peak.cpuSeconds} CPU s`,
      );

      // The canary: nowhere but in the credential file.
      const plan = await s.run(['plan', ...s.launcherFlags, '--', ...agentArgs(row.runtime)]);
      t.equal(plan.exitCode, 0, plan.stderr);
      for (const [what, text] of [
        ['stdout', out.stdout + version.stdout],
        ['stderr', out.stderr + version.stderr],
        ['the ledger', readFileSync(s.ledger, 'utf8')],
        ['the podman argv and plan', plan.stdout],
        ['podman inspect of the running container', inspect],
        ['the model server record', readFileSync(path.join(s.base, 'model-requests.jsonl'), 'utf8')],
      ] as const) {
        t.notOk(text.includes(s.canary), `the canary is not in ${what}`);
        t.notOk(text.includes(otherCanary), `the other runtime's canary is not in ${what}`);
      }
      ran++;
    },
  );
}

t.test('every runtime row ran', { skip: noWay }, async (t) => {
  t.equal(ran, rows.length, `${ran} of ${rows.length} real-agent rows completed`);
});

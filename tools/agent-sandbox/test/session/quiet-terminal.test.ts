// A quiet terminal: an interactive `agent-sandbox run` under a real PTY (util-linux `script`)
// shows the agent's own output first. cred-stage's JSON document, its line and the launcher's
// progress are not on the terminal: the entrypoint wrote them to a file in the session home,
// which the launcher read into the ledger line and removed. With --verbose the launcher's
// progress is on the terminal in words, before the agent (so the first check can fail), and the
// entrypoint's words after it; never a JSON document. A failure of cred-stage install still
// reaches the terminal and fails closed.
import t from 'tap';
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { binPath } from '@agent-sandbox/testkit';
import { sessionNeeds, canary, sessionFixture, type SessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ commands: ['script'] });

const marker = 'AGENT-FIRST-OUTPUT';
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The launcher under a real PTY; stdin stays open (an interactive user), the terminal's bytes come back. */
async function underPty(fx: SessionFixture, extra: string[]) {
  const argv = [
    binPath('agent-sandbox'),
    'run',
    ...extra,
    '--runtime',
    'codex',
    '--workspace',
    fx.id,
    '--root',
    fx.root,
    '--ledger',
    fx.ledger,
    '--agent-bin',
    'sh',
    '--',
    '-c',
    `echo ${marker}; exit 4`,
  ];
  const env = Object.entries({ ...fx.env, TERM: 'xterm' }).map(([k, v]) => `${k}=${v}`);
  const child = execa('script', ['-qfec', ['env', '-i', ...env, ...argv].map(shq).join(' '), '/dev/null'], {
    stdin: 'pipe',
    reject: false,
    timeout: 120_000,
    stripFinalNewline: false,
  });
  const out = await child;
  return { exitCode: out.exitCode, terminal: String(out.stdout).replace(/\r/g, '') };
}

t.test(
  "under a real PTY the agent's own output comes first: no JSON, no cred-stage or launcher line before it",
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'quiet');
    const { exitCode, terminal } = await underPty(fx, []);
    t.equal(exitCode, 4, terminal);
    t.ok(terminal.includes(marker), 'the agent ran on the terminal');
    const before = terminal.slice(0, terminal.indexOf(marker));
    t.notMatch(before, /[{}]|cred-stage|agent-sandbox|\w/, `nothing before the agent's output: ${JSON.stringify(before)}`);
    t.notMatch(terminal, /cred-stage|"installed"/, 'nor after it');
    const line = fx.ledgerLines().at(-1);
    t.match(line, { exitCode: 4, entrypoint: { truncated: false } });
    t.match(
      line.entrypoint.lines.join('\n'),
      /^cred-stage: installed codex credential at \/sandbox\/home\/\.codex\/auth\.json/m,
      "cred-stage's line is in the ledger",
    );
    t.ok(
      line.entrypoint.lines.some((l: string) => /^\{"ok":true,"installed":\[/.test(l)),
      'and its JSON document',
    );
    t.notOk(existsSync(path.join(fx.root, 'homes', fx.id, '.agent-sandbox-entrypoint.log')), 'the file is gone from the session home');
    t.notMatch(JSON.stringify(line) + terminal, new RegExp(canary), 'no secret on the terminal or in the ledger');
  },
);

t.test(
  "with --verbose the progress comes in words before the agent's output, the entrypoint's words after it, and no JSON at all",
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'verbose');
    const { exitCode, terminal } = await underPty(fx, ['--verbose']);
    t.equal(exitCode, 4, terminal);
    const at = terminal.indexOf(marker);
    const [before, after] = [terminal.slice(0, at), terminal.slice(at)];
    t.match(before, /agent-sandbox: checking this host and image /);
    t.match(before, /agent-sandbox: starting session /);
    t.notMatch(terminal, /[{}]/, `no JSON document on the terminal: ${JSON.stringify(terminal)}`);
    t.match(
      after,
      /^agent-sandbox: in the container: cred-stage: installed codex credential at \/sandbox\/home\/\.codex\/auth\.json/m,
      "cred-stage's own words, after the session",
    );
    t.match(
      terminal.trimEnd().split('\n').at(-1),
      new RegExp(`^agent-sandbox: session ${fx.id} ended: exit 4, exited$`),
      'the last line says how the session ended',
    );
    const line = fx.ledgerLines().at(-1);
    t.ok(
      line.entrypoint.lines.some((l: string) => /^\{"ok":true,"installed":\[/.test(l)),
      "the JSON document is the ledger's",
    );
  },
);

t.test('a quiet session whose credential cannot be installed still says why on the terminal and fails closed', requirements, async (t) => {
  const fx = await sessionFixture(t, 'quietfail');
  const codexDir = path.join(fx.root, 'homes', fx.id, '.codex');
  await mkdir(codexDir, { recursive: true });
  await symlink('/etc/hostname', path.join(codexDir, 'auth.json'));
  await execa('chown', ['-R', '-h', '1000:1000', path.join(fx.root, 'homes', fx.id)]);
  const { exitCode, terminal } = await underPty(fx, []);
  t.equal(exitCode, 85, terminal);
  t.match(terminal, /cred-stage: \/sandbox\/home\/\.codex\/auth\.json is a symlink; refusing to write credentials through it/);
  t.match(terminal, /agent-entrypoint: cred-stage install failed with exit 85; refusing to start/);
  t.notMatch(terminal, new RegExp(marker), 'the agent never started');
});

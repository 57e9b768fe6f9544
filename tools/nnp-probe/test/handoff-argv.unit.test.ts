// buildHandoffArgv and escapeDollars, as pure functions: the exact argv for each
// systemd version range, and escaping that the manager undoes exactly.
import t from 'tap';
import fc from 'fast-check';
import { buildHandoffArgv, escapeDollars, statusWrapper } from '../dist/index.js';

const plan = {
  unit: 'agent-sandbox-nnp-0123456789abcdef.service',
  path: '/usr/bin:/bin',
  home: '/home/a',
  statusFile: '/run/user/1000/agent-sandbox-nnp-0123456789abcdef/status',
  command: ['podman', 'run', '--env', 'X=$HOME', 'img'],
};
const prefix = ['systemd-run', '--user', '--pipe', '--wait', '--collect', '--quiet', `--unit=${plan.unit}`, '--same-dir'];

t.test('systemd 252 (below 254): no --expand-environment, every $ after -- written $$', async (t) => {
  t.same(buildHandoffArgv({ ...plan, systemdVersion: 252 }), [
    ...prefix,
    '--setenv=PATH=/usr/bin:/bin',
    '--setenv=HOME=/home/a',
    '--',
    '/bin/sh',
    '-c',
    statusWrapper.replace(/\$/g, '$$$$'),
    plan.statusFile,
    'podman',
    'run',
    '--env',
    'X=$$HOME',
    'img',
  ]);
});

t.test('systemd 254 and later: --expand-environment=no and the command as given', async (t) => {
  for (const systemdVersion of [254, 256]) {
    t.same(buildHandoffArgv({ ...plan, systemdVersion }), [
      ...prefix,
      '--expand-environment=no',
      '--setenv=PATH=/usr/bin:/bin',
      '--setenv=HOME=/home/a',
      '--',
      '/bin/sh',
      '-c',
      statusWrapper,
      plan.statusFile,
      ...plan.command,
    ]);
  }
});

t.test('an unknown systemd version is treated as old: escaped, no --expand-environment', async (t) => {
  const argv = buildHandoffArgv({ ...plan, systemdVersion: null });
  t.notOk(argv.includes('--expand-environment=no'));
  t.equal(argv.at(-2), 'X=$$HOME');
});

t.test("escapeDollars doubles every $ and nothing else; the manager's $$ -> $ gives the original back", async (t) => {
  const rows: [string, string][] = [
    ['', ''],
    ['plain', 'plain'],
    ['$', '$$'],
    ['$$', '$$$$'],
    ['$HOME', '$$HOME'],
    ['${PATH}', '$${PATH}'],
    ['a$b$', 'a$$b$$'],
  ];
  for (const [input, want] of rows) t.equal(escapeDollars(input), want, JSON.stringify(input));
  // The manager reads "$$" as one literal "$", left to right.
  const managerUnescape = (s: string) => s.replace(/\$\$/g, '$');
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom('$', '{', '}', 'a', 'H', ' ', '%') }), (s) => {
      const escaped = escapeDollars(s);
      return managerUnescape(escaped) === s && !escaped.replace(/\$\$/g, '').includes('$');
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 generated strings round-trip');
});

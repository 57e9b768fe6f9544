// Flags reach the command as yargs delivers them (lib/shared/src/parse-argv.ts): values,
// `--flag=value`, repeats as arrays, booleans with true/false, `--` and the command after it;
// anything else is refused with 80 and a code, and --help lists every flag.
import t from 'tap';
import { main, parseArgv, type MainIo, type ToolSpec } from '../dist/index.js';
import { PathGuardInput } from '../dist/validators/path-guard.js';
import { RunPlan } from '../dist/validators/sandbox-run.js';

const tool: ToolSpec = {
  name: 'fixture',
  summary: 'argv fixture',
  commands: [
    {
      name: 'run',
      describe: 'input flags of every type; takes a command',
      input: RunPlan,
      takesCommand: true,
      flags: [
        { flag: 'image', field: 'image', type: 'string', describe: 'image' },
        { flag: 'session-id', field: 'sessionId', type: 'string', describe: 'session' },
        { flag: 'limits', field: 'limits', type: 'json', describe: 'limits JSON' },
        { flag: 'env', field: 'env', type: 'array', describe: 'variable names' },
        { flag: 'remove', field: 'remove', type: 'boolean', describe: '--rm' },
      ],
      options: [
        { flag: 'dry-run', type: 'boolean', describe: 'print only' },
        { flag: 'grace', type: 'number', describe: 'seconds', default: 3 },
      ],
      run: async (input, ctx) => ({ output: { input, rest: ctx.rest, options: ctx.options } }),
    },
    {
      name: 'check',
      describe: 'no command after it',
      input: PathGuardInput,
      flags: [
        { flag: 'path', field: 'path', type: 'string', describe: 'path' },
        { flag: 'root', field: 'root', type: 'string', describe: 'root' },
        { flag: 'create', field: 'create', type: 'boolean', describe: 'create' },
      ],
      run: async (input) => ({ output: { input } }),
    },
  ],
};

const io: MainIo = { readStdin: async () => '', stdinIsTTY: true, stdoutIsTTY: false, env: {}, log: () => undefined };
const limits = '{"memory":"512m","memorySwap":"512m","pids":64,"cpus":1,"cpuShares":256}';
const base = ['run', '--image', 'i', '--session-id', 's1', `--limits=${limits}`];

t.test('flag values arrive as the command declared them', async (t) => {
  const rows: { argv: string[]; values?: Record<string, unknown>; rest?: string[] }[] = [
    { argv: base, values: { image: 'i', 'session-id': 's1', grace: 3 }, rest: [] },
    { argv: [...base, '--grace', '7', '--dry-run'], values: { grace: 7, 'dry-run': true } },
    { argv: [...base, '--env', 'A'], values: { env: ['A'] } },
    { argv: [...base, '--env', 'A', '--env=B'], values: { env: ['A', 'B'] } },
    { argv: [...base, '--image', 'j'], values: { image: ['i', 'j'] } },
    { argv: [...base, '--remove'], values: { remove: true } },
    { argv: [...base, '--remove=false'], values: { remove: false } },
    { argv: [...base, '--remove', 'false', '--dry-run', 'true'], values: { remove: false, 'dry-run': true }, rest: [] },
    { argv: [...base, '--', 'id', '--remove', '-u'], rest: ['id', '--remove', '-u'] },
    { argv: [...base, 'id', '--', '-u'], rest: ['id', '-u'] },
    { argv: ['check', '--path', 'a', '--', 'x'], values: { path: 'a' }, rest: ['x'] },
  ];
  for (const row of rows) {
    const parsed = await parseArgv(tool, row.argv);
    if (parsed.kind !== 'command') throw new Error(`${JSON.stringify(row.argv)}: not a command`);
    if (row.values) t.match(parsed.values, row.values, JSON.stringify(row.argv));
    if (row.rest) t.same(parsed.rest, row.rest, `rest of ${JSON.stringify(row.argv)}`);
  }
  t.equal(rows.length, 11, 'every row ran');
});

t.test('the input document is built from the flags and validated', async (t) => {
  const out = await main(tool, [...base, '--env', 'HOME', '--remove=false', '--', 'true'], io);
  t.equal(out.exitCode, 0);
  t.same(JSON.parse(out.output), {
    input: { image: 'i', sessionId: 's1', limits: JSON.parse(limits), env: ['HOME'], remove: false },
    rest: ['true'],
    options: { grace: 3 },
  });
});

t.test('argv it cannot read as declared is refused with 80, code bad-flag', async (t) => {
  const rows: string[][] = [
    [...base, '--force'],
    [...base, '-x'],
    [...base, '--no-remove'],
    [...base, '--image'],
    [...base, '--image', '--dry-run'],
    [...base, '--remove=yes'],
    ['check', '--path', 'a', 'stray'],
    ['nope'],
    [],
    ['--root', 'x'],
  ];
  for (const argv of rows) {
    const out = await main(tool, argv, io);
    const label = JSON.stringify(argv[0] === 'run' ? argv.slice(base.length) : argv);
    t.equal(out.exitCode, 80, label);
    t.equal(JSON.parse(out.output).error.code, 'bad-flag', label);
  }
  t.match(
    JSON.parse((await main(tool, [...base, '--force'], io)).output).error.message,
    /unknown argument: --force\b/,
    'the message names the flag as typed',
  );
  t.match(
    JSON.parse((await main(tool, [...base, '--remove=yes'], io)).output).error.message,
    /--remove: expected true or false, got "yes"/,
  );
  t.equal(rows.length, 10, 'every row ran');
});

t.test('a repeated single-value flag is refused by the schema, naming the field', async (t) => {
  const out = await main(tool, [...base, '--image', 'j'], io);
  t.equal(out.exitCode, 80);
  t.match(JSON.parse(out.output).error, { code: 'invalid-field', field: 'input.image' });
});

t.test('--help and -h print every flag of the command, and win over anything else before --', async (t) => {
  for (const argv of [
    ['run', '--help'],
    ['run', '-h'],
    ['run', '--force', '--help'],
  ]) {
    const out = await main(tool, argv, io);
    t.equal(out.exitCode, 0, JSON.stringify(argv));
    const flags = [...out.output.matchAll(/^\s+(?:-h, )?(--[a-z-]+)/gm)].map((m) => m[1]);
    t.same(
      flags.sort(),
      ['--dry-run', '--env', '--grace', '--help', '--image', '--limits', '--remove', '--session-id', '--version'],
      JSON.stringify(argv),
    );
  }
  const top = await main(tool, ['--help'], io);
  t.equal(top.exitCode, 0);
  t.match(top.output, /^fixture: argv fixture\n/);
  t.match(top.output, /fixture run \[command\.\.\]\s+input flags/);
  t.match(top.output, /fixture completion\s+print a bash completion script/);
  t.match(top.output, /Exit codes: 0\.\.255 the contained command's own status; 80 usage; 81 node unreachable;/);
  t.match((await main(tool, [...base, '--', '--help'], io)).output, /"rest":\["--help"\]/, "after -- it is the command's");
});

t.test('--version prints the version the tool declares, and nothing is run', async (t) => {
  const out = await main({ ...tool, version: '1.2.3' }, ['--version'], io);
  t.same(out, { output: '1.2.3\n', exitCode: 0 });
  t.same(await main({ ...tool, version: '1.2.3' }, ['run', '--version'], io), { output: '1.2.3\n', exitCode: 0 });
});

t.test('a typo of a command is refused (80) with the command it resembles', async (t) => {
  const out = await main(tool, ['rnu', '--image', 'i'], io);
  t.equal(out.exitCode, 80);
  t.match(JSON.parse(out.output).error, { code: 'bad-flag', message: /^unknown command "rnu": Did you mean run\?/ });
  t.match(
    JSON.parse((await main(tool, ['zzzzzz'], io)).output).error.message,
    /^unknown command "zzzzzz" \(see --help\)$/,
    'nothing resembles it',
  );
});

t.test("completion prints a bash script, and the script's question is answered with commands and flags", async (t) => {
  const script = await main(tool, ['completion'], io);
  t.equal(script.exitCode, 0);
  t.match(script.output, /^complete -o bashdefault -o default -F _fixture_yargs_completions fixture$/m);
  t.match(script.output, /fixture --get-yargs-completions "\$\{args\[@\]\}"/);
  const commands = await main(tool, ['--get-yargs-completions', 'fixture', ''], io);
  t.same(commands.output.trim().split('\n').sort(), ['check', 'completion', 'run']);
  const flags = await main(tool, ['--get-yargs-completions', 'fixture', 'run', '--se'], io);
  t.ok(flags.output.split('\n').includes('--session-id'), flags.output);
});

t.test('no argument at all runs the default command without loading yargs, or asks for a command', async (t) => {
  const single: ToolSpec = {
    name: 'single',
    summary: 's',
    commands: [
      {
        name: '$0',
        describe: 'd',
        options: [{ flag: 'grace', type: 'number', describe: 'g', default: 3 }],
        run: async (_i, ctx) => ({ output: ctx.options }),
      },
    ],
  };
  t.same(await main(single, [], io), { output: '{"grace":3}\n', exitCode: 0 });
  const none = await main(tool, [], io);
  t.equal(none.exitCode, 80);
  t.match(JSON.parse(none.output).error, { code: 'bad-flag', message: /name a command/ });
});

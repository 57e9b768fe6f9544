// Everything after `--` is the contained command's (the agent's argv), handed on untouched: yargs
// never reads it as a flag, as --help, --version, a completion request or a command, never turns
// it into a number and never drops a second `--`. Before `--`, arguments of a command that takes
// one are handed on too, as they were.
import t from 'tap';
import fc from 'fast-check';
import { main, parseArgv, type MainIo, type ToolSpec } from '../dist/index.js';

const echo = {
  run: async (_input: unknown, ctx: { rest: string[]; options: Record<string, unknown> }) => ({
    output: { rest: ctx.rest, options: ctx.options },
  }),
};
const tool: ToolSpec = {
  name: 'host',
  version: '1.0.0',
  summary: 'a tool whose commands take a command',
  commands: [
    {
      name: 'run',
      describe: 'named command',
      takesCommand: true,
      options: [
        { flag: 'dry-run', type: 'boolean', describe: 'd' },
        { flag: 'image', type: 'string', describe: 'i' },
      ],
      ...echo,
    },
    { name: 'plan', describe: 'another', takesCommand: true, ...echo },
  ],
};
const single: ToolSpec = {
  name: 'single',
  summary: 'a default command that takes a command',
  commands: [{ name: '$0', describe: 'd', takesCommand: true, options: [{ flag: 'dry-run', type: 'boolean', describe: 'd' }], ...echo }],
};
const io: MainIo = { readStdin: async () => '', stdinIsTTY: true, stdoutIsTTY: false, env: {}, log: () => undefined };

const hostile = [
  '--help',
  '-h',
  '--version',
  '-x',
  '--dry-run',
  '--image=evil',
  '007',
  '1e3',
  '0x10',
  '-1',
  '--',
  'help',
  'completion',
  '--get-yargs-completions',
  'run',
  '$0',
  '--no-dry-run',
  '--a.b=1',
  '',
];

t.test('a hostile agent argv after -- reaches the command exactly', async (t) => {
  for (const [spec, head] of [
    [tool, ['run', '--image', 'i']],
    [tool, ['plan']],
    [single, ['--dry-run']],
    [single, []],
  ] as const) {
    const out = await main(spec, [...head, '--', ...hostile], io);
    t.equal(out.exitCode, 0, `${spec.name} ${head.join(' ')}`);
    t.same(JSON.parse(out.output).rest, hostile, `${spec.name} ${head.join(' ')}`);
  }
  const out = JSON.parse((await main(tool, ['run', '--image', 'i', '--', ...hostile], io)).output);
  t.same(out.options, { image: 'i' }, 'and none of it set a flag of the tool');
});

t.test('any argv after -- reaches the command exactly (property, 300 random argvs)', async (t) => {
  const word = fc.oneof(
    fc.constantFrom(...hostile),
    fc.string(),
    fc.string().map((s) => `--${s}`),
    fc.string().map((s) => `-${s}`),
    fc.integer().map(String),
  );
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(word, { maxLength: 8 }), fc.boolean(), async (argv, named) => {
      runs += 1;
      const parsed = await parseArgv(named ? tool : single, [...(named ? ['run'] : []), '--', ...argv]);
      return parsed.kind === 'command' && JSON.stringify(parsed.rest) === JSON.stringify(argv);
    }),
    { numRuns: 300 },
  );
  t.equal(runs, 300);
});

t.test('arguments before -- of a command that takes one are handed on as strings, ahead of the rest', async (t) => {
  const parsed = await parseArgv(tool, ['run', 'exec', '007', '--dry-run', 'fix it', '--', '-u']);
  t.match(parsed, { kind: 'command', rest: ['exec', '007', 'fix it', '-u'], values: { 'dry-run': true } });
});

t.test('before --, a trailing "help" asks for help (yargs); after --, it is the command\'s', async (t) => {
  t.match((await main(tool, ['run', 'help'], io)).output, /^host run \[command\.\.\]/);
  t.same(JSON.parse((await main(tool, ['run', '--', 'help'], io)).output).rest, ['help']);
});

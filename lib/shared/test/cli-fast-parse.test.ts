// The skeleton's fast path parses the common argv without yargs; it must give exactly what yargs
// gives, and hand everything else (help, refusals, unusual shapes) to yargs.
import t from 'tap';
import { fastParse, main, yargsParse, type ToolSpec } from '../dist/index.js';
import { Type } from '../dist/schema.js';

const run = async () => ({ output: { ok: true } });
const tool: ToolSpec = {
  name: 'fixture',
  summary: 'fast-path fixture',
  commands: [
    {
      name: 'go',
      describe: 'flags of every type, takes a command',
      takesCommand: true,
      options: [
        { flag: 'runtime', type: 'string', describe: 's' },
        { flag: 'memory-swap', type: 'string', describe: 's' },
        { flag: 'pids', type: 'number', describe: 'n' },
        { flag: 'json', type: 'boolean', describe: 'b' },
        { flag: 'grace', type: 'number', describe: 'n', default: 3 },
      ],
      run,
    },
    {
      name: 'plan',
      describe: 'input flags',
      input: Type.Object({ path: Type.Optional(Type.String()), mounts: Type.Optional(Type.Array(Type.String())), env: Type.Optional(Type.Array(Type.String())) }),
      flags: [
        { flag: 'path', field: 'path', type: 'string', describe: 'p' },
        { flag: 'mounts', field: 'mounts', type: 'json', describe: 'm' },
        { flag: 'env', field: 'env', type: 'array', describe: 'e' },
      ],
      options: [{ flag: 'dry-run', type: 'boolean', describe: 'd' }],
      run,
    },
  ],
};

/** What main() reads from a parse: the command, each declared flag, the rest. */
function seen(parsed: Record<string, unknown>) {
  const flags = ['runtime', 'memory-swap', 'pids', 'json', 'grace', 'path', 'mounts', 'env', 'dry-run'];
  return {
    _: parsed['_'],
    ...Object.fromEntries(flags.map((f) => [f, parsed[f]])),
    rest: [...((parsed['command'] as unknown[]) ?? []), ...((parsed['--'] as unknown[]) ?? [])],
  };
}

const fastRows: string[][] = [
  ['go'],
  ['go', '--runtime', 'codex'],
  ['go', '--runtime=codex', '--pids', '64', '--json'],
  ['go', '--memory-swap', '12g', '--', 'a', '--b', '-c'],
  ['go', '--pids', '0', '--grace', '7', '--', '--', 'x'],
  ['go', '--json', '--runtime', 'codex', '--'],
  ['go', '--runtime', '123'],
  ['go', '--runtime', 'a=b', '--pids=512'],
  ['plan', '--path', '/tmp/x', '--mounts', '[{"a":1}]', '--dry-run'],
  ['plan', '--mounts={"x":[1,2]}'],
];
const slowRows: string[][] = [
  ['--help'],
  ['go', '--help'],
  ['go', '-h'],
  [],
  ['nope'],
  ['go', 'positional'],
  ['go', '--unknown', 'x'],
  ['go', '--runtime'],
  ['go', '--runtime', ''],
  ['go', '--runtime', '-x'],
  ['go', '--runtime', 'a', '--runtime', 'b'],
  ['go', '--pids', '1e3'],
  ['go', '--pids', '012'],
  ['go', '--pids', 'abc'],
  ['go', '--json', 'true'],
  ['go', '--json=false'],
  ['go', '--no-json'],
  ['go', '-p', '3'],
  ['plan', '--env', 'A'],
  ['plan', '--path.x', 'y'],
];

t.test('the fast path gives exactly what yargs gives for the common argv shapes', async (t) => {
  let rows = 0;
  for (const argv of fastRows) {
    const fast = fastParse(tool, argv);
    t.ok(fast, `fast path takes ${JSON.stringify(argv)}`);
    const slow = await yargsParse(tool, argv);
    t.equal(slow.help, '', 'yargs printed no help');
    t.same(seen(fast!), seen(slow.parsed), `same parse for ${JSON.stringify(argv)}`);
    rows += 1;
  }
  t.equal(rows, fastRows.length, 'every row ran');
});

t.test('help, refusals and unusual argv shapes go to yargs', async (t) => {
  let rows = 0;
  for (const argv of slowRows) {
    t.equal(fastParse(tool, argv), undefined, `yargs parses ${JSON.stringify(argv)}`);
    rows += 1;
  }
  t.equal(rows, slowRows.length, 'every row ran');
  const io = { readStdin: async () => '', stdinIsTTY: true, stdoutIsTTY: false, env: {}, log: () => undefined };
  t.match((await main(tool, ['--help'], io)).output, /fixture: fast-path fixture/, 'help still comes from yargs');
  const unknown = await main(tool, ['go', '--unknown', 'x'], io);
  t.equal(unknown.exitCode, 80, 'an unknown flag is still refused (80)');
  t.match(unknown.output, /Unknown argument/, 'with yargs\' own message');
});

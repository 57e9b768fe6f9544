// Every command's options come from one place: the fields of a schema (the launch request's,
// or the command's own options schema), read by lib/shared/src/options.ts. No command declares
// a flag by hand, so --help, the defaults and the refusals cannot drift from the contract.
import t from 'tap';
import * as optionSchemas from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { LaunchRequestSchema } from '@agent-sandbox/shared/validators/agent-sandbox';
import { flagsOf } from '@agent-sandbox/shared/options';
import { makeTool } from '../../dist/index.js';

const entry = {
  argv: ['node', 'agent-sandbox'],
  writeStdout: () => undefined,
  channel: () => {
    throw new Error('no channel');
  },
  stdout: () => process.stdout,
  stderrIsTTY: false,
};
const schemas = [
  LaunchRequestSchema,
  ...Object.entries(optionSchemas)
    .filter(([name]) => name.endsWith('Schema'))
    .map(([, s]) => s),
] as never[];
const declared = schemas.flatMap((schema) => flagsOf(schema));

t.test("each flag of each command is a schema field's: its type and its --help are the field's", async (t) => {
  let checked = 0;
  for (const command of makeTool(entry as never).commands) {
    for (const option of command.options ?? []) {
      const from = declared.filter((d) => d.flag === option.flag && d.describe === option.describe && d.type === option.type);
      t.ok(from.length > 0, `${command.name} --${option.flag}: declared on a schema field ("${option.describe}")`);
      checked += 1;
    }
  }
  t.ok(checked >= 40, `${checked} command options checked`);
});

t.test("the session commands take exactly the launch request's flags", async (t) => {
  const tool = makeTool(entry as never);
  const launchFlags = flagsOf(LaunchRequestSchema as never).map((f) => f.flag);
  for (const name of ['run', 'exec', 'plan', 'kube'])
    t.same(
      tool.commands.find((c) => c.name === name)?.options?.map((o) => o.flag),
      launchFlags,
      name,
    );
});

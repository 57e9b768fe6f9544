// Property: whatever arrives on stdin, plan answers with one JSON document and an exit code
// from the table, never a stack trace; and the container-side CLI never crashes on its argv.
import t from 'tap';
import fc from 'fast-check';
import { main, toolExitCodes } from '@agent-sandbox/shared';
import { tool } from '../dist/cli.js';
import { containerMain } from '../dist/container-cli.js';

const allowed = new Set([0, ...toolExitCodes]);

t.test('random bytes and JSON values on stdin never crash cred-stage plan', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('utf8')),
        fc.jsonValue().map((v) => JSON.stringify(v)),
      ),
      async (stdin) => {
        const logs: string[] = [];
        const out = await main(tool, ['plan'], {
          readStdin: async () => stdin,
          stdinIsTTY: false,
          stdoutIsTTY: false,
          env: { HOME: '/nonexistent' },
          log: (l) => logs.push(l),
        });
        const doc = JSON.parse(out.output);
        return allowed.has(out.exitCode) && typeof doc.ok === 'boolean' && !logs.join('\n').includes('    at ');
      },
    ),
    { numRuns: 300 },
  );
});

t.test('random argv never crashes the container-side CLI and exits inside the table', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(fc.constantFrom('install', 'runtimes', '--home', '--secrets-dir', '--require', '--help', '/nonexistent'), fc.string()),
        { maxLength: 5 },
      ),
      async (argv) => {
        const out = await containerMain(argv, { HOME: '/nonexistent' });
        return allowed.has(out.exitCode) && !out.log.join('\n').includes('    at ');
      },
    ),
    { numRuns: 300 },
  );
});

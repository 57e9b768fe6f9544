// Property: whatever arrives on stdin, mount-plan answers with one JSON document
// and an exit code from the table, never a stack trace.
import t from 'tap';
import fc from 'fast-check';
import { main, toolExitCodes } from '@agent-sandbox/shared';
import { tool } from '../dist/cli.js';

const allowed = new Set([0, ...toolExitCodes]);

async function answer(stdin: string) {
  const logs: string[] = [];
  const out = await main(tool, [], {
    readStdin: async () => stdin,
    stdinIsTTY: false,
    stdoutIsTTY: false,
    env: {},
    log: (l) => logs.push(l),
  });
  return { ...out, logs };
}

t.test('random bytes and JSON never crash mount-plan and exit inside the table', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('utf8')),
        fc.jsonValue().map((v) => JSON.stringify(v)),
      ),
      async (text) => {
        runs += 1;
        const out = await answer(text);
        const doc = JSON.parse(out.output);
        return allowed.has(out.exitCode) && out.exitCode !== 91 && doc.ok === false && !out.logs.join('\n').includes('    at ');
      },
    ),
    { numRuns: 300 },
  );
  t.equal(runs, 300);
});

t.test('random workspace-shaped documents are refused with 80 or 86, never 91', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.record({ workspace: fc.string(), root: fc.string(), sessionId: fc.string({ maxLength: 70 }) }), async (doc) => {
      runs += 1;
      const out = await answer(JSON.stringify({ ...doc, workspace: `/${doc.workspace}`, root: `/nonexistent-${doc.root}` }));
      return [80, 86].includes(out.exitCode);
    }),
    { numRuns: 200 },
  );
  t.equal(runs, 200);
});

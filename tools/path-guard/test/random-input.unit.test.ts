// Property: whatever bytes arrive on stdin, path-guard answers with one JSON
// document and an exit code from the table, never a stack trace.
import t from 'tap';
import fc from 'fast-check';
import { main, toolExitCodes } from '@agent-sandbox/shared';
import { runBin } from '@agent-sandbox/testkit';
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

t.test('random bytes on stdin never crash path-guard and exit inside the table', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (bytes) => {
      const out = await answer(Buffer.from(bytes).toString('utf8'));
      const doc = JSON.parse(out.output);
      return allowed.has(out.exitCode) && typeof doc.ok === 'boolean' && !out.logs.join('\n').includes('    at ');
    }),
    { numRuns: 400 },
  );
});

t.test('random JSON values are refused with 80 unless they are a valid input', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.jsonValue(), async (value) => {
      const out = await answer(JSON.stringify(value));
      const doc = JSON.parse(out.output);
      if (out.exitCode === 80) return doc.ok === false && /^input/.test(doc.error.message);
      return allowed.has(out.exitCode);
    }),
    { numRuns: 400 },
  );
});

t.test('objects with random extra fields are refused naming the unknown field', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.string({ minLength: 1 }).filter((k) => !['path', 'root', 'create', 'kind', '__proto__'].includes(k)),
      fc.jsonValue(),
      async (key, value) => {
        const out = await answer(JSON.stringify({ path: '/tmp', root: '/tmp', [key]: value }));
        const doc = JSON.parse(out.output);
        return out.exitCode === 80 && doc.error.code === 'unknown-field' && doc.error.message.includes(key);
      },
    ),
    { numRuns: 200 },
  );
});

t.test('wrong types are refused with 80 naming the field', async (t) => {
  for (const [input, field] of [
    [{ path: 1, root: '/tmp' }, 'input.path'],
    [{ path: '/tmp', root: false }, 'input.root'],
    [{ path: '/tmp', root: '/tmp', create: 'yes' }, 'input.create'],
    [{ path: '/tmp', root: '/tmp', kind: 'socket' }, 'input.kind'],
  ] as const) {
    const out = await answer(JSON.stringify(input));
    t.equal(out.exitCode, 80, `${field}: exit 80`);
    t.ok(JSON.parse(out.output).error.message.startsWith(field), `${field}: message names the field`);
  }
});

t.test('the executable itself answers malformed JSON with 80 and no stack trace', async (t) => {
  for (const input of ['{', 'null', '[]', '"x"', '{"path":"/tmp","root":"/tmp","x":1}', '\u0000\u00ff']) {
    const out = await runBin('path-guard', [], { input });
    t.equal(out.exitCode, 80, `input ${JSON.stringify(input)}`);
    t.equal(out.json?.ok, false);
    t.notMatch(out.stderr, /\n\s+at /, 'no stack trace');
  }
});

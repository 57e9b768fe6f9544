// The shared reader: one place decides what malformed input is and how it is named. Checked
// with a real contract's generated validator (sandbox-run's plan: nested objects, arrays, unions).
import t from 'tap';
import fc from 'fast-check';
import { readDocument, validateDocument, ToolError, ExitCode, toErrorDocument } from '../dist/index.js';
import { RuntimeName } from '../dist/validators/agent-sandbox.js';
import { RunPlan } from '../dist/validators/sandbox-run.js';

const limits = { memory: '512m', memorySwap: '512m', pids: 64, cpus: 1, cpuShares: 256 };
const good = { image: 'localhost/x:latest', sessionId: 's1', limits };

function refusal(doc: unknown): ToolError {
  try {
    readDocument(RunPlan, typeof doc === 'string' ? doc : JSON.stringify(doc));
  } catch (err) {
    if (err instanceof ToolError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(doc)}`);
}

t.test('a conforming document comes back as it went in', async (t) => {
  t.same(readDocument(RunPlan, JSON.stringify(good)), good);
});

t.test('malformed JSON is a usage error', async (t) => {
  const err = refusal('{"image":');
  t.equal(err.exitCode, ExitCode.usage);
  t.equal(err.code, 'malformed-json');
});

t.test('an unknown nested field is named with its full path', async (t) => {
  const err = refusal({ ...good, limits: { ...limits, swappiness: 0 } });
  t.equal(err.exitCode, ExitCode.usage);
  t.equal(err.code, 'unknown-field');
  t.equal(err.message, 'input.limits.swappiness: unknown field');
  t.same(err.detail, { field: 'input.limits.swappiness' });
});

t.test('a wrong type names the field, what was expected and what arrived', async (t) => {
  const err = refusal({ ...good, env: ['HOME', 3] });
  t.equal(err.code, 'invalid-field');
  t.equal(err.message, 'input.env[1]: must be string, got number 3');
});

t.test('a missing field is named', async (t) => {
  const err = refusal({ image: 'x', sessionId: 's1' });
  t.equal(err.code, 'missing-field');
  t.equal(err.message, 'input.limits: required field is missing');
});

t.test('a bound is named with the value that broke it', async (t) => {
  t.equal(refusal({ ...good, limits: { ...limits, pids: 0 } }).message, 'input.limits.pids: must be >= 1, got number 0');
  t.match(
    refusal({ ...good, mounts: [{ source: 'rel', destination: '/w', readOnly: true }] }).message,
    /^input\.mounts\[0\]\.source: must match pattern "\^\/", got string "rel"$/,
  );
});

t.test("a union names its alternatives; the root name is the caller's (a flag here)", async (t) => {
  t.throws(() => validateDocument(RuntimeName, 'nope', '--runtime'), {
    code: 'invalid-field',
    message: '--runtime: must be one of "codex", "claude", "cursor-agent", got string "nope"',
  });
  t.equal(
    refusal({ ...good, limits: { ...limits, memory: true } }).message,
    'input.limits.memory: must be string or be integer, got boolean true',
  );
  t.match(
    refusal({ ...good, limits: { ...limits, memory: 'lots' } }).message,
    /^input\.limits\.memory: must match pattern ".+" or be integer, got string "lots"$/,
  );
});

t.test('any byte string either parses to a valid document or is refused with 80 naming input', async (t) => {
  fc.assert(
    fc.property(fc.string(), (text) => {
      try {
        readDocument(RunPlan, text);
        return true;
      } catch (err) {
        return err instanceof ToolError && err.exitCode === 80 && (err.message.startsWith('input') || err.code === 'malformed-json');
      }
    }),
    { numRuns: 1000 },
  );
});

t.test('an unexpected throw becomes internal (91) without a stack in the document', async (t) => {
  const { document, exitCode } = toErrorDocument(new TypeError('boom'));
  t.equal(exitCode, 91);
  t.equal(document.error.code, 'internal');
  t.notMatch(JSON.stringify(document), /at .*\.js/);
});

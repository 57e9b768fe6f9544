// The shared reader: one place decides what malformed input is and how it is named.
import t from 'tap';
import fc from 'fast-check';
import { readDocument, ToolError, ExitCode, toErrorDocument } from '../dist/index.js';
import { Closed, Type } from '../dist/schema.js';

const Schema = Closed({
  name: Type.String(),
  limits: Type.Optional(Closed({ memory: Type.Integer({ minimum: 1 }) })),
  tags: Type.Optional(Type.Array(Type.String())),
});

function refusal(text: string): ToolError {
  try {
    readDocument(Schema, text);
  } catch (err) {
    if (err instanceof ToolError) return err;
    throw err;
  }
  throw new Error(`accepted: ${text}`);
}

t.test('malformed JSON is a usage error', async (t) => {
  const err = refusal('{"name":');
  t.equal(err.exitCode, ExitCode.usage);
  t.equal(err.code, 'malformed-json');
});

t.test('an unknown nested field is named with its full path', async (t) => {
  const err = refusal('{"name":"a","limits":{"memory":1,"swap":2}}');
  t.equal(err.code, 'unknown-field');
  t.equal(err.message, 'input.limits.swap: unknown field');
});

t.test('a wrong type names the field, what was expected and what arrived', async (t) => {
  const err = refusal('{"name":"a","tags":["x",3]}');
  t.equal(err.code, 'invalid-field');
  t.match(err.message, /^input\.tags\[1\]: expected string, got number$/);
});

t.test('a missing field is named', async (t) => {
  t.equal(refusal('{}').message, 'input.name: required field is missing');
});

t.test('a non-integer limit is refused', async (t) => {
  t.match(refusal('{"name":"a","limits":{"memory":0}}').message, /^input\.limits\.memory: /);
});

t.test('any byte string either parses to a valid document or is refused with 80', async (t) => {
  fc.assert(
    fc.property(fc.string(), (text) => {
      try {
        readDocument(Schema, text);
        return true;
      } catch (err) {
        return err instanceof ToolError && err.exitCode === 80 && err.message.startsWith('input') || (err as ToolError).code === 'malformed-json';
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

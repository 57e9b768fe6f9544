// The contract schemas shell and Python callers validate against (schemas/*.json, generated from
// lib/shared/src/schemas/) refuse what they do not know: every object in them is closed, so an
// unknown field is an error at any depth (issue 26's "unknown input is refused, 80"), and each
// compiles under ajv's strict mode (told of the option layer's annotations, lib/shared/src/options.ts),
// so no keyword is silently ignored by a caller's validator.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import Ajv from 'ajv';
import { optionAnnotations } from '../../dist/options.js';
import { fileURLToPath } from 'node:url';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../schemas');
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
// Objects open on purpose: the error document's `error` carries tool-specific fields beside code
// and message (docs/design.md: "a failure still prints JSON").
const openOnPurpose = new Set(['error.json#/properties/error']);

/** Every object schema in a document, with its JSON pointer. */
function objectsOf(node: unknown, pointer: string, found: { pointer: string; schema: Record<string, unknown> }[] = []) {
  if (Array.isArray(node)) node.forEach((n, i) => objectsOf(n, `${pointer}/${i}`, found));
  else if (node && typeof node === 'object') {
    const schema = node as Record<string, unknown>;
    if (schema['type'] === 'object' && schema['properties']) found.push({ pointer, schema });
    for (const [key, value] of Object.entries(schema)) objectsOf(value, `${pointer}/${key}`, found);
  }
  return found;
}

t.test('every contract schema is there: one file per $id, named after it', async (t) => {
  t.ok(files.length >= 30, `${files.length} schema files`);
  for (const file of files) t.equal(`${JSON.parse(readFileSync(path.join(dir, file), 'utf8')).$id}.json`, file, file);
});

t.test('every object in every contract is closed: an unknown field is refused at any depth', async (t) => {
  let objects = 0;
  for (const file of files) {
    const doc = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
    for (const { pointer, schema } of objectsOf(doc, '#')) {
      objects += 1;
      if (openOnPurpose.has(`${file}${pointer}`)) continue;
      t.equal(schema['additionalProperties'], false, `${file}${pointer} is closed`);
    }
  }
  t.ok(objects > 100, `${objects} objects checked`);
});

t.test('each compiles under strict ajv, and refuses an unknown top-level field', async (t) => {
  for (const file of files) {
    const doc = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
    const { $schema: _drop, ...schema } = doc;
    const ajv = new Ajv({ strict: true, allErrors: true });
    // The option layer's annotations (which flag fills a field, ...): known to the callers' validators as annotations.
    ajv.addVocabulary([...optionAnnotations]);
    const validate = ajv.compile(schema);
    if (schema.type === 'object') {
      t.notOk(validate({ surely: 'not a field' }), `${file}: a document with an unknown field is not valid`);
    } else t.pass(`${file} compiles`);
  }
});

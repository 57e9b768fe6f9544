#!/usr/bin/env node
// Writes every contract schema (lib/shared/src/schemas/*.ts, built) to schemas/<$id>.json,
// so shell and Python callers can validate without TypeScript. Derived, never hand-written.
import { readdir, writeFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const built = path.join(root, 'lib/shared/dist/schemas');
const out = path.join(root, 'schemas');
await mkdir(out, { recursive: true });

const shared = await import(path.join(root, 'lib/shared/dist/schema.js'));
const modules = [shared];
for (const file of (await readdir(built)).filter((f) => f.endsWith('.js')).sort()) {
  modules.push(await import(path.join(built, file)));
}
let written = 0;
for (const mod of modules) {
  for (const value of Object.values(mod)) {
    if (value && typeof value === 'object' && typeof value.$id === 'string') {
      const doc = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...JSON.parse(JSON.stringify(value)) };
      await writeFile(path.join(out, `${value.$id}.json`), `${JSON.stringify(doc, null, 2)}\n`);
      written += 1;
    }
  }
}
if (written === 0) throw new Error('no schemas with $id found: was lib/shared built?');

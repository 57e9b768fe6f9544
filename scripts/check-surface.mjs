#!/usr/bin/env node
// Each tool's public surface is its src/index.ts alone: its package.json exports "." and nothing
// else (no "./*" that would make every module public), and no code or test of another package
// imports one of its modules by path (@agent-sandbox/<tool>/<module>). Checked in CI (pnpm
// check); prints every offender and exits 1 if any.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tools = readdirSync(path.join(repo, 'tools')).filter((t) => existsSync(path.join(repo, 'tools', t, 'package.json')));
const problems = [];

for (const tool of tools) {
  const { exports } = JSON.parse(readFileSync(path.join(repo, 'tools', tool, 'package.json'), 'utf8'));
  if (JSON.stringify(exports) !== JSON.stringify({ '.': './dist/index.js' })) {
    problems.push(
      `tools/${tool}/package.json: exports must be {".": "./dist/index.js"} (its index.ts is its public surface), got ${JSON.stringify(exports)}`,
    );
  }
}

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    if (['node_modules', 'dist', 'build'].includes(name)) continue;
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) yield* sources(file);
    else if (/\.(ts|cts|mts|mjs|js)$/.test(name) && !name.endsWith('.d.ts')) yield file;
  }
}

const deep = new RegExp(`['"]@agent-sandbox/(${tools.join('|')})/[^'"]+['"]`, 'g');
for (const root of ['lib', 'tools', 'test', 'scripts']) {
  for (const file of sources(path.join(repo, root))) {
    for (const match of readFileSync(file, 'utf8').matchAll(deep)) {
      problems.push(`${path.relative(repo, file)}: imports ${match[0]}; import it from @agent-sandbox/${match[1]} (its index.ts)`);
    }
  }
}

for (const p of problems) console.error(`check-surface: ${p}`);
if (problems.length > 0) process.exit(1);
console.error(`check-surface: each of the ${tools.length} tools is reached through its index.ts alone`);

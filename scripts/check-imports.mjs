#!/usr/bin/env node
// Imports run one way: a package that declares `"layers"` in its package.json lists the
// top-level entries of its src/ (a folder, or a file at the root of src/) from the top (the
// entries and commands) to the bottom (what everything else uses). A module may import from its
// own entry (its folder, or itself) and from any entry in a LOWER layer; an import of a higher
// layer, or of a sibling in the same layer, is refused. Every import counts: static, `import
// type`, `export ... from` and `import()`. Every entry of src/ must be in a layer, so a new
// folder has to say where it stands (that the package's only export is src/index.ts is
// check-surface.mjs's rule). Prints every offence; exits 1 if any.
//
//   node scripts/check-imports.mjs [REPO]   (default: this repository)
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const repo = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));

/** Every .ts file under dir (recursively), relative to dir. */
function sources(dir, prefix = '') {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) out.push(...sources(file, `${prefix}${name}/`));
    else if (/\.(ts|cts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(`${prefix}${name}`);
  }
  return out;
}

/** The relative module specifiers a file imports, each with its line. */
function importsOf(file) {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = [];
  const note = (node, spec) => found.push({ spec, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 });
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      note(node, node.moduleSpecifier.text);
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    )
      note(node, node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((i) => i.spec.startsWith('.'));
}

/** A module's entry: the first component of its path under src/ (a folder, or a root file). */
const entryOf = (rel) => rel.split('/')[0];

/** Checks one package; returns its offences. */
function checkPackage(dir) {
  const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (!Array.isArray(pkg.layers)) return [];
  const name = path.relative(repo, dir);
  const problems = [];
  const rank = new Map();
  pkg.layers.forEach((layer, i) => {
    for (const entry of layer) {
      if (rank.has(entry)) problems.push(`${name}/package.json: "${entry}" is in two layers`);
      rank.set(entry, i);
    }
  });
  const src = path.join(dir, 'src');
  for (const entry of readdirSync(src)) {
    if (!rank.has(entry)) problems.push(`${name}/src/${entry}: in no layer of package.json "layers" (say where it stands)`);
  }
  for (const rel of sources(src)) {
    const from = entryOf(rel);
    for (const { spec, line } of importsOf(path.join(src, rel))) {
      const target = path.relative(src, path.resolve(path.dirname(path.join(src, rel)), spec)).replace(/\.js$/, '.ts');
      if (target.startsWith('..')) {
        problems.push(`${name}/src/${rel}:${line}: imports ${spec}, outside src/ (use the package's name)`);
        continue;
      }
      const to = entryOf(target);
      if (to === from || !rank.has(from) || !rank.has(to)) continue;
      const [a, b] = [rank.get(from), rank.get(to)];
      if (b > a) continue;
      const why = b === a ? `a sibling in the same layer (${pkg.layers[a].join(', ')})` : `a higher layer (${to} is above ${from})`;
      problems.push(`${name}/src/${rel}:${line}: imports ${spec}: ${why}; imports run ${pkg.layers.map((l) => l.join(' ')).join(' > ')}`);
    }
  }
  return problems;
}

const packages = ['lib', 'tools'].flatMap((group) => {
  const base = path.join(repo, group);
  return existsSync(base)
    ? readdirSync(base)
        .map((n) => path.join(base, n))
        .filter((d) => existsSync(path.join(d, 'package.json')) && existsSync(path.join(d, 'src')))
    : [];
});
const problems = packages.flatMap(checkPackage);
for (const p of problems) console.error(`check-imports: ${p}`);
if (problems.length > 0) {
  console.error(`check-imports: ${problems.length} import(s) against the direction`);
  process.exit(1);
}
const layered = packages
  .filter((d) => Array.isArray(JSON.parse(readFileSync(path.join(d, 'package.json'), 'utf8')).layers))
  .map((d) => path.relative(repo, d));
console.error(`check-imports: imports run one way in ${layered.join(', ') || 'no package'}`);

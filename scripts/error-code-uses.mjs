// Which error codes each tool's executables can answer with, read from the code with TypeScript's
// own checker (for scripts/write-docs.mjs): the modules reachable from tools/<name>/src/cli.ts and
// src/*-entry.ts (following the workspace's packages into their src/), and in them every string literal in a
// code's place: the code of `new ToolError(exit, code, ...)`, a `code:` property, or anything the
// checker types as error codes only (a helper's `CodeOf<'credential'>` parameter). The exit is the
// ToolError's own, or the one CodeOf names, or, for a code with one exit, that one.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** The source file an import names, or undefined (node builtins, packages outside the workspace, generated validators). */
function resolveImport(repo, from, spec) {
  if (spec.startsWith('.')) return path.resolve(path.dirname(from), spec).replace(/\.c?js$/, (ext) => (ext === '.cjs' ? '.cts' : '.ts'));
  const match = /^@agent-sandbox\/([^/]+)(?:\/(.+))?$/.exec(spec);
  if (!match) return undefined;
  const dir = ['shared', 'testkit'].includes(match[1]) ? path.join(repo, 'lib', match[1]) : path.join(repo, 'tools', match[1]);
  const file = path.join(dir, 'src', `${match[2] ?? 'index'}.ts`);
  return existsSync(file) ? file : existsSync(file.replace(/\.ts$/, '.cts')) ? file.replace(/\.ts$/, '.cts') : undefined;
}

/** Every module reachable from `entry` by import, export-from and import(). */
function reachable(repo, entry) {
  const seen = new Set();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop();
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      const spec =
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)
          ? node.moduleSpecifier.text
          : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && ts.isStringLiteral(node.arguments[0] ?? {})
            ? node.arguments[0].text
            : undefined;
      const target = spec === undefined ? undefined : resolveImport(repo, file, spec);
      if (target) todo.push(target);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return seen;
}

/** The literal members of a (contextual) type, or undefined when it is not a union of string literals. */
function literals(checker, type) {
  if (!type) return undefined;
  const t = type.flags & ts.TypeFlags.TypeParameter ? checker.getBaseConstraintOfType(type) : type;
  const members = t?.isUnion() ? t.types : t ? [t] : [];
  return members.length > 0 && members.every((m) => m.isStringLiteral()) ? members.map((m) => m.value) : undefined;
}

/** The exit a code literal is raised with where the code says it, else undefined. */
function exitAt(checker, node) {
  const parent = node.parent;
  if (ts.isNewExpression(parent) && parent.expression.getText() === 'ToolError' && parent.arguments?.[1] === node) {
    const exit = parent.arguments[0];
    return ts.isStringLiteral(exit) ? [exit.text] : literals(checker, checker.getTypeAtLocation(exit));
  }
  const type = checker.getContextualType(node);
  if (type?.aliasSymbol?.name === 'CodeOf') return literals(checker, type.aliasTypeArguments?.[0]);
  if (ts.isPropertyAssignment(parent) && parent.name.getText() === 'code' && ts.isObjectLiteralExpression(parent.parent)) {
    const exit = parent.parent.properties.find((p) => ts.isPropertyAssignment(p) && p.name.getText() === 'exit');
    return exit && ts.isStringLiteral(exit.initializer) ? [exit.initializer.text] : undefined;
  }
  return undefined;
}

/** True when the literal stands where a code goes. */
function inCodePlace(checker, node, codes) {
  const parent = node.parent;
  if (ts.isNewExpression(parent) && parent.expression.getText() === 'ToolError') return parent.arguments?.[1] === node;
  if (ts.isPropertyAssignment(parent) && parent.name.getText() === 'code' && parent.initializer === node) return true;
  // A contextual type of codes only: a helper's CodeOf<...> or ErrorCode, or a union of codes
  // (one literal alone may be a discriminant narrowed to a word that is also a code).
  const type = checker.getContextualType(node);
  const expected = literals(checker, type);
  const named = ['CodeOf', 'ErrorCode'].includes(type?.aliasSymbol?.name);
  return expected !== undefined && (named || expected.length > 1) && expected.every((c) => codes.has(c));
}

/** A tool's executables: src/cli.ts, and the bundles' entries (src/*-entry.ts: cred-stage's container side, egress-relay). */
function entries(repo, tool) {
  const src = path.join(repo, 'tools', tool, 'src');
  return [
    path.join(src, 'cli.ts'),
    ...readdirSync(src)
      .filter((f) => f.endsWith('-entry.ts'))
      .map((f) => path.join(src, f)),
  ];
}

/**
 * Per tool: the (code, exit) pairs its executable can answer with. `table` maps each code to
 * its exits.
 */
export function errorCodeUses(repo, tools, table) {
  const codes = new Set(Object.keys(table));
  const files = new Map(tools.map((tool) => [tool, new Set(entries(repo, tool).flatMap((entry) => [...reachable(repo, entry)]))]));
  const all = [...new Set([...files.values()].flatMap((set) => [...set]))];
  const program = ts.createProgram(all, {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const byFile = new Map();
  for (const file of all) {
    const pairs = new Set();
    const visit = (node) => {
      if (
        (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) &&
        codes.has(node.text) &&
        inCodePlace(checker, node, codes)
      ) {
        const exits = exitAt(checker, node)?.filter((e) => e in table[node.text]) ?? [];
        for (const exit of exits.length > 0 ? exits : Object.keys(table[node.text])) pairs.add(`${node.text} ${exit}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(program.getSourceFile(file));
    byFile.set(file, pairs);
  }
  return Object.fromEntries(
    tools.map((tool) => [
      tool,
      [...new Set([...files.get(tool)].flatMap((f) => [...byFile.get(f)]))]
        .map((p) => p.split(' '))
        .map(([code, exit]) => ({ code, exit })),
    ]),
  );
}

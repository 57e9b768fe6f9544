// An agent CLI anywhere above the hatch makes it refuse (90), with a clean
// environment (no marker variables), under a real PTY in a host-like root. The
// ancestors are real processes: a program named like the agent CLI, and node
// running a script at the agent's npm package path.
import t from 'tap';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { makeHatchEnv, ranLines, runInHostLikeRoot, binDir } from './fixtures/hatch-env.js';
import { needs } from '@agent-sandbox/testkit';

// The host-like root is made with unshare and chroot: root only, reported as a skip elsewhere.
const hostLike = needs({ root: true, commands: ['unshare', 'chroot'] });

/** The hatch is started two levels below the pretend agent: agent -> sh -> cdx-unsafe. */
const hatchCommand = `/bin/sh -c '${binDir}/cdx-unsafe; exit $?'`;

const rows: { claim: string; make(dir: string): Promise<string>; evidence: RegExp }[] = [
  ...['codex', 'claude', 'cursor-agent', 'agent'].map((name) => ({
    claim: `an executable named ${name}`,
    make: async (dir: string) => {
      const file = `${dir}/bin/${name}`;
      await writeFile(file, `#!/bin/sh\n${hatchCommand}\n`);
      await chmod(file, 0o755);
      return file;
    },
    evidence: new RegExp(`ancestor pid \\d+ ${name} `),
  })),
  ...[
    ['node running @anthropic-ai/claude-code/cli.js', 'node_modules/@anthropic-ai/claude-code/cli.js'],
    ['node running @openai/codex/bin/codex.js', 'node_modules/@openai/codex/bin/codex.js'],
  ].map(([claim, script]) => ({
    claim: claim as string,
    make: async (dir: string) => {
      const file = `${dir}/${script}`;
      await mkdir(file.slice(0, file.lastIndexOf('/')), { recursive: true });
      const spawn = `require('child_process').spawnSync('/bin/sh', ['-c', ${JSON.stringify(hatchCommand)}], { stdio: 'inherit' })`;
      await writeFile(file, `process.exitCode = ${spawn}.status ?? 1;\n`);
      return `node ${file}`;
    },
    evidence: /ancestor pid \d+ node \(node /,
  })),
];

let ran = 0;
for (const row of rows) {
  t.test(`${row.claim} as an ancestor refuses the hatch; the agent never runs`, hostLike, async (t) => {
    ran += 1;
    const hatch = await makeHatchEnv(t);
    await mkdir(`${hatch.dir}/bin`);
    const ancestor = await row.make(hatch.dir);
    const result = await runInHostLikeRoot(t, ancestor, hatch);
    t.equal(result.exitCode, 90, 'exit 90', { output: result.output });
    t.equal(result.refusal?.error?.code, 'agent-ancestor');
    t.same(
      result.refusal?.error?.reasons?.map((r: any) => r.code),
      ['agent-ancestor'],
      'the ancestor is the only reason',
    );
    t.match(result.refusal?.error?.reasons?.[0]?.evidence, row.evidence);
    t.same(await ranLines(hatch), [], 'the stub agent never ran');
  });
}
t.test('every row ran', hostLike, async (t) => t.equal(ran, rows.length));

t.test('an ordinary shell ancestry does not refuse (control)', hostLike, async (t) => {
  const hatch = await makeHatchEnv(t);
  const result = await runInHostLikeRoot(t, hatchCommand, hatch);
  t.equal(result.exitCode, 0, 'exit 0', { output: result.output });
  t.same(await ranLines(hatch), ['codex ']);
});

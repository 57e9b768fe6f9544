// Nothing turns the hatch's checks off, and nothing else leads to it: no flag,
// no variable, no other package. (The containerized path's side of "no
// fallback" is agent-sandbox's to prove; this proves no code path reaches here.)
import t from 'tap';
import fc from 'fast-check';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot, runBin } from '@agent-sandbox/testkit';
import { fakeHost, policyRefusals } from '../dist/index.js';

t.test('without a TTY, no environment at all opens the hatch (property, 500 random environments)', async (t) => {
  let runs = 0;
  fc.assert(
    fc.property(
      fc.dictionary(fc.string({ minLength: 1, maxLength: 30 }), fc.string()),
      fc.constantFrom([false, false], [false, true], [true, false]),
      (env, [stdinIsTTY, stdoutIsTTY]) => {
        runs += 1;
        const reasons = policyRefusals({ stdinIsTTY: stdinIsTTY!, stdoutIsTTY: stdoutIsTTY!, env, host: fakeHost({}), parentPid: 0 });
        return reasons.some((r) => r.code === 'no-tty');
      },
    ),
    { numRuns: 500 },
  );
  t.equal(runs, 500);
});

t.test('--help offers no option that skips a check', async (t) => {
  const help = await runBin('agent-unsafe', ['codex', '--help']);
  t.equal(help.exitCode, 0);
  const options = [...help.stdout.matchAll(/^\s+(?:-h, )?(--[a-z-]+)/gm)].map((m) => m[1]);
  t.same(options.sort(), ['--address-space', '--dry-run', '--help', '--memory', '--tasks', '--version'].sort());
});

t.test('an unknown flag such as --force is refused (80), not ignored', async (t) => {
  const result = await runBin('agent-unsafe', ['codex', '--force']);
  t.equal(result.exitCode, 80);
  t.equal(result.json?.error?.code, 'bad-flag');
});

t.test('no other package depends on or imports agent-unsafe', async (t) => {
  const offenders: string[] = [];
  let scanned = 0;
  for (const dir of ['tools', 'lib']) {
    for (const pkg of await readdir(path.join(repoRoot, dir))) {
      if (pkg === 'agent-unsafe') continue;
      const root = path.join(repoRoot, dir, pkg);
      const manifest = await readFile(path.join(root, 'package.json'), 'utf8').catch(() => '');
      if (manifest.includes('@agent-sandbox/agent-unsafe')) offenders.push(`${dir}/${pkg}/package.json`);
      const files = await readdir(path.join(root, 'src'), { recursive: true }).catch(() => [] as string[]);
      for (const file of files.filter((f) => /\.(ts|js|mjs|sh)$/.test(String(f)))) {
        scanned += 1;
        const text = await readFile(path.join(root, 'src', String(file)), 'utf8');
        if (/@agent-sandbox\/agent-unsafe|tools\/agent-unsafe\/|bin\/(cdx|cld|ca|agent)-unsafe/.test(text))
          offenders.push(`${dir}/${pkg}/src/${file}`);
      }
    }
  }
  t.ok(scanned > 0, `scanned ${scanned} source files`);
  t.same(offenders, []);
});

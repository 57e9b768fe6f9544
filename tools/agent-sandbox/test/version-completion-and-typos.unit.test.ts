// The design card's CLI, through the real executables: --version prints the package's version,
// a typo of a command is refused (80) with the command it resembles, and `completion` prints a
// bash script that completes commands and flags when bash runs it (tools with commands).
import t from 'tap';
import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { binPath, repoRoot, runBin } from '@agent-sandbox/testkit';

const tools = ['agent-sandbox', 'sandbox-run', 'path-guard', 'egress-proxy'];
const withCommands = ['agent-sandbox', 'egress-proxy'];

t.test('--version prints the version in the package.json beside the bin', async (t) => {
  for (const tool of tools) {
    const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'tools', tool, 'package.json'), 'utf8')) as { version: string };
    const out = await runBin(tool, ['--version']);
    t.same({ exitCode: out.exitCode, stdout: out.stdout }, { exitCode: 0, stdout: `${version}\n` }, tool);
  }
  t.equal(tools.length, 4, 'every tool ran');
});

t.test('a typo of a command is refused with 80 and the command it resembles', async (t) => {
  const out = await runBin('agent-sandbox', ['rnu', '--runtime', 'codex']);
  t.equal(out.exitCode, 80);
  t.match(out.json, { ok: false, error: { code: 'bad-flag', message: /^unknown command "rnu": Did you mean run\?/ } });
  t.match(out.stderr, /agent-sandbox: unknown command "rnu": Did you mean run\?/);
  const egress = await runBin('egress-proxy', ['chekc', '--target', 'x']);
  t.match(egress.json?.error?.message, /Did you mean check\?/);
});

/** What bash offers at <Tab> after `words`, with the tool's completion script loaded and the bins on PATH. */
async function complete(tool: string, words: string[]): Promise<string[]> {
  const script = [
    'set -e',
    `source <(${tool} completion)`,
    `COMP_WORDS=(${[tool, ...words].map((w) => `'${w}'`).join(' ')})`,
    `COMP_CWORD=${words.length}`,
    `_${tool}_yargs_completions`,
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const bins = withCommands.map((name) => path.dirname(binPath(name))).join(':');
  const out = await execa('bash', ['-c', script], {
    env: { PATH: `${bins}:${process.env['PATH']}` },
    stdin: 'ignore',
    reject: false,
    timeout: 60_000,
  });
  if (out.exitCode !== 0) throw new Error(`bash: ${out.stderr}`);
  return out.stdout.split('\n').filter(Boolean);
}

t.test('the completion script completes commands and flags in bash', async (t) => {
  t.same((await complete('agent-sandbox', ['r'])).sort(), ['receive', 'run']);
  t.ok((await complete('agent-sandbox', [''])).includes('workspace'), 'every command is offered');
  t.same(await complete('agent-sandbox', ['run', '--runt']), ['--runtime']);
  t.same(await complete('egress-proxy', ['check', '--all']), ['--allow'], 'another tool with commands');
});

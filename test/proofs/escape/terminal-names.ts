// Names an agent chooses so that printing them drives the user's terminal (issue 29): files,
// directories, nested repositories and refs named with ESC, BEL, C1 controls (as UTF-8 and as a
// lone byte) and bytes that are not UTF-8, and a link planted at a credential directory whose
// target carries the same. The agent prints nothing itself (its output goes to /dev/null), so
// every byte on the launcher's stderr is the launcher's; it is captured as bytes, not decoded.
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { binPath, type Teardown } from '@agent-sandbox/testkit';
import { addWorkspace, chownAgent, launcherEnv, ledgerLines, sessionFlags, sessionRoot } from './session-kit.js';

/** printf formats (octal escapes) of the names the agent makes; the test finds their bytes on disk. */
export const hostileNames = {
  nested: 'n\\033]0;TITLE-SET-BY-AGENT\\007\\033[2K\\033[1Afake',
  nestedC1: 'c1-\\302\\233-31m',
  nestedRawC1: 'raw-\\233-2J',
  nestedBad: 'bad-\\377\\376-utf8',
  dir: 'dir-\\033[31m-\\302\\205',
  file: 'file-\\007-\\033]52;c;cHduZWQ=\\007',
  ref: 'ref-\\033[2K\\007',
  refBad: 'ref-\\377-x',
  branch: 'br-\\302\\233-1A',
  linkTarget: '/x/\\033]0;link\\007',
};

function script(wsInside: string): string {
  const n = hostileNames;
  return [
    '#!/bin/sh',
    'exec >/dev/null 2>&1',
    `cd '${wsInside}' || exit 3`,
    ...[n.nested, n.nestedC1, n.nestedRawC1, n.nestedBad].map((f) => `git init -q "$(printf '${f}')"`),
    `mkdir -- "$(printf '${n.dir}')"`,
    `: > "$(printf '${n.file}')"`,
    // Past git's own checks (it refuses controls in ref names), as a file; then a name git allows.
    `git rev-parse HEAD > ".git/refs/heads/$(printf '${n.ref}')"`,
    `git rev-parse HEAD > ".git/refs/heads/$(printf '${n.refBad}')"`,
    // A FIFO where a ref should be: reading it would wait for a writer that never comes.
    'mkfifo .git/refs/heads/fifo-ref',
    `git branch "$(printf '${n.branch}')"`,
    // The refs stay in the session's own git store (issue 23): the names as they are there, in hex, for the test's control.
    'for f in .git/refs/heads/*; do printf %s "${f##*/}" | od -An -tx1 | tr -d " \\n"; echo; done > .astest/refs-inside',
    `rm -rf "$HOME/.codex"; ln -s "$(printf '${n.linkTarget}')" "$HOME/.codex"`,
    'exit 0',
    '',
  ].join('\n');
}

/** The name printf makes of a format, as bytes (the test's own reading of the escapes). */
export function bytesOf(format: string): Buffer {
  return Buffer.from(
    format.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))),
    'latin1',
  );
}

export interface NamesOutcome {
  exitCode: number;
  stderr: Buffer;
  /** Raw names in the workspace's top directory, and in .git/refs/heads as the session saw it (its own store). */
  onDisk: Buffer[];
  refsOnDisk: Buffer[];
  line: Record<string, any> | undefined;
  ledger: Buffer;
}

/** A plain repository workspace, the naming session through the launcher, its stderr as bytes. */
export async function namesSession(t: Teardown): Promise<NamesOutcome> {
  const r = await sessionRoot(t, 'names');
  const gitEnv = {
    PATH: '/usr/bin:/bin',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'h',
    GIT_AUTHOR_EMAIL: 'h@example.invalid',
    GIT_COMMITTER_NAME: 'h',
    GIT_COMMITTER_EMAIL: 'h@example.invalid',
  };
  const ws = await addWorkspace(t, r, 'names', {}, async (dir) => {
    await execa('git', ['init', '-q', '-b', 'main', dir], { env: gitEnv, extendEnv: false });
    await execa('git', ['commit', '-q', '--allow-empty', '-m', 'initial'], { cwd: dir, env: gitEnv, extendEnv: false });
  });
  await writeFile(path.join(ws.path, '.astest', 'names.sh'), script(ws.inside), { mode: 0o755 });
  await chownAgent(ws.path);
  const out = await execa(binPath('agent-sandbox'), ['run', ...sessionFlags(r, ws), '--agent-bin', `${ws.inside}/.astest/names.sh`, '--'], {
    env: launcherEnv(r),
    extendEnv: false,
    reject: false,
    timeout: 180_000,
    stdin: 'ignore',
    encoding: 'buffer',
  });
  return {
    exitCode: out.exitCode ?? -1,
    stderr: Buffer.from(out.stderr as Uint8Array),
    onDisk: readdirSync(ws.path, { encoding: 'buffer' }),
    refsOnDisk: readFileSync(path.join(ws.path, '.astest', 'refs-inside'), 'latin1')
      .split('\n')
      .filter(Boolean)
      .map((hex) => Buffer.from(hex, 'hex')),
    line: ledgerLines(ws)[0],
    ledger: readFileSync(ws.ledger),
  };
}

/** What in `bytes` a terminal would act on: ESC, BEL, any C0 but newline, DEL, C1 as UTF-8, and bytes that are not UTF-8. */
export function rawControls(bytes: Buffer): string[] {
  const found: string[] = [];
  for (const b of bytes) if ((b < 0x20 && b !== 0x0a) || b === 0x7f) found.push(`byte 0x${b.toString(16)}`);
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) found.push('bytes that are not UTF-8 (a lone C1 byte among them)');
  for (const ch of text) if (ch.codePointAt(0)! >= 0x80 && ch.codePointAt(0)! <= 0x9f) found.push(`U+${ch.codePointAt(0)!.toString(16)}`);
  return found;
}

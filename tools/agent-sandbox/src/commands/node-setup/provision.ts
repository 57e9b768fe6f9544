/**
 * `agent-sandbox node-setup --user NAME --key FILE`: provisions a dispatch node, as root. The
 * user (made when missing, with a login shell: sshd runs the forced command through it), the
 * permitted root (<home>/sandbox/workspaces, owned by the user), linger (a user manager that
 * outlives logins: the NoNewPrivs handoff needs it for rootless sessions), and the dispatch
 * key's line in authorized_keys, restricted to the receiver:
 *   restrict,command="<agent-sandbox> receive --root <root>" ssh-ed25519 AAAA... comment
 * Safe to run again: each step says whether it did something or found it done. A key already
 * in the file without that restriction is replaced by the restricted line.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ToolError } from '@agent-sandbox/shared';
import { absoluteRoot } from '../../workspace/layout.js';
import { systemPath } from '@agent-sandbox/shared/podman';

export interface NodeSetupInput {
  user: string;
  /** A public key file (ssh-keygen's .pub), or the key's text. */
  key: string;
  bin: string;
  root?: string;
  authorizedKeys?: string;
  machineIdFile?: string;
}

export interface NodeSetupStep {
  step: 'user' | 'root' | 'linger' | 'subuids' | 'key';
  done: boolean;
  changed: boolean;
  detail: string;
}

export interface NodeSetupOutput {
  ok: true;
  user: string;
  home: string;
  root: string;
  authorizedKeys: string;
  line: string;
  steps: NodeSetupStep[];
}

const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { env: { PATH: systemPath }, encoding: 'utf8', timeout: 60_000 });

function passwdOf(user: string): { uid: number; gid: number; home: string; shell: string } | undefined {
  const out = run('getent', ['passwd', user]);
  if (out.status !== 0) return undefined;
  const [, , uid, gid, , home, shell] = out.stdout.trim().split(':');
  return { uid: Number(uid), gid: Number(gid), home: home!, shell: shell ?? '' };
}

/** The key's "type blob [comment]", from a .pub file or the text itself; refused (80) unless it is one. */
export function parsePublicKey(key: string): { type: string; blob: string; comment: string } {
  let text = key;
  if (!/^(ssh-|ecdsa-|sk-)/.test(key)) {
    try {
      text = readFileSync(key, 'utf8');
    } catch (err) {
      throw new ToolError(
        'usage',
        'bad-key',
        `--key: expected one OpenSSH public key or a .pub file, and ${JSON.stringify(key)} is neither (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
  }
  const match =
    /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) ([A-Za-z0-9+/]+={0,3})(?: ([^\n]*))?\n?$/.exec(
      text.trim(),
    );
  if (!match)
    throw new ToolError(
      'usage',
      'bad-key',
      `--key: expected one OpenSSH public key ("ssh-ed25519 AAAA... comment"), got ${JSON.stringify(text.slice(0, 60))}`,
    );
  return { type: match[1]!, blob: match[2]!, comment: (match[3] ?? '').replace(/[^\x20-\x7e]/g, '') };
}

/** The forced command: the receiver and its flags, with paths that need no quoting inside command="...". */
export function forcedCommand(bin: string, root: string, machineIdFile?: string): string {
  for (const p of [bin, root, machineIdFile ?? '']) {
    if (!/^[A-Za-z0-9/._+-]*$/.test(p))
      throw new ToolError('usage', 'bad-path', `${JSON.stringify(p)}: a path in the forced command must be [A-Za-z0-9/._+-] only`);
  }
  return [bin, 'receive', '--root', root, ...(machineIdFile ? ['--machine-id-file', machineIdFile] : [])].join(' ');
}

function ensureUser(user: string): { step: NodeSetupStep; pw: NonNullable<ReturnType<typeof passwdOf>> } {
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user))
    throw new ToolError('usage', 'bad-user', `--user: ${JSON.stringify(user)} is not a user name`);
  let pw = passwdOf(user);
  let changed = false;
  if (!pw) {
    // No password (*), not a locked one (!): sshd without PAM refuses a locked account even for a key.
    const out = run('useradd', ['--create-home', '--shell', '/bin/bash', '--password', '*', user]);
    if (out.status !== 0)
      throw new ToolError(
        'usage',
        'useradd-failed',
        `useradd ${user}: ${(out.stderr || out.error?.message || '').trim()} (node-setup makes users as root)`,
      );
    pw = passwdOf(user)!;
    changed = true;
  }
  if (/nologin|false$/.test(pw.shell))
    throw new ToolError(
      'usage',
      'no-login-shell',
      `user ${user} has the shell ${pw.shell}; sshd runs the forced command through the login shell: usermod --shell /bin/bash ${user}`,
    );
  return {
    pw,
    step: { step: 'user', done: true, changed, detail: `${user} (uid ${pw.uid}, home ${pw.home})${changed ? ', made' : ', exists'}` },
  };
}

function ensureDir(dir: string, uid: number, gid: number, mode: number): boolean {
  const made = !existsSync(dir);
  mkdirSync(dir, { recursive: true, mode });
  chownSync(dir, uid, gid);
  chmodSync(dir, mode);
  return made;
}

function lingerStep(user: string, uid: number): NodeSetupStep {
  if (uid === 0)
    return { step: 'linger', done: true, changed: false, detail: 'not needed for root (rootful sessions need no user manager)' };
  const out = run('loginctl', ['enable-linger', user]);
  if (out.status === 0) return { step: 'linger', done: true, changed: true, detail: `loginctl enable-linger ${user}` };
  return {
    step: 'linger',
    done: false,
    changed: false,
    detail: `loginctl enable-linger ${user} failed (${(out.stderr || out.error?.message || '').trim().split('\n').pop()}): without a user manager, sessions under NoNewPrivs on this node are refused with 84`,
  };
}

function subuidStep(user: string, uid: number): NodeSetupStep {
  if (uid === 0) return { step: 'subuids', done: true, changed: false, detail: 'not needed for root' };
  let text = '';
  try {
    text = readFileSync('/etc/subuid', 'utf8');
  } catch {
    // none
  }
  const has = text.split('\n').some((l) => l.startsWith(`${user}:`) || l.startsWith(`${uid}:`));
  return {
    step: 'subuids',
    done: has,
    changed: false,
    detail: has
      ? `${user} has subordinate ids in /etc/subuid`
      : `no /etc/subuid entry for ${user}: rootless podman needs one (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 ${user})`,
  };
}

/** Writes the restricted line: added, kept (already there), or replacing the same key's unrestricted line. */
function keyStep(file: string, line: string, blob: string, uid: number, gid: number): NodeSetupStep {
  ensureDir(path.dirname(file), uid, gid, 0o700);
  const old = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];
  const same = old.filter((l) => l.split(/\s+/).includes(blob));
  if (same.length === 1 && same[0] === line)
    return { step: 'key', done: true, changed: false, detail: `the restricted line is already in ${file}` };
  const next = [...old.filter((l) => !l.split(/\s+/).includes(blob)), line];
  const temp = `${file}.agent-sandbox.tmp`;
  writeFileSync(temp, `${next.join('\n')}\n`, { mode: 0o600 });
  chownSync(temp, uid, gid);
  renameSync(temp, file);
  return {
    step: 'key',
    done: true,
    changed: true,
    detail: same.length > 0 ? `replaced the key's line in ${file} with the restricted one` : `added the restricted line to ${file}`,
  };
}

export function nodeSetup(input: NodeSetupInput): NodeSetupOutput {
  if ((process.geteuid?.() ?? 0) !== 0)
    throw new ToolError(
      'usage',
      'not-root',
      'node-setup provisions users, their root and their authorized_keys: run it as root on the node',
    );
  const key = parsePublicKey(input.key);
  const { pw, step: userStep } = ensureUser(input.user);
  const root = absoluteRoot(input.root ?? path.join(pw.home, 'sandbox'));
  const madeRoot = ensureDir(root, pw.uid, pw.gid, 0o755);
  ensureDir(path.join(root, 'workspaces'), pw.uid, pw.gid, 0o755);
  const rootStep: NodeSetupStep = {
    step: 'root',
    done: true,
    changed: madeRoot,
    detail: `${root} (owned by ${input.user})${madeRoot ? ', made' : ', exists'}`,
  };
  const line = `restrict,command="${forcedCommand(input.bin, root, input.machineIdFile)}" ${key.type} ${key.blob}${key.comment ? ` ${key.comment}` : ''}`;
  const authorizedKeys = input.authorizedKeys ?? path.join(pw.home, '.ssh', 'authorized_keys');
  const steps = [
    userStep,
    rootStep,
    lingerStep(input.user, pw.uid),
    subuidStep(input.user, pw.uid),
    keyStep(authorizedKeys, line, key.blob, pw.uid, pw.gid),
  ];
  return { ok: true, user: input.user, home: pw.home, root, authorizedKeys, line, steps };
}

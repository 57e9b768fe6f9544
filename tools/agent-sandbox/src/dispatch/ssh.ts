/**
 * The ssh side of dispatch: an argv built without a shell, the host key pinned in a
 * known_hosts file of its own, no agent or X11 forwarding, batch mode (never a prompt).
 * The remote end is a forced command, so nothing here chooses what runs there: the
 * request (identities and paths, never a token) goes as JSON on stdin.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { HostEntry, HostSsh } from '@agent-sandbox/shared/schemas/agent-sandbox-hosts';
import type { SessionRequest } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import type { LiveRequest, ReturnRequest } from '@agent-sandbox/shared/schemas/workspace';
import { ToolError } from '@agent-sandbox/shared';
import { receiverRefusedTag } from './node-answer.js';

/** Lines the receiver writes on stderr so the dispatcher can tell its stages apart. */
export const receiverStartedTag = 'agent-sandbox-receiver: accepted ';
export const receiverVerdictTag = 'agent-sandbox-receiver: verdict ';

/** The known_hosts line pinning one host's key ("[addr]:port keytype key" for a non-22 port). */
export function knownHostsLine(ssh: HostSsh): string {
  const port = ssh.port ?? 22;
  const name = port === 22 ? ssh.address : `[${ssh.address}]:${port}`;
  return `${name} ${ssh.hostKey}\n`;
}

/** The ssh argv: every option explicit, so a user's ~/.ssh/config cannot weaken it. */
export function buildSshArgv(ssh: HostSsh, knownHostsFile: string): string[] {
  return [
    'ssh',
    '-F',
    '/dev/null',
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${knownHostsFile}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    `IdentityFile=${ssh.identityFile}`,
    '-o',
    'ForwardAgent=no',
    '-o',
    'ForwardX11=no',
    '-o',
    'ClearAllForwardings=yes',
    '-o',
    'PermitLocalCommand=no',
    '-o',
    'ConnectTimeout=10',
    '-T',
    '-p',
    String(ssh.port ?? 22),
    '-l',
    ssh.user,
    '--',
    ssh.address,
  ];
}

export interface DispatchResult {
  exitCode: number;
  /** The receiver's verdict document, when it reached the end. */
  verdict?: Record<string, unknown>;
  /** The receiver's refusal before it accepted (its code, exit and message), when it said one. */
  refusal?: Record<string, unknown>;
  started: boolean;
  stderrTail: string;
}

/** Runs `fn` with ssh's argv for `host` (its key pinned in a known_hosts file of its own, removed after). */
async function withSsh<T>(host: HostEntry, fn: (bin: string, args: string[]) => Promise<T>): Promise<T> {
  if (!host.ssh) throw new ToolError('internal', 'no-ssh-entry', `host ${host.name} has no ssh entry`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-sandbox-ssh-'));
  try {
    const knownHosts = path.join(dir, 'known_hosts');
    writeFileSync(knownHosts, knownHostsLine(host.ssh), { mode: 0o600 });
    const [bin, ...args] = buildSshArgv(host.ssh, knownHosts);
    return await fn(bin!, args);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The JSON object after a tag, or undefined when it is not one. */
function taggedObject(line: string, tag: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line.slice(tag.length));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sends one session request to a node and waits. The agent's stdout passes through to ours;
 * the receiver's tagged stderr lines are taken out, the rest passes through. ssh's own
 * failure before the receiver accepted is 81 (exit 255 and no "accepted" line).
 */
export async function dispatchOverSsh(
  host: HostEntry,
  request: SessionRequest,
  io: { stdout: { file: string; append: true } | 'inherit'; stderr: (line: string) => void; payload?: string },
): Promise<DispatchResult> {
  return await withSsh(host, async (bin, args) => {
    // Loaded on first use: execa is a large module that a session's common path never needs.
    const { execa } = await import('execa');
    // The request is one line; stdin then stays open for the whole session. If this process
    // dies, the pipe closes, ssh sends end of file, and the receiver stops the session.
    const child = execa(bin, args, {
      stdin: 'pipe',
      stdout: io.stdout,
      stderr: 'pipe',
      reject: false,
      buffer: { stdout: false, stderr: false },
      shell: false,
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.write(`${JSON.stringify(request)}\n`);
    // The work's bundle follows the line, exactly request.work.bytes; stdin stays open after it.
    if (io.payload && child.stdin)
      createReadStream(io.payload)
        .on('error', () => undefined)
        .pipe(child.stdin, { end: false });
    let started = false;
    let verdict: Record<string, unknown> | undefined;
    let refusal: Record<string, unknown> | undefined;
    const tail: string[] = [];
    let pending = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).replace(/\r$/, '');
        pending = pending.slice(nl + 1);
        if (line.startsWith(receiverStartedTag)) started = true;
        else if (line.startsWith(receiverVerdictTag)) {
          verdict = taggedObject(line, receiverVerdictTag) ?? verdict;
          if (!verdict) io.stderr(forTerminal(line));
        } else if (line.startsWith(receiverRefusedTag)) {
          refusal = taggedObject(line, receiverRefusedTag);
        } else {
          tail.push(line);
          if (tail.length > 20) tail.shift();
          io.stderr(line);
        }
      }
    });
    const result = await child;
    if (pending) io.stderr(pending);
    const exitCode = typeof result.exitCode === 'number' ? result.exitCode : 255;
    return { exitCode, started, stderrTail: tail.join('\n'), ...(verdict ? { verdict } : {}), ...(refusal ? { refusal } : {}) };
  });
}

/**
 * One request of the forced command's other kinds (return, ps, stop): the request on stdin, ssh's
 * stdout handed to `sink` up to `maxBytes` (ssh is stopped past that). Returns ssh's exit status,
 * the bytes read, the receiver's last stderr lines and its tagged refusal, when it said one.
 */
export async function requestOverSsh(
  host: HostEntry,
  request: ReturnRequest | LiveRequest,
  sink: (chunk: Buffer) => void,
  maxBytes: number,
): Promise<{ exitCode: number; bytes: number; stderrTail: string; refusal?: Record<string, unknown> }> {
  return await withSsh(host, async (bin, args) => {
    const { execa } = await import('execa');
    const child = execa(bin, args, {
      input: `${JSON.stringify(request)}\n`,
      stdout: 'pipe',
      stderr: 'pipe',
      reject: false,
      buffer: { stdout: false },
      shell: false,
    });
    let bytes = 0;
    child.stdout?.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) child.kill('SIGTERM');
      else sink(chunk);
    });
    const result = await child;
    const exitCode = typeof result.exitCode === 'number' ? result.exitCode : 255;
    const lines = String(result.stderr ?? '')
      .trim()
      .split('\n');
    const tagged = lines.find((l) => l.startsWith(receiverRefusedTag));
    const refusal = tagged ? taggedObject(tagged, receiverRefusedTag) : undefined;
    const tail = lines
      .filter((l) => !l.startsWith(receiverRefusedTag))
      .slice(-3)
      .join(' | ');
    return { exitCode: bytes > maxBytes ? 255 : exitCode, bytes, stderrTail: tail, ...(refusal ? { refusal } : {}) };
  });
}

/**
 * A shell request (`shell --host`): the request's line, then this process's stdin, go to the node;
 * the command's output comes back on this process's stdout and stderr as it is made, with no
 * terminal (the dispatch key has none). Resolves to ssh's exit status: the command's own, the
 * receiver's refusal (93 when no session runs there), or 255 when ssh itself failed.
 */
export async function shellOverSsh(host: HostEntry, request: LiveRequest): Promise<number> {
  return await withSsh(host, async (bin, args) => {
    const child = spawn(bin, args, { stdio: ['pipe', 'inherit', 'inherit'] });
    child.stdin.on('error', () => undefined);
    child.stdin.write(`${JSON.stringify(request)}\n`);
    process.stdin.pipe(child.stdin);
    const code = await new Promise<number>((resolve) => {
      child.once('error', () => resolve(255));
      child.once('close', (status) => resolve(typeof status === 'number' ? status : 255));
    });
    process.stdin.unpipe(child.stdin);
    process.stdin.pause();
    return code;
  });
}

/** The second request kind: the bundle a session left, written to `file` (at most `maxBytes`). */
export async function fetchOverSsh(
  host: HostEntry,
  request: ReturnRequest,
  file: string,
  maxBytes: number,
): Promise<{ exitCode: number; bytes: number; stderrTail: string }> {
  const out = createWriteStream(file, { mode: 0o600 });
  try {
    const { exitCode, bytes, stderrTail } = await requestOverSsh(host, request, (chunk) => out.write(chunk), maxBytes);
    return { exitCode, bytes, stderrTail };
  } finally {
    await new Promise<void>((resolve) => out.end(resolve));
  }
}

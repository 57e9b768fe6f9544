/**
 * The client's side of `ps --host NAME` and `stop WORKSPACE --host NAME`: the host is read from
 * the hosts registry as a run's is (this machine when it is the local entry), and a remote node
 * is asked through its forced command (ssh.ts requestOverSsh, serve-live.ts on the node). What
 * comes back is another machine's word: its size is bounded, each line is checked against its
 * schema, and a refusal keeps the node's code when our table knows it (node-answer.ts).
 */
import { ToolError } from '@agent-sandbox/shared';
import type { HostEntry } from '@agent-sandbox/shared/schemas/agent-sandbox-hosts';
import type { LiveRequest } from '@agent-sandbox/shared/schemas/workspace';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { loadRegistry, pickHost, readMachineId } from './hosts.js';
import { nodeRefusal } from './node-answer.js';
import { requestOverSsh } from './ssh.js';

/** The most a node's answer may be: 64 sessions' lines are a few dozen KiB. */
export const liveAnswerMaxBytes = 1 << 20;

/** What `ps`, `shell` and `stop` read to find a node: their --host, --hosts and the machine's id. */
export interface HostOptions {
  host?: string;
  registryFile: string;
  machineIdFile: string;
}

/**
 * The registry's entry for --host when it names another node; undefined without --host or when
 * it names this machine (then the local core answers).
 */
export async function remoteHost(options: HostOptions, given: Record<string, unknown>): Promise<HostEntry | undefined> {
  if (!options.host) return undefined;
  const machineId = readMachineId(options.machineIdFile);
  const registry = loadRegistry(options.registryFile, given['hosts'] !== undefined, machineId);
  const picked = await pickHost(registry, { name: options.host, machineId });
  return picked.local ? undefined : picked.host;
}

/** Asks a remote node; its stdout's JSON lines, each checked by `isLine` (a line that is not is refused, naming the node). */
export async function askNode<T>(
  host: HostEntry,
  request: Omit<LiveRequest, 'version' | 'nodeMachineId'>,
  isLine: (value: unknown) => value is T,
): Promise<T[]> {
  const chunks: Buffer[] = [];
  const answer = await requestOverSsh(
    host,
    { version: 1, nodeMachineId: host.machineId, ...request },
    (chunk) => chunks.push(chunk),
    liveAnswerMaxBytes,
  );
  if (answer.exitCode !== 0) {
    if (answer.refusal || answer.exitCode !== 255) throw nodeRefusal(answer.refusal, host.name, answer.stderrTail);
    throw new ToolError(
      'unreachable',
      'ssh-failed',
      `ssh to ${host.name} failed (exit 255${answer.bytes > liveAnswerMaxBytes ? `: the answer passed ${liveAnswerMaxBytes} bytes` : ''}): ${forTerminal(answer.stderrTail)}`,
    );
  }
  const lines = Buffer.concat(chunks)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  return lines.map((text, i) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!isLine(value))
      throw new ToolError(
        'unreachable',
        'node-answer-invalid',
        `${host.name} answered ${request.kind} with line ${i + 1} that is not the document it should be`,
      );
    return value;
  });
}

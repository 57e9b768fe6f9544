/**
 * The forced command's third request kind (`{"kind":"ps"|"stop"|"shell",...}`): a node answers
 * `ps --host`, `stop --host` and `shell --host` from its own root with the same cores as the
 * local commands, so a dispatched session is listed, entered and stopped through the ssh
 * identity that started it. The answer goes on stdout (ps: one JSON line per session; stop: the
 * stop document; shell: the command's own output, its input the connection's bytes after the
 * request, its status the exit status); a refusal (93 when no session of that workspace runs) is
 * the receiver's tagged line.
 */
import { guardPath } from '@agent-sandbox/path-guard';
import { ToolError } from '@agent-sandbox/shared';
import type { LiveRequest } from '@agent-sandbox/shared/schemas/workspace';
import { shellSession } from '../session/shell-session.js';
import { stopSession } from '../session/stop-session.js';
import type { ByteSource } from './receive-work.js';
import { runningSessions } from '../workspace/running.js';
import { sessionNow } from '../workspace/session-now.js';

/** What `stop` grants the agent when the request says nothing: the same default as the local flag's. */
export const defaultGraceSeconds = 10;

function write(stdout: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => stdout.write(text, (err) => (err ? reject(err) : resolve())));
}

export interface LiveContext {
  stdout: NodeJS.WritableStream;
  log: (line: string) => void;
  env: NodeJS.ProcessEnv;
  /** The connection's bytes after the request, to the end (a shell's input). */
  input: ByteSource;
}

export async function serveLive(request: LiveRequest, root: string, context: LiveContext): Promise<number> {
  const { stdout, log } = context;
  const realRoot = (await guardPath({ path: root, root, kind: 'directory' })).resolved;
  if (request.kind === 'shell') {
    if (!request.workspaceId) throw new ToolError('usage', 'bad-flag', 'a shell request names no workspaceId');
    const feedStdin = (sink: NodeJS.WritableStream) =>
      void context.input.readInto(Number.MAX_SAFE_INTEGER, (chunk) => sink.write(chunk)).finally(() => sink.end());
    return await shellSession({
      root: realRoot,
      workspace: request.workspaceId,
      command: request.command ?? [],
      tty: false,
      env: context.env,
      feedStdin,
    });
  }
  if (request.kind === 'ps') {
    await write(
      stdout,
      runningSessions(realRoot)
        .map((running) => `${JSON.stringify(sessionNow(running))}\n`)
        .join(''),
    );
    return 0;
  }
  if (!request.workspaceId) throw new ToolError('usage', 'bad-flag', 'a stop request names no workspaceId');
  const doc = await stopSession({
    root: realRoot,
    workspace: request.workspaceId,
    grace: request.graceSeconds ?? defaultGraceSeconds,
    log,
  });
  await write(stdout, `${JSON.stringify(doc)}\n`);
  return 0;
}

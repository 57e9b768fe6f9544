/**
 * `agent-sandbox stop WORKSPACE [--grace S]`: ends a running session as its user asked, through
 * its own launcher (session/stop-session.ts); refused with 93 (no-running-session) when no
 * session of that workspace runs. A line on stderr says how it ended; `--json` prints the stop
 * document (schema agent-sandbox.stop).
 */
import { ToolError, type CommandSpec } from '@agent-sandbox/shared';
import { parseDuration } from '@agent-sandbox/shared/limits';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { StopOptions, StopOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { pathDefaults } from '../paths.js';
import type { HostEntry } from '@agent-sandbox/shared/schemas/agent-sandbox-hosts';
import type { StopOutput } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { StopOutput as StopOutputCheck } from '@agent-sandbox/shared/validators/agent-sandbox-reports';
import { askNode, remoteHost } from '../dispatch/ask-node.js';
import { stopSession } from '../session/stop-session.js';

/** A dispatched session's stop: its node's receiver stops it as a local stop would, and says how it ended. */
async function stopOnNode(host: HostEntry, workspace: string, grace: number, log: (line: string) => void): Promise<StopOutput> {
  log(
    `agent-sandbox: asking ${forTerminal(host.name)} to stop session ${forTerminal(workspace)} (SIGTERM to the agent, the kill after ${grace}s)`,
  );
  const [doc] = await askNode(host, { kind: 'stop', workspaceId: workspace, graceSeconds: grace }, (value): value is StopOutput =>
    StopOutputCheck(value),
  );
  if (!doc) throw new ToolError('unreachable', 'node-answer-invalid', `${host.name} answered stop with nothing`);
  return doc;
}

export function stopCommand(): CommandSpec {
  return {
    name: 'stop',
    describe:
      'end a running session: the agent gets SIGTERM, the kill after --grace; its launcher ends it as after any end (the branch comes home) with the verdict stopped',
    takesCommand: true,
    options: flagsOf(StopOptionsSchema),
    examples: [
      ['agent-sandbox stop fix-1', 'stop the session of workspace fix-1 (SIGTERM, then the kill after 10 s)'],
      ['agent-sandbox stop fix-1 --grace 60', 'give the agent a minute to finish'],
      ['agent-sandbox stop fix-1 --host node-1', 'the same for a session dispatched to node-1 (over its ssh identity)'],
    ],
    run: async (_input, ctx) => {
      const paths = pathDefaults(ctx.env);
      const options = readOptions(StopOptions, StopOptionsSchema, ctx.options, { root: paths.root, registryFile: paths.registryFile });
      if (ctx.rest.length !== 1)
        throw new ToolError(
          'usage',
          'bad-flag',
          `stop: expected one WORKSPACE, got ${JSON.stringify(ctx.rest)} (stop WORKSPACE [--grace S] [--host NAME])`,
        );
      // --grace 0: the kill at once (a session that must end now); any other value as a duration.
      const [workspace, grace] = [ctx.rest[0]!, /^0+s?$/.test(options.grace) ? 0 : parseDuration('--grace', options.grace)];
      const remote = await remoteHost(options, ctx.options);
      const doc = remote
        ? await stopOnNode(remote, workspace, grace, ctx.log)
        : await stopSession({ root: options.root, workspace, grace, log: ctx.log });
      const { json } = options;
      const v = doc.verdict;
      ctx.log(
        `agent-sandbox: session ${forTerminal(doc.workspace)} ${v ? `ended: exit ${v.exitCode}, ${forTerminal(v.reason)}` : 'ended (its ledger line could not be read)'}`,
      );
      return json ? { output: doc } : {};
    },
  };
}

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
import { stopSession } from '../session/stop-session.js';

export function stopCommand(): CommandSpec {
  return {
    name: 'stop',
    describe: "end a running session: the agent gets SIGTERM, the kill after --grace; its launcher ends it as after any end (the branch comes home) with the verdict stopped",
    takesCommand: true,
    options: flagsOf(StopOptionsSchema),
    examples: [
      ['agent-sandbox stop fix-1', 'stop the session of workspace fix-1 (SIGTERM, then the kill after 10 s)'],
      ['agent-sandbox stop fix-1 --grace 60', 'give the agent a minute to finish'],
    ],
    run: async (_input, ctx) => {
      const { root, grace, json } = readOptions(StopOptions, StopOptionsSchema, ctx.options, { root: pathDefaults(ctx.env).root });
      if (ctx.rest.length !== 1) throw new ToolError('usage', 'bad-flag', `stop: expected one WORKSPACE, got ${JSON.stringify(ctx.rest)} (stop WORKSPACE [--grace S])`);
      const doc = await stopSession({ root, workspace: ctx.rest[0]!, grace: parseDuration('--grace', grace), log: ctx.log });
      const v = doc.verdict;
      ctx.log(`agent-sandbox: session ${forTerminal(doc.workspace)} ${v ? `ended: exit ${v.exitCode}, ${forTerminal(v.reason)}` : 'ended (its ledger line could not be read)'}`);
      return json ? { output: doc } : {};
    },
  };
}

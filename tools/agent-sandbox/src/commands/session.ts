/**
 * `run` and `exec`: a session, through the one forward path (launch.ts). A flag refused before
 * the request is complete still ends in the session's ledger line, and never in JSON on stdout:
 * stdout belongs to the agent (in exec, to the log's path).
 */
import path from 'node:path';
import type { CommandSpec, RunContext } from '@agent-sandbox/shared';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { launch } from '../launch.js';
import { recordVerdict, refusedLine } from '../ledger/verdict.js';
import { pathDefaults } from '../paths.js';
import { sessionIdentity } from '../session/identity.js';
import type { Mode } from '../session/request.js';
import { launchIo, type Entry } from './entry.js';
import { parseRequest, sessionOptions } from './session-flags.js';

/** A refusal before the request is complete (a bad flag value): the cause on stderr and a ledger line. */
function refuseUsage(err: unknown, ctx: RunContext): number {
  const opt = (key: string) => (typeof ctx.options[key] === 'string' ? (ctx.options[key] as string) : undefined);
  const absolute = (key: string) => (opt(key) && path.isAbsolute(opt(key)!) ? opt(key) : undefined);
  const workspace = opt('workspace');
  const image = opt('image');
  const identity = sessionIdentity({ ...(workspace ? { workspace } : {}), ...(image ? { image } : {}) });
  const { line, exitCode, message } = refusedLine(identity, err);
  const ledgerFile = absolute('ledger') ?? pathDefaults(ctx.env).ledgerFile;
  recordVerdict(
    { ledgerFile, ...(absolute('resultFile') ? { resultFile: absolute('resultFile')! } : {}) },
    { ...line, runtime: opt('runtime') ?? 'unknown', limits: null },
    ctx.log,
  );
  ctx.log(`agent-sandbox: ${forTerminal(message)}`);
  return exitCode;
}

export function sessionCommand(mode: Exclude<Mode, 'receive'>, entry: Entry, describe: string): CommandSpec {
  return {
    name: mode,
    describe,
    options: sessionOptions,
    takesCommand: true,
    examples: [
      [
        `agent-sandbox ${mode} --runtime codex --workspace s1 -- ${mode === 'exec' ? 'exec "fix the tests"' : ''}`,
        'a session in workspace s1',
      ],
    ],
    run: async (_input, ctx: RunContext) => {
      let request;
      try {
        request = parseRequest(mode, ctx.options, ctx.rest, ctx.env, entry.argv);
      } catch (err) {
        return { exitCode: refuseUsage(err, ctx) };
      }
      return { exitCode: await launch(request, launchIo(entry, ctx, request.verbose)) };
    },
  };
}

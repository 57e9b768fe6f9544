/**
 * `receive`: the node side of ssh dispatch, installed as the dispatch key's forced command
 * (`agent-sandbox node-setup` writes it): a session request as one JSON line on stdin
 * (the node's driver, receive.ts), the work it carries after it, and the session through the same forward path
 * as a local run.
 */
import type { CommandSpec } from '@agent-sandbox/shared';
import { parseSize } from '@agent-sandbox/shared/limits';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import { ReceiveOptions, ReceiveOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { pathDefaults } from '../../paths.js';
import { launchIo, type Entry } from '../entry.js';
import { receive } from '../../receive.js';

export function receiveCommand(entry: Entry): CommandSpec {
  return {
    name: 'receive',
    describe: 'node side of ssh dispatch (the forced command): a session request as one JSON line on stdin',
    options: flagsOf(ReceiveOptionsSchema),
    run: async (_i, ctx) => {
      const { root, ledgerFile } = pathDefaults(ctx.env);
      const options = readOptions(ReceiveOptions, ReceiveOptionsSchema, ctx.options, { root, ledgerFile });
      const config = {
        root: options.root,
        ledgerFile: options.ledgerFile,
        machineIdFile: options.machineIdFile,
        bundleMaxBytes: parseSize('--bundle-max', options.bundleMax),
        stdout: entry.stdout,
      };
      const io = { ...launchIo(entry, ctx, false), stdinIsTTY: false, stdoutIsTTY: false };
      return { exitCode: await receive(entry.channel(), config, io) };
    },
  };
}

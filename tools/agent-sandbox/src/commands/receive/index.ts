/**
 * `receive`: the node side of ssh dispatch, installed as the dispatch key's forced command
 * (`agent-sandbox node-setup` writes it): a session request as one JSON line on stdin
 * (receiver.ts), the work it carries after it, and the session through the same forward path
 * as a local run.
 */
import type { CommandSpec } from '@agent-sandbox/shared';
import { parseSize } from '@agent-sandbox/shared/limits';
import { defaultLedgerPath } from '../../ledger/append.js';
import { defaultRoot, homeOf } from '../../session/request.js';
import { launchIo, type Entry } from '../entry.js';
import { defaultBundleMax, receive } from './receiver.js';

export function receiveCommand(entry: Entry): CommandSpec {
  return {
    name: 'receive',
    describe: 'node side of ssh dispatch (the forced command): a session request as one JSON line on stdin',
    options: [
      { flag: 'root', type: 'string', describe: 'permitted root on this node (default $HOME/sandbox)' },
      { flag: 'ledger', type: 'string', describe: 'ledger file on this node' },
      { flag: 'machine-id-file', type: 'string', describe: "this node's identity (default /etc/machine-id)" },
      { flag: 'bundle-max', type: 'string', describe: `the largest git bundle a dispatched session may bring (default ${defaultBundleMax})` },
    ],
    run: async (_i, ctx) => {
      const config = {
        root: (ctx.options['root'] as string | undefined) ?? defaultRoot(homeOf(ctx.env)),
        ledgerFile: (ctx.options['ledger'] as string | undefined) ?? defaultLedgerPath(ctx.env, homeOf(ctx.env)),
        machineIdFile: (ctx.options['machineIdFile'] as string | undefined) ?? '/etc/machine-id',
        bundleMaxBytes: parseSize('--bundle-max', (ctx.options['bundleMax'] as string | undefined) ?? defaultBundleMax),
        stdout: entry.stdout,
      };
      const io = { ...launchIo(entry, ctx, false), stdinIsTTY: false, stdoutIsTTY: false };
      return { exitCode: await receive(entry.channel(), config, io) };
    },
  };
}

import { runTool, type ToolSpec } from '@agent-sandbox/shared';
import { realDeps } from './deps.js';
import { execWithHandoff } from './exec.js';
import { probe } from './probe.js';

export const tool: ToolSpec = {
  name: 'nnp-probe',
  summary: 'measure NoNewPrivs and the user manager; run a command through systemd-run --user only when NoNewPrivs is 1',
  commands: [
    {
      name: '$0',
      describe: 'report {"ok","noNewPrivs","reexec","insideHandoff","systemdVersion","userManager","argv"}; -- CMD fills argv',
      takesCommand: true,
      examples: [
        ['nnp-probe', 'measure this process'],
        ['setpriv --no-new-privs nnp-probe -- podman images', 'what exec would run under NoNewPrivs'],
      ],
      run: async (_input, ctx) => ({ output: await probe(realDeps({ env: ctx.env, log: ctx.log }), ctx.rest) }),
    },
    {
      name: 'exec',
      describe: 'run CMD: directly when NoNewPrivs is 0, through systemd-run --user when it is 1',
      takesCommand: true,
      examples: [['nnp-probe exec -- podman images', 'works under NoNewPrivs when a user manager runs']],
      run: async (_input, ctx) => ({ exitCode: await execWithHandoff(ctx.rest, realDeps({ env: ctx.env, log: ctx.log })) }),
    },
  ],
  epilog:
    "exec passes the command's own status through; 84 user manager not ready (remedy: loginctl enable-linger); 89 systemd-run itself failed; 90 already inside a handoff unit with NoNewPrivs 1.",
};

export const run = () => runTool(tool);

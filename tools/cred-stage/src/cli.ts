import { runTool, type FlagSpec, type ToolSpec } from '@agent-sandbox/shared';
import { CredStagePlanInput, CredStageStageInput } from '@agent-sandbox/shared/validators/cred-stage';
import { describeTable } from './credential-table.js';
import { installCredentials } from './install.js';
import { planCredentials } from './plan.js';
import { stageCredentials } from './stage.js';

const planFlags: FlagSpec[] = [
  { flag: 'runtime', field: 'runtime', type: 'string', describe: 'codex, claude or cursor-agent (see `cred-stage runtimes`)' },
  { flag: 'home', field: 'home', type: 'string', describe: "the user's home on the host (default $HOME)" },
  { flag: 'account', field: 'account', type: 'string', describe: 'a named account (accounts.json or --accounts)' },
  { flag: 'accounts', field: 'accounts', type: 'json', describe: 'JSON map account -> credential file path' },
  { flag: 'session-seconds', field: 'sessionSeconds', type: 'number', describe: "the session's expected length (default 7200)" },
  { flag: 'allow-expiring', field: 'allowExpiring', type: 'boolean', describe: 'stage a token that expires within the session anyway' },
  { flag: 'container-home', field: 'containerHome', type: 'string', describe: 'HOME inside the container (default /sandbox/home)' },
  { flag: 'stage-dir', field: 'stageDir', type: 'string', describe: 'per-session host dir holding the staged copy' },
];

export const tool: ToolSpec = {
  name: 'cred-stage',
  summary: 'stage a runtime credential read-only into the container and install a writable copy there',
  commands: [
    {
      name: 'runtimes',
      describe: 'print the credential table as JSON',
      run: async () => ({ output: { ok: true, runtimes: describeTable() } }),
    },
    {
      name: 'plan',
      describe: 'host side: resolve and check the credential file; print the read-only mount and install step',
      input: CredStagePlanInput,
      flags: planFlags,
      examples: [['cred-stage plan --runtime codex --stage-dir /srv/sandbox/secrets/s1', 'plan codex for session s1']],
      run: async (input) => ({ output: await planCredentials(input) }),
    },
    {
      name: 'stage',
      describe: 'host side: plan, then copy the file into stageDir owned by the container user (mode 0400)',
      input: CredStageStageInput,
      flags: [
        ...planFlags,
        { flag: 'uid', field: 'uid', type: 'number', describe: 'host uid owning the copy (default 1000)' },
        { flag: 'gid', field: 'gid', type: 'number', describe: 'host gid owning the copy (default 1000)' },
      ],
      run: async (input) => ({ output: await stageCredentials(input) }),
    },
    {
      name: 'install',
      describe: 'container side: copy /sandbox-secrets/<runtime>/<file> to $HOME/<path> (0600); reads no stdin',
      options: [
        { flag: 'secrets-dir', type: 'string', describe: 'staging root (default /sandbox-secrets)' },
        { flag: 'home', type: 'string', describe: 'HOME to install into (default $HOME)' },
        { flag: 'require', type: 'string', describe: 'comma-separated runtimes that must be staged' },
      ],
      run: async (_input, ctx) => {
        const o = ctx.options as { secretsDir?: string; home?: string; require?: string };
        const output = await installCredentials({
          env: ctx.env,
          ...(o.secretsDir ? { secretsDir: o.secretsDir } : {}),
          ...(o.home ? { home: o.home } : {}),
          ...(o.require ? { require: o.require.split(',').filter(Boolean) } : {}),
        });
        return { output };
      },
    },
  ],
  epilog:
    'plan/stage print {"ok":true,"runtime","identity","expiresAt","expiryOverride","mounts","stage","install"}; ' +
    'a credential refusal exits 85 naming the file, never its contents.',
};

export const run = () => runTool(tool);

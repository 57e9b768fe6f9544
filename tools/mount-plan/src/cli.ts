import { runTool, type ToolSpec } from '@agent-sandbox/shared';
import { MountPlanInput } from '@agent-sandbox/shared/validators/mount-plan';
import { planMounts } from './plan-mounts.js';

export const tool: ToolSpec = {
  name: 'mount-plan',
  summary: 'the exact mount list for one session: its workspace, its home, git metadata at the same paths, secrets read-only',
  commands: [
    {
      name: '$0',
      describe: 'plan {"workspace","root","sessionId","credentials"?,"gitRoots"?,"credentialRoots"?} from stdin or flags',
      input: MountPlanInput,
      flags: [
        { flag: 'workspace', field: 'workspace', type: 'string', describe: 'host workspace: must be <root>/workspaces/<session-id>' },
        { flag: 'root', field: 'root', type: 'string', describe: 'the permitted sandbox root (absolute)' },
        { flag: 'session-id', field: 'sessionId', type: 'string', describe: 'the session id' },
        { flag: 'credentials', field: 'credentials', type: 'json', describe: 'JSON array of credential mounts (cred-stage plan .mounts)' },
        { flag: 'git-roots', field: 'gitRoots', type: 'json', describe: 'JSON array of roots permitted for git metadata (default [root])' },
        {
          flag: 'credential-roots',
          field: 'credentialRoots',
          type: 'json',
          describe: 'JSON array of roots permitted for credential sources',
        },
      ],
      examples: [['mount-plan --root /srv/sandbox --session-id s1 --workspace /srv/sandbox/workspaces/s1', 'plan a session']],
      run: async (input) => ({ output: await planMounts(input) }),
    },
  ],
  epilog:
    'Prints {"ok":true,"mounts":[{"source","destination","readOnly"}],"workdir","home","git":{...},"gitConfig":[...],"env":{...}}.\n' +
    'Refusals: 86 a path escapes or is not the pinned one; 87 git metadata cannot be mounted at the same absolute paths.',
};

export const run = () => runTool(tool);

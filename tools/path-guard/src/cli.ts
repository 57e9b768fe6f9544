import { runTool, type ToolSpec } from '@agent-sandbox/shared';
import { PathGuardInput } from '@agent-sandbox/shared/validators/path-guard';
import { guardPath } from './guard-path.js';

export const tool: ToolSpec = {
  name: 'path-guard',
  summary: 'is a path inside the permitted root after realpath? (symlink-safe containment)',
  commands: [
    {
      name: '$0',
      describe: 'check {"path","root","create"?,"kind"?} from stdin or flags',
      input: PathGuardInput,
      flags: [
        { flag: 'path', field: 'path', type: 'string', describe: 'path to check (relative: under root)' },
        { flag: 'root', field: 'root', type: 'string', describe: 'permitted root (absolute)' },
        { flag: 'create', field: 'create', type: 'boolean', describe: 'create a missing directory, never through a symlink' },
        { flag: 'kind', field: 'kind', type: 'string', describe: 'directory (default), file or any' },
      ],
      examples: [
        [`echo '{"path":"/srv/sandbox/workspaces/s1","root":"/srv/sandbox"}' | path-guard`, 'check a workspace'],
        ['path-guard --root ~/sandbox --path workspaces/s1 --create', 'create it safely'],
      ],
      run: async (input) => ({ output: await guardPath(input) }),
    },
  ],
  epilog: 'Prints {"ok":true,"path","resolved","root","created"}; a refusal exits 86 with {"ok":false,"error":{...}}.',
};

export const run = () => runTool(tool);

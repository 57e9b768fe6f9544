import { runTool, type ToolSpec } from '@agent-sandbox/shared';
import { PodmanAttribInput } from '@agent-sandbox/shared/validators/podman-attrib';
import { attributeContainer } from './attribute/attribute-container.js';

export const tool: ToolSpec = {
  name: 'podman-attrib',
  summary: 'why a container ended (exit, signal, OOM kill, pids limit, start failure) and its peak usage',
  commands: [
    {
      name: '$0',
      describe: 'attribute {"container"} (an exited container that still exists) from inspect, the event log and the kernel log',
      input: PodmanAttribInput,
      flags: [{ flag: 'container', field: 'container', type: 'string', describe: 'name or ID of the exited container' }],
      examples: [
        ['podman-attrib --container my-session', 'why did my-session end?'],
        [`echo '{"container":"my-session"}' | podman-attrib | jq -r .reason`, 'just the reason'],
      ],
      run: async (input) => ({ output: await attributeContainer(input.container) }),
    },
  ],
  epilog:
    'Prints {"ok":true,"exitCode","reason","evidence","peak"}; reason is exited, signal, oom-killed, pids-limit or start-failed. ' +
    'Exits 0 whenever it could attribute; 80 for bad input or an unknown container.',
};

export const run = () => runTool(tool);

import { runTool, type RunContext, type ToolSpec } from '@agent-sandbox/shared';
import { EgressCheckInput, EgressProxyConfig } from '@agent-sandbox/shared/validators/egress-proxy';
import { ToolError } from '@agent-sandbox/shared/tool-error';
import { decideTarget, hostText, parsePolicy, parseTarget } from './rules/allowlist.js';
import { runtimeEgressTable } from './rules/runtime-allowlists.js';
import { resolverEnvironment, startSessionBroker } from './broker/session-broker.js';

/** Resolves when the process should stop: SIGTERM or SIGINT, or (exitWithParent) the parent is gone. */
function stopSignal(exitWithParent: boolean): { wait: Promise<string>; dispose(): void } {
  let dispose = () => undefined as void;
  const wait = new Promise<string>((resolve) => {
    const onTerm = () => resolve('SIGTERM');
    const onInt = () => resolve('SIGINT');
    process.once('SIGTERM', onTerm).once('SIGINT', onInt);
    const parent = process.ppid;
    // A killed launcher cannot tell its broker; reparenting can be seen (no pdeathsig in node).
    const timer = exitWithParent ? setInterval(() => process.ppid !== parent && resolve('parent-gone'), 250) : undefined;
    dispose = () => {
      process.off('SIGTERM', onTerm).off('SIGINT', onInt);
      if (timer) clearInterval(timer);
    };
  });
  return { wait, dispose: () => dispose() };
}

async function serve(config: EgressProxyConfig, ctx: RunContext) {
  // glibc reads these; the broker's names resolve the host's way only.
  for (const name of resolverEnvironment) delete process.env[name];
  const stop = stopSignal(config.exitWithParent ?? true);
  const broker = await startSessionBroker(config);
  ctx.log(`egress-proxy: listening on ${broker.socketPath} for session ${config.sessionId} (${config.allow.length} allow entries)`);
  const why = await stop.wait;
  stop.dispose();
  const summary = await broker.stop();
  ctx.log(
    `egress-proxy: stopped (${why}): ${summary.attempts} attempts, ${summary.allowed} allowed, ${summary.denied} denied, ${summary.failed} failed`,
  );
  return { output: { ok: true, summary } };
}

function check(input: EgressCheckInput) {
  const policy = parsePolicy(input.allow, input.deny);
  const target = parseTarget(input.target);
  if (!target)
    throw new ToolError('usage', 'invalid-field', `target: ${JSON.stringify(input.target)} is not host[:port] or [IPv6][:port]`, {
      field: 'target',
    });
  const decided = decideTarget(policy, target);
  return { ok: true, host: hostText(target.host), port: target.port, ...decided };
}

export const tool: ToolSpec = {
  name: 'egress-proxy',
  summary: "a session's only way out: an allowlisting CONNECT/HTTP broker on a unix socket, one JSON line per attempt",
  commands: [
    {
      name: 'serve',
      describe: 'run the broker for one session until SIGTERM; print its summary',
      input: EgressProxyConfig,
      flags: [
        { flag: 'socket', field: 'socketPath', type: 'string', describe: 'unix socket to listen on (in a private directory)' },
        { flag: 'session-id', field: 'sessionId', type: 'string', describe: 'the session (in every log line)' },
        { flag: 'allow', field: 'allow', type: 'array', describe: 'allowlist entry host[:port], *.domain[:port], [IPv6][:port]' },
        { flag: 'deny', field: 'deny', type: 'array', describe: 'denylist entry (deny wins; no port: every port)' },
        { flag: 'log', field: 'logPath', type: 'string', describe: 'append JSON lines here (default: stdout)' },
      ],
      examples: [
        [
          `echo '{"socketPath":"/run/as/s1/egress.sock","sessionId":"s1","allow":["api.openai.com"],"logPath":"/run/as/s1/egress.jsonl"}' | egress-proxy serve`,
          'one session',
        ],
      ],
      run: async (input, ctx) => serve(input, ctx),
    },
    {
      name: 'check',
      describe: 'the name rules for one target: allowed or why not (resolves and dials nothing)',
      input: EgressCheckInput,
      flags: [
        { flag: 'allow', field: 'allow', type: 'array', describe: 'allowlist entry' },
        { flag: 'deny', field: 'deny', type: 'array', describe: 'denylist entry' },
        { flag: 'target', field: 'target', type: 'string', describe: 'host[:port] (default port 443)' },
      ],
      run: async (input) => ({ output: check(input) }),
    },
    {
      name: 'runtimes',
      describe: "each runtime's default allowlist",
      run: async () => ({ output: { ok: true, runtimes: runtimeEgressTable.map((r) => ({ ...r })) } }),
    },
  ],
  epilog:
    'serve prints {"ok":true,"summary":{...}} when it stops (after the JSON lines when they go to stdout). A denial is HTTP 403 with X-Proxy-Error: <rule>.',
};

export const run = () => runTool(tool);

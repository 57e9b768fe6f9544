/**
 * The one table of agent markers: environment variables an agent CLI sets for
 * the processes it starts, and the names an agent CLI process carries. Any
 * match means "an agent is (or was) above us" and the hatch refuses (90).
 * Add a runtime here and nowhere else.
 *
 * Sources (checked 2025-11; README "Agent markers" has the links):
 * - codex: core/src/spawn.rs sets CODEX_SANDBOX_NETWORK_DISABLED=1 (no network) and
 *   CODEX_SANDBOX (e.g. "seatbelt") for shell-tool children; newer builds add
 *   CODEX_THREAD_ID and CODEX_CI. The npm launcher codex-cli/bin/codex.js sets
 *   CODEX_MANAGED_BY_NPM=1 (CODEX_MANAGED_BY_BUN=1 under bun) in the env of the native
 *   binary, which every child inherits.
 * - claude: Claude Code sets CLAUDECODE=1 (since 0.2.47, anthropics/claude-code#531)
 *   and CLAUDE_CODE_ENTRYPOINT (cli, sdk-ts, ...) for its Bash tool.
 * - cursor-agent: sets CURSOR_AGENT=1; the Cursor IDE's agent terminal has
 *   CURSOR_EXTENSION_HOST_ROLE=agent-exec.
 * - ours: AGENT_SANDBOX_SESSION is set inside every agent-sandbox container;
 *   AGENT_UNSAFE_SESSION is set by this hatch for the agent it starts (no hatch in a hatch).
 * - generic: AI_AGENT (proposed cross-vendor marker), GEMINI_CLI=1 (Gemini CLI).
 *
 * Left out on purpose: CURSOR_TRACE_ID and CLAUDE_CODE_SSE_PORT are set in every
 * integrated terminal of the Cursor / VS Code IDE, including a human's own; they
 * say "IDE", not "agent" (the agent case is covered by the rows above).
 */

export interface EnvMarker {
  /** The variable's name. Its value is never logged. */
  name: string;
  /** Who sets it. */
  setBy: string;
  /** When given, only this value counts; otherwise the variable's presence (even empty) counts. */
  value?: string;
}

export const envMarkers: readonly EnvMarker[] = [
  { name: 'CODEX_SANDBOX', setBy: 'codex (shell tool, sandboxed)' },
  { name: 'CODEX_SANDBOX_NETWORK_DISABLED', setBy: 'codex (shell tool, no network)' },
  { name: 'CODEX_THREAD_ID', setBy: 'codex (shell tool)' },
  { name: 'CODEX_CI', setBy: 'codex (shell tool)' },
  { name: 'CODEX_MANAGED_BY_NPM', setBy: 'codex npm launcher (inherited by its children)' },
  { name: 'CODEX_MANAGED_BY_BUN', setBy: 'codex bun launcher (inherited by its children)' },
  { name: 'CLAUDECODE', setBy: 'claude (Bash tool)' },
  { name: 'CLAUDE_CODE_ENTRYPOINT', setBy: 'claude (Bash tool)' },
  { name: 'CURSOR_AGENT', setBy: 'cursor-agent' },
  { name: 'CURSOR_EXTENSION_HOST_ROLE', value: 'agent-exec', setBy: 'Cursor IDE agent terminal' },
  { name: 'GEMINI_CLI', setBy: 'gemini CLI' },
  { name: 'AI_AGENT', setBy: 'generic agent marker' },
  { name: 'AGENT_SANDBOX_SESSION', setBy: 'agent-sandbox (inside every session container)' },
  { name: 'AGENT_UNSAFE_SESSION', setBy: "agent-unsafe (its own agent and that agent's children)" },
];

/**
 * Basenames of agent CLI executables (argv[0], /proc comm, or the script an
 * interpreter runs). `agent` is cursor-agent's newer name.
 */
export const agentProgramNames: readonly string[] = ['codex', 'claude', 'cursor-agent', 'agent'];

/** Path fragments of the agent CLIs' npm packages, for `node .../cli.js` ancestors. */
export const agentPackagePaths: readonly string[] = [
  '@openai/codex/',
  '@anthropic-ai/claude-code/',
  '/cursor-agent/',
  '/.local/share/cursor-agent/',
];

/** Programs that run a script named in argv[1]; that script's name decides. */
export const interpreterNames: readonly string[] = ['node', 'nodejs', 'bun', 'deno', 'sh', 'bash', 'dash', 'zsh', 'python3', 'python'];

/** The variables of `env` that are markers, by name only (values are never reported). */
export function findEnvMarkers(env: NodeJS.ProcessEnv): EnvMarker[] {
  return envMarkers.filter((m) => {
    const value = env[m.name];
    if (value === undefined) return false;
    return m.value === undefined || value === m.value;
  });
}

/**
 * The runtimes the launcher can start, one row each: which CLI binary runs inside the
 * container and which environment variable names (never values of secrets) cross into it.
 * Credentials are cred-stage's table, not this one: one place per concern.
 */
import { ToolError } from '@agent-sandbox/shared';
import type { RuntimeName } from '@agent-sandbox/shared/schemas/agent-sandbox';

export interface RuntimeRow {
  /** The agent CLI inside the image. */
  binary: string;
  /** Env names passed into the container (values from the launcher's env when set). */
  env: string[];
  /** The cred-stage runtime whose credential file is staged. */
  credentialRuntime: RuntimeName;
}

const terminalEnv = ['TERM', 'COLORTERM', 'LANG', 'NO_COLOR'];

/**
 * Where Claude Code sends its requests. A URL, never a secret: ANTHROPIC_API_KEY and
 * ANTHROPIC_AUTH_TOKEN are deliberately absent (a value passed with -e shows in `podman
 * inspect`); the credential travels only as cred-stage's staged file. Codex has no such
 * variable (its provider's base_url lives in $CODEX_HOME/config.toml, in the session home).
 */
const claudeEnv = [...terminalEnv, 'ANTHROPIC_BASE_URL'];

export const runtimes: Record<RuntimeName, RuntimeRow> = {
  codex: { binary: 'codex', env: terminalEnv, credentialRuntime: 'codex' },
  claude: { binary: 'claude', env: claudeEnv, credentialRuntime: 'claude' },
  'cursor-agent': { binary: 'cursor-agent', env: terminalEnv, credentialRuntime: 'cursor-agent' },
};

/** The row for a runtime name, or a usage error naming the ones that exist. */
export function runtimeRow(name: string): RuntimeRow {
  const row = (runtimes as Record<string, RuntimeRow | undefined>)[name];
  if (!row) {
    throw new ToolError('usage', 'unknown-runtime', `--runtime: expected one of ${Object.keys(runtimes).join(', ')}, got ${JSON.stringify(name)}`);
  }
  return row;
}

/**
 * The runtimes: the one list of agent CLIs every tool knows. Each row says which CLI binary
 * runs inside the container, which environment variable names (never values of secrets) cross
 * into it, and which wrapper a human types for the uncontained hatch. The credential file of
 * each runtime is cred-stage's table (the part most likely to leak a secret if written ad hoc
 * lives in one tool); adding a runtime is a row here and a row there.
 */

const terminalEnv = ['TERM', 'COLORTERM', 'LANG', 'NO_COLOR'] as const;

export interface RuntimeRow {
  /** The agent CLI (inside the image for a session; on PATH for the hatch). */
  binary: string;
  /** Env names passed into the container (values from the launcher's env when set). */
  env: readonly string[];
  /** The human-only hatch's wrapper name (tools/agent-unsafe). */
  hatch: string;
}

export const runtimes = {
  codex: { binary: 'codex', env: terminalEnv, hatch: 'cdx-unsafe' },
  /**
   * ANTHROPIC_BASE_URL is a URL, never a secret; ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are
   * deliberately absent (a value passed with -e shows in `podman inspect`): the credential
   * travels only as cred-stage's staged file.
   */
  claude: { binary: 'claude', env: [...terminalEnv, 'ANTHROPIC_BASE_URL'], hatch: 'cld-unsafe' },
  'cursor-agent': { binary: 'cursor-agent', env: terminalEnv, hatch: 'ca-unsafe' },
} as const satisfies Record<string, RuntimeRow>;

export type RuntimeName = keyof typeof runtimes;

export const runtimeNames = Object.keys(runtimes) as RuntimeName[];

export function isRuntimeName(name: string): name is RuntimeName {
  return Object.prototype.hasOwnProperty.call(runtimes, name);
}

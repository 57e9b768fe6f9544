/**
 * The hosts each runtime needs, as data: one row per runtime, like cred-stage's credential
 * table (tools/cred-stage/src/credential-table.ts), whose runtimes these rows must match
 * (test/rules/runtime-allowlists.test.ts). The launcher reads `egressAllowlist(runtime)` for the
 * default of `run` and `exec`; `--allow-host` extends it.
 */
import type { RuntimeName } from '@agent-sandbox/shared/schemas/agent-sandbox';

export interface RuntimeEgress {
  runtime: RuntimeName;
  /** Entries for the broker's allowlist; null when not known (then nothing is allowed by default). */
  allow: string[] | null;
  note: string;
}

export const runtimeEgressTable: readonly RuntimeEgress[] = [
  {
    runtime: 'codex',
    allow: ['api.openai.com', 'chatgpt.com', 'auth.openai.com'],
    note: 'the Responses API (API key), the ChatGPT backend (ChatGPT login) and token refresh',
  },
  {
    runtime: 'claude',
    allow: ['api.anthropic.com', 'claude.ai', 'platform.claude.com'],
    note: 'the Messages API and OAuth; run with telemetry and auto-update off (DISABLE_TELEMETRY, DISABLE_AUTOUPDATER, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)',
  },
  {
    runtime: 'cursor-agent',
    allow: null,
    note: 'unknown: the cursor-agent CLI is not installed on the machines this was built on, so its hosts were not measured (run it with everything denied and read the log)',
  },
];

/** The runtime's allowlist ([] when unknown: the session is offline unless hosts are added). */
export function egressAllowlist(runtime: RuntimeName): string[] {
  return [...(runtimeEgressTable.find((row) => row.runtime === runtime)?.allow ?? [])];
}

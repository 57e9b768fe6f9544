/**
 * The systemd version decides how `$` is kept literal: `--expand-environment=no`
 * exists from 254; before that every `$` must be written `$$`. We ask the binary we
 * will run, `systemd-run --version`, so the flags match the program that parses them.
 */
import type { NnpDeps } from './deps.js';

/** First line "systemd 252 (252.38-1~deb12u1)" -> 252; anything else -> null. */
export function parseSystemdVersion(text: string): number | null {
  const match = /^systemd (\d+)\b/.exec(text.split('\n')[0]?.trim() ?? '');
  return match ? Number(match[1]) : null;
}

/** null when systemd-run is absent or does not answer like systemd. */
export async function detectSystemdVersion(deps: NnpDeps): Promise<number | null> {
  try {
    const out = await deps.query('systemd-run', ['--version'], deps.env);
    return out.exitCode === 0 ? parseSystemdVersion(out.stdout) : null;
  } catch {
    return null;
  }
}

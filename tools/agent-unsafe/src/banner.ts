/** The text a human sees on stderr before the agent starts. It says plainly that nothing contains it. */
import type { LaunchPlan } from './limits.js';

export function bannerLines(runtime: string, binary: string, plan: LaunchPlan): string[] {
  const rule = '='.repeat(78);
  return [
    rule,
    `  UNCONTAINED SESSION: ${runtime} runs directly on this host (${binary}),`,
    "  with your user's full access to files, credentials and network.",
    '  No container, no mount restrictions, nothing destroyed when it ends.',
    '  This hatch is for a human at a terminal; agents are refused (exit 90).',
    ...plan.notes.map((note) => `  ${note}`),
    rule,
  ];
}

/** The runtimes the hatch can start, and the wrapper a human types for each. One place adds a runtime. */
export const runtimes = {
  codex: { program: 'codex', wrapper: 'cdx-unsafe' },
  claude: { program: 'claude', wrapper: 'cld-unsafe' },
  'cursor-agent': { program: 'cursor-agent', wrapper: 'ca-unsafe' },
} as const;

export type Runtime = keyof typeof runtimes;

export const runtimeNames = Object.keys(runtimes) as Runtime[];

/** Program names that are this tool itself: the hatch never launches itself. */
export const ownProgramNames: readonly string[] = ['agent-unsafe', ...Object.values(runtimes).map((r) => r.wrapper)];

/**
 * The named steps of a session, for the fault-injection tests: the library core calls
 * `at(step)` at each, and a test's driver (a process that imports the library) stops there to
 * be killed. Only the library API takes it; no flag or environment variable reaches it, so
 * nothing an agent can set triggers a fault.
 */
export type SessionStep = 'locked' | 'recorded' | 'staging' | 'staged' | 'starting' | 'started' | 'running' | 'attributing' | 'attributed';

export interface FaultHooks {
  at?: (step: SessionStep) => void | Promise<void>;
}

export async function reach(hooks: FaultHooks | undefined, step: SessionStep): Promise<void> {
  await hooks?.at?.(step);
}

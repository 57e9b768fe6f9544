import { Closed, Type, type Static } from '../schema.js';

/** One reason agent-unsafe refused (exit 90); all reasons found are listed, the first is the error code. */
export const AgentUnsafeRefusal = Closed(
  {
    code: Type.Union(
      [Type.Literal('no-tty'), Type.Literal('container-environment'), Type.Literal('agent-marker'), Type.Literal('agent-ancestor')],
      { description: 'which check refused' },
    ),
    evidence: Type.String({ description: 'what was seen: a file, a variable name (never its value), a process' }),
  },
  { $id: 'agent-unsafe.refusal' },
);
export type AgentUnsafeRefusal = Static<typeof AgentUnsafeRefusal>;

/** What `agent-unsafe <runtime> --dry-run` prints: the launch it would make, after every check passed. */
export const AgentUnsafePlan = Closed(
  {
    ok: Type.Literal(true),
    runtime: Type.Union([Type.Literal('codex'), Type.Literal('claude'), Type.Literal('cursor-agent')]),
    binary: Type.String({ description: "the agent CLI's absolute path, resolved on PATH" }),
    mechanism: Type.Union([Type.Literal('systemd-run'), Type.Literal('prlimit')], {
      description: 'systemd-run --user scope in unsafe.slice when a user manager exists, prlimit rlimits otherwise',
    }),
    argv: Type.Array(Type.String(), { description: 'the full argv that launches the agent' }),
    limits: Closed({
      memoryBytes: Type.Integer({ description: 'MemoryMax of the scope (systemd-run only)' }),
      tasks: Type.Integer({ description: 'TasksMax of the scope, or the processes budget added to the uid count (prlimit)' }),
      nproc: Type.Optional(Type.Integer({ description: 'RLIMIT_NPROC set (prlimit): per uid, counts every process of the user' })),
      addressSpaceBytes: Type.Optional(Type.Integer({ description: 'RLIMIT_AS set (prlimit): per process, not a total' })),
    }),
  },
  { $id: 'agent-unsafe.plan' },
);
export type AgentUnsafePlan = Static<typeof AgentUnsafePlan>;

/**
 * cred-stage contracts. The runtime is a plain string here, not an enum: the
 * credential table in tools/cred-stage is the one place that lists runtimes
 * (adding a runtime is adding a row), and the tool refuses an unknown one.
 * No field ever carries a credential's contents: only identity, paths, expiry times.
 */
import { AbsolutePath, Closed, Mount, Type, type Static } from '../schema.js';

const Runtime = Type.String({ minLength: 1, pattern: '^[a-z][a-z0-9-]*$', description: 'a runtime from `cred-stage runtimes`' });
const AccountName = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' });
const Mode = Type.String({ pattern: '^0[0-7]{3}$', description: 'octal file mode, e.g. "0600"' });

const planFields = {
  runtime: Runtime,
  home: Type.Optional(AbsolutePath),
  account: Type.Optional(AccountName),
  accounts: Type.Optional(
    Type.Record(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }), Type.String({ minLength: 1 }), {
      description: 'account name -> credential file path (absolute or ~/...); wins over the accounts.json config file',
      // A record's key pattern alone only selects which keys are checked; this refuses the rest.
      additionalProperties: false,
    }),
  ),
  sessionSeconds: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 30 * 24 * 3600, description: "the session's expected length (default 7200)" }),
  ),
  allowExpiring: Type.Optional(
    Type.Boolean({ description: 'stage a token that expires within the session anyway; the output says so (expiryOverride)' }),
  ),
  containerHome: Type.Optional(AbsolutePath),
  stageDir: Type.Optional(AbsolutePath),
};

export const CredStagePlanInput = Closed(planFields, { $id: 'cred-stage.plan.input' });
export type CredStagePlanInput = Static<typeof CredStagePlanInput>;

export const CredStageStageInput = Closed(
  {
    ...planFields,
    stageDir: AbsolutePath,
    uid: Type.Optional(Type.Integer({ minimum: 0, description: 'host uid that owns the staged copy (default 1000, the agent user)' })),
    gid: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { $id: 'cred-stage.stage.input' },
);
export type CredStageStageInput = Static<typeof CredStageStageInput>;

export const CredIdentity = Closed({
  runtime: Type.String(),
  account: Type.String(),
  path: AbsolutePath,
});
export type CredIdentity = Static<typeof CredIdentity>;

export const InstallStep = Closed({ from: AbsolutePath, to: AbsolutePath, mode: Mode });
export type InstallStep = Static<typeof InstallStep>;

export const StageStep = Closed({ from: AbsolutePath, to: AbsolutePath, mode: Mode });
export type StageStep = Static<typeof StageStep>;

export const CredStagePlanOutput = Closed(
  {
    ok: Type.Literal(true),
    runtime: Type.String(),
    identity: CredIdentity,
    expiresAt: Type.Union([Type.String(), Type.Null()], { description: 'ISO time the token expires; null when it has no expiry' }),
    sessionSeconds: Type.Integer(),
    expiryOverride: Type.Boolean({ description: 'true when allowExpiring staged a token that expires within the session' }),
    mounts: Type.Array(Mount),
    stage: Type.Array(StageStep, { description: 'host-side copies `cred-stage stage` makes (empty without stageDir)' }),
    install: Type.Array(InstallStep),
    staged: Type.Optional(Type.Boolean({ description: 'true when `cred-stage stage` made the copies' })),
  },
  { $id: 'cred-stage.plan.output' },
);
export type CredStagePlanOutput = Static<typeof CredStagePlanOutput>;

export const CredStageInstallOutput = Closed(
  {
    ok: Type.Literal(true),
    installed: Type.Array(Closed({ runtime: Type.String(), from: AbsolutePath, to: AbsolutePath, mode: Mode })),
  },
  { $id: 'cred-stage.install.output' },
);
export type CredStageInstallOutput = Static<typeof CredStageInstallOutput>;

export const CredentialRow = Closed({
  runtime: Type.String(),
  hostPath: Type.String({ description: 'where the file lives on the host, as a shell-like template' }),
  containerPath: Type.String({ description: 'where install puts the copy, relative to the container HOME' }),
  stagingPath: AbsolutePath,
  expiry: Type.String({ description: 'what expiry metadata is read' }),
  login: Type.String({ description: 'how to log in / refresh on the host' }),
});

export const CredStageRuntimesOutput = Closed(
  { ok: Type.Literal(true), runtimes: Type.Array(CredentialRow) },
  { $id: 'cred-stage.runtimes.output' },
);
export type CredStageRuntimesOutput = Static<typeof CredStageRuntimesOutput>;

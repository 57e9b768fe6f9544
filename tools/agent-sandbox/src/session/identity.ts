/**
 * Who a session is: the one builder of the identity its plan, its record and its ledger line
 * state (ledger/verdict.ts). A launch builds it from its request before anything is resolved,
 * then fills in what later steps establish (the host picked, the containment, the layout's
 * session id, the limits after the disk check, the credential's account); a refusal before the
 * request was complete builds it from whatever the flags said.
 */
import { randomBytes } from 'node:crypto';
import { defaultLimits } from '@agent-sandbox/shared/limits';
import type { ContainmentMode } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { SessionIdentity } from '../ledger/verdict.js';
import { workspaceIdOf } from '../workspace/layout.js';
import { defaultImage, type LaunchRequest } from './request.js';

export type { SessionIdentity };

/** What the identity is read from: a launch request, or the part of one a refusal could read. */
export type IdentitySource = Partial<Pick<LaunchRequest, 'workspace' | 'runtime' | 'account' | 'image' | 'limits'>>;

/** A new identity: a fresh run id, started now, on `host`, contained as `containment` (null until known). */
export function sessionIdentity(source: IdentitySource, host = 'unknown', containment: ContainmentMode | null = null): SessionIdentity {
  return {
    runId: randomBytes(8).toString('hex'),
    sessionId: source.workspace ? workspaceIdOf(source.workspace) : 'unknown',
    runtime: source.runtime ?? 'codex',
    account: source.account ?? null,
    host,
    containment,
    image: source.image ?? defaultImage,
    limits: source.limits ?? defaultLimits,
    startedAt: new Date().toISOString(),
  };
}

/**
 * The launch request (schema agent-sandbox.launch-request): what a session was asked to be,
 * normalised once, by `requestOf`, whether it came from flags (commands/session-flags.ts) or
 * from a session request a node received over ssh (`requestOfSession`). Defaults come from the
 * launcher's HOME and XDG dirs and from the shared limits; the schema checks every field; the
 * rules across fields follow. The fields that cross ssh are named once (`crossingSsh`), and
 * the session request is made from them (`sessionRequestOf`). Nothing read here can weaken
 * containment: no field selects host execution; agentBin only names the binary run inside the
 * container. Every refusal is 80 and names the flag (or the request field) that caused it.
 */
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { limitsFrom, type Limits } from '@agent-sandbox/shared/limits';
import { nameOfField, normalise, type Naming } from '@agent-sandbox/shared/options';
import {
  LaunchRequest,
  LaunchRequestSchema,
  SessionRequestSchema,
  type SessionRequest,
} from '@agent-sandbox/shared/validators/agent-sandbox';
import type { WorkOffer } from '@agent-sandbox/shared/schemas/workspace';
import { parseEntry } from '@agent-sandbox/egress-proxy';
import { publishPlanOf } from '../egress/publish.js';
import { logDirOf, pathDefaults } from '../paths.js';

export type { LaunchRequest };

/** run: the agent owns the terminal; exec: output to a log, its path on stdout; receive: the ssh receiver. */
export type Mode = LaunchRequest['mode'];

/** The session image with the real agent CLIs (image/Containerfile.agents): the schema's default. */
export const defaultImage = LaunchRequestSchema.properties.image.default as string;

type Field = keyof LaunchRequest;

/** What was asked, before defaults: request fields as given, and the limits as typed (or, from a node's request, already parsed). */
export interface Given {
  fields: Partial<Record<Exclude<Field, 'limits' | 'mode' | 'selfArgv' | 'diskGiven' | 'registryExplicit' | 'logDir'>, unknown>>;
  limits: Partial<Record<keyof Limits, unknown>> | { parsed: Limits };
}

export interface RequestContext {
  env: NodeJS.ProcessEnv;
  selfArgv: string[];
  /** How a refusal names a field no flag fills (a node's request field: request.workspaceId). */
  nameOf?: (field: string) => string;
}

/**
 * --cache as typed: repeatable and comma-separated (`--cache npm,pip --cache pnpm`), each name
 * once; `none` (or an empty value) alone asks for no cache, over the config's default.
 * Undefined when not given: the config file's default then applies (session/caches.ts).
 */
export function cachesGiven(value: unknown, name = '--cache'): unknown {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return value;
  const names = value.flatMap((v) => (typeof v === 'string' ? v.split(',').map((n) => n.trim()) : [v]));
  const wanted = names.filter((n) => n !== '' && n !== 'none');
  if (wanted.length > 0 && wanted.length < names.length) {
    throw new ToolError(
      'usage',
      'bad-flag',
      `${name}: none (or an empty value) asks for no cache and goes alone, got ${JSON.stringify(value.join(','))}`,
    );
  }
  return [...new Set(wanted)];
}

/** The rules across fields: the broker's flags and a namespace of the caller's exclude each other; every --allow-host entry parses. */
function checkRules(request: LaunchRequest, given: Given, naming: Naming): void {
  for (const entry of request.allowHosts) parseEntry(entry, nameOfField(naming, 'allowHosts'));
  publishPlanOf(request.publish, 'check');
  if (request.network !== 'none' && (request.allowHosts.length > 0 || given.fields.egress !== undefined)) {
    throw new ToolError(
      'usage',
      'bad-flag',
      '--network ns:... joins a namespace you made: --egress and --allow-host (the broker) do not apply to it',
    );
  }
  if (request.egress === 'none' && request.allowHosts.length > 0)
    throw new ToolError('usage', 'bad-flag', "--allow-host adds to the broker's allowlist: it does not go with --egress none");
}

/**
 * The one normalisation of a request (lib/shared/src/options.ts normalise): the schema's
 * defaults, the paths' defaults (paths.ts), what was given over them, the limits parsed (the
 * flags' own messages: --memory: expected a size ...), then the schema, then the rules across
 * fields. Throws 80 naming the first bad field's flag; returns a request the schema holds.
 */
export function requestOf(mode: Mode, given: Given, context: RequestContext): LaunchRequest {
  const limits = 'parsed' in given.limits ? (given.limits.parsed as Limits) : limitsFrom(given.limits);
  const fields = Object.fromEntries(Object.entries(given.fields).filter(([, v]) => v !== undefined));
  if (fields['caches'] !== undefined)
    fields['caches'] = cachesGiven(fields['caches'], context.nameOf ? context.nameOf('caches') : '--cache');
  const ledgerFile = typeof fields['ledgerFile'] === 'string' ? fields['ledgerFile'] : pathDefaults(context.env).ledgerFile;
  const naming: Naming = { schema: LaunchRequestSchema, ...(context.nameOf ? { nameOf: context.nameOf } : {}) };
  const request = normalise(
    LaunchRequest,
    naming,
    { mode, ...fields, limits },
    {
      ...pathDefaults(context.env),
      diskGiven: 'parsed' in given.limits || given.limits.disk !== undefined,
      registryExplicit: given.fields.registryFile !== undefined,
      selfArgv: context.selfArgv,
      // Beside the ledger (a ledger that is not an absolute path is refused as itself).
      logDir: path.isAbsolute(ledgerFile) ? logDirOf(ledgerFile) : '/',
    },
  );
  checkRules(request, given, naming);
  return request;
}

/** The launch request's fields that cross ssh as they are: those the session request takes from its schema (agent-sandbox.session-request). */
export const crossingSsh = Object.keys(LaunchRequestSchema.properties).filter(
  (k) => k in SessionRequestSchema.properties,
) as (keyof LaunchRequest & keyof SessionRequest)[];

/** The session request for a node: the crossing fields, the workspace's id, and the work it carries. */
export function sessionRequestOf(request: LaunchRequest, nodeMachineId: string, work?: WorkOffer): SessionRequest {
  const crossing = Object.fromEntries(
    crossingSsh.map((k) => [k, request[k]]).filter(([k, v]) => v !== undefined && !(k === 'verbose' && v === false)),
  );
  return { version: 1, nodeMachineId, workspaceId: request.workspace, ...crossing, ...(work ? { work } : {}) } as SessionRequest;
}

/** What a node's receiver takes from its own settings: where its root, ledger and identity are. */
export interface NodeSettings {
  root: string;
  ledgerFile: string;
  machineIdFile: string;
  env: NodeJS.ProcessEnv;
}

/**
 * A node's launch request for a session request it accepted: the crossing fields as sent, the
 * node's own root, ledger and identity, and the defaults for everything else (no network but
 * the node's broker with the runtime's own list, no git roots, no expiring credential).
 */
export function requestOfSession(session: SessionRequest, node: NodeSettings): LaunchRequest {
  const { limits, verbose, ...crossing } = Object.fromEntries(crossingSsh.map((k) => [k, session[k]])) as Pick<
    SessionRequest,
    (typeof crossingSsh)[number]
  >;
  return requestOf(
    'receive',
    {
      fields: {
        ...crossing,
        verbose: verbose === true,
        workspace: session.workspaceId,
        root: node.root,
        ledgerFile: node.ledgerFile,
        machineIdFile: node.machineIdFile,
        registryFile: '/dev/null',
      },
      limits: { parsed: limits },
    },
    { env: node.env, selfArgv: [], nameOf: (field) => `request.${field === 'workspace' ? 'workspaceId' : field}` },
  );
}

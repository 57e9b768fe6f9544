/**
 * The flags run, exec, plan and kube take: the launch request's fields that name a flag
 * (schema agent-sandbox.launch-request, lib/shared/src/options.ts), and the limits' fields under
 * `limits`. What yargs reads and `--help` shows is derived from the schema; a value becomes the
 * request through session/request.ts's one normalisation, and a refusal names the flag.
 */
import { flagFields, flagsOf, givenOf as fieldsGivenBy, type FlagField } from '@agent-sandbox/shared/options';
import type { OptionSpec } from '@agent-sandbox/shared';
import { LaunchRequestSchema } from '@agent-sandbox/shared/validators/agent-sandbox';
import { requestOf, type Given, type LaunchRequest, type Mode } from '../session/request.js';

/** One flag and the request field it fills (`limits` for the limit flags, parsed together). */
export interface SessionFlag {
  flag: string;
  field: keyof LaunchRequest;
  type: 'string' | 'boolean';
  repeatable?: true;
}

const limitFields: FlagField[] = flagFields(LaunchRequestSchema.properties.limits as never);

/** Every session flag, in the schema's order, with the field it fills. */
export const sessionFlags: readonly SessionFlag[] = [
  ...flagFields(LaunchRequestSchema as never).map((f): SessionFlag => ({
    flag: f.flag,
    field: f.field as keyof LaunchRequest,
    type: f.boolean ? 'boolean' : 'string',
    ...(f.repeatable ? { repeatable: true as const } : {}),
  })),
  ...limitFields.map((f): SessionFlag => ({ flag: f.flag, field: 'limits', type: 'string' })),
];

/** The options the session commands declare (yargs reads them, `--help` shows them). */
export const sessionOptions: OptionSpec[] = flagsOf(LaunchRequestSchema as never);

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The flags' values (by camelCase name, as the skeleton hands them) as request fields and limits as typed. */
export function givenOf(options: Record<string, unknown>, rest: string[]): Given {
  const limits: Record<string, unknown> = {};
  for (const f of limitFields) if (options[camel(f.flag)] !== undefined) limits[f.field] = options[camel(f.flag)];
  return { fields: { agentArgs: rest, ...fieldsGivenBy(LaunchRequestSchema as never, options) }, limits };
}

/** Flags -> the launch request; every refusal is 80 and names the flag. */
export function parseRequest(
  mode: Mode,
  options: Record<string, unknown>,
  rest: string[],
  env: NodeJS.ProcessEnv,
  selfArgv: string[],
): LaunchRequest {
  return requestOf(mode, givenOf(options, rest), { env, selfArgv });
}

/**
 * One option layer for every command. A command's options are the fields of a TypeBox object
 * (its schema in schemas/), and each field says what the command line needs of it:
 *
 * - `flag`: the flag that fills it (`allowHosts` is filled by `--allow-host`); a field without
 *   `flag` is not on the command line;
 * - `description`: what `--help` says of it;
 * - `default` (a fixed default, applied here) or `defaultText` (how `--help` names a default the
 *   command computes from the environment, such as $HOME/sandbox);
 * - `expect`: what a value should be, in words, where the schema's own check says it badly (a
 *   pattern).
 *
 * From that one declaration come the flags yargs reads and `--help` prints (flagsOf), the
 * document the parsed flags make (givenOf), and the one normalisation (normalise): defaults
 * under what was given, the generated validator, and a refusal (80) that names the flag the user
 * typed. The annotations are JSON Schema annotations: they travel in schemas/*.json too, so a
 * shell or Python caller can read which flag fills which field.
 */
import type { TObject, TSchema } from '@sinclair/typebox';
import type { ValidationError, Validator } from './json-input.js';
import { ToolError } from './tool-error.js';
import type { OptionSpec } from './tool-spec.js';

/** The annotation keywords the schemas carry besides JSON Schema's own (ajv is told of them). */
export const optionAnnotations = ['flag', 'defaultText', 'expect'] as const;

/** What a field declares for the command line (JSON Schema's own keywords beside ours). */
export interface FieldOptions {
  flag?: string;
  defaultText?: string;
  expect?: string;
  description?: string;
  default?: unknown;
  type?: string;
}

/** A field that a flag fills: its name in the document, its flag, and its schema. */
export interface FlagField {
  field: string;
  flag: string;
  schema: TSchema & FieldOptions;
  /** Given any number of times: the field is a list. */
  repeatable: boolean;
  boolean: boolean;
}

/** The fields of `schema` that flags fill, in declaration order; `only` keeps those flags. */
export function flagFields(schema: TObject, only?: readonly string[]): FlagField[] {
  const fields: FlagField[] = [];
  for (const [field, child] of Object.entries(schema.properties) as [string, TSchema & FieldOptions][]) {
    if (typeof child.flag !== 'string' || (only && !only.includes(child.flag))) continue;
    fields.push({ field, flag: child.flag, schema: child, repeatable: child.type === 'array', boolean: child.type === 'boolean' });
  }
  return fields;
}

/** What `--help` says of a field: its description and its default. */
function helpOf(schema: FieldOptions): string {
  const fixed =
    schema.default === undefined || schema.default === false || (Array.isArray(schema.default) && schema.default.length === 0)
      ? undefined
      : String(schema.default);
  const given = schema.defaultText ?? fixed;
  const text = schema.description ?? '';
  return given === undefined || text.includes('(default') ? text : `${text} (default ${given})`;
}

/** The flags yargs reads and `--help` prints, in the order of the schema's fields; a nested object's flags (the limits) in its place. */
export function flagsOf(schema: TObject, only?: readonly string[]): OptionSpec[] {
  const specs: OptionSpec[] = [];
  for (const child of Object.values(schema.properties) as (TSchema & FieldOptions)[]) {
    if (typeof child.flag === 'string') {
      if (!only || only.includes(child.flag))
        specs.push({ flag: child.flag, type: child.type === 'boolean' ? 'boolean' : 'string', describe: helpOf(child) });
    } else if (child.type === 'object' && (child as TObject).properties) specs.push(...flagsOf(child as TObject, only));
  }
  return specs;
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The fields the parsed flags give (the skeleton hands values by the flag's camelCase name): a
 * repeatable flag as a list, a boolean only when true, nothing for a flag not given.
 */
export function givenOf(schema: TObject, values: Record<string, unknown>): Record<string, unknown> {
  const given: Record<string, unknown> = {};
  for (const f of flagFields(schema)) {
    const value = values[camel(f.flag)];
    if (value === undefined || (f.boolean && value === false)) continue;
    given[f.field] = f.repeatable && !Array.isArray(value) ? [value] : value;
  }
  return given;
}

/** The fixed defaults the schema's fields declare. */
export function defaultsOf(schema: TObject): Record<string, unknown> {
  const defaults: Record<string, unknown> = {};
  for (const [field, child] of Object.entries(schema.properties) as [string, TSchema & FieldOptions][]) {
    if (child.default !== undefined) defaults[field] = structuredClone(child.default);
  }
  return defaults;
}

/** How a refusal names a field: by its flag (`--ledger`), unless the caller names its fields otherwise (a node's request: `request.image`). */
export interface Naming {
  schema: TObject;
  nameOf?: (field: string) => string;
}

function fieldSchema(schema: TObject, field: string): (TSchema & FieldOptions) | undefined {
  return (schema.properties as Record<string, TSchema & FieldOptions>)[field];
}

/** The name a refusal gives a field: the caller's, else `--<flag>`, else the field's own. */
export function nameOfField(naming: Naming, field: string): string {
  if (naming.nameOf) return naming.nameOf(field);
  const flag = fieldSchema(naming.schema, field)?.flag;
  return flag === undefined ? field : flag.length === 1 ? `-${flag}` : `--${flag}`;
}

/** The flag (or name) of the field a failure is about, and the field's own hint. */
function nameAndHint(naming: Naming, field: string): { name: string; hint?: string } {
  const hint = fieldSchema(naming.schema, field)?.expect;
  return { name: nameOfField(naming, field), ...(hint ? { hint } : {}) };
}

/** ajv's first failure as the user's words: `--ledger: expected an absolute path, got "x"` (80). */
export function flagRefusal(errors: ValidationError[], document: Record<string, unknown>, naming: Naming): ToolError {
  const error = errors.find((e) => e.keyword !== 'anyOf') ?? errors[0];
  const field = (error?.instancePath ?? '').split('/')[1] ?? (error?.params['missingProperty'] as string | undefined) ?? 'request';
  const { name, hint } = nameAndHint(naming, field);
  if (!error || error.keyword === 'required')
    return new ToolError('usage', 'missing-flag', `${name}: required${hint ? ` (${hint})` : ''}`, { field });
  if (error.keyword === 'additionalProperties')
    return new ToolError('usage', 'bad-flag', `${name}: unknown field ${JSON.stringify(error.params['additionalProperty'])}`, { field });
  const value = error.instancePath
    .split('/')
    .slice(1)
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], document);
  const constants = errors
    .filter((e) => e.keyword === 'const' && e.instancePath === error.instancePath)
    .map((e) => String(e.params['allowedValue']));
  const expected =
    constants.length > 0
      ? `one of ${constants.join(', ')}`
      : error.keyword === 'pattern' && error.params['pattern'] === '^/'
        ? 'an absolute path'
        : (hint ??
          (error.keyword === 'minLength'
            ? 'a non-empty string'
            : error.keyword === 'type'
              ? `one ${String(error.params['type'])}`
              : (error.message ?? error.keyword)));
  const relative = error.keyword === 'pattern' && error.params['pattern'] === '^/';
  const code =
    field === 'runtime' && constants.length > 0 ? 'unknown-runtime' : field === 'root' && relative ? 'relative-root' : 'bad-flag';
  return new ToolError('usage', code, `${name}: expected ${expected}, got ${JSON.stringify(value)}`, { field });
}

/**
 * The one normalisation of a command's options: the schema's fixed defaults, then the defaults
 * the command computed (paths from the environment), then what was given, checked by the
 * schema's generated validator. Throws 80 naming the flag of the first bad field.
 */
export function normalise<T>(
  validate: Validator<T>,
  naming: Naming,
  given: Record<string, unknown>,
  computed: Record<string, unknown> = {},
): T {
  const document: Record<string, unknown> = { ...defaultsOf(naming.schema), ...computed };
  for (const [field, value] of Object.entries(given)) if (value !== undefined) document[field] = value;
  if (!validate(document)) throw flagRefusal(validate.errors ?? [], document, naming);
  return document;
}

/** A command's options from its parsed flags (by camelCase name): the flags given, the defaults, the schema's check. */
export function readOptions<T>(
  validate: Validator<T>,
  schema: TObject,
  values: Record<string, unknown>,
  computed: Record<string, unknown> = {},
): T {
  return normalise(validate, { schema }, givenOf(schema, values), computed);
}

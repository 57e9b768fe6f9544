/**
 * A small run-time validator for the JSON Schema subset our TypeBox contracts use.
 *
 * Why not TypeBox's own `Errors`: loading TypeBox costs ~5 ms of a ~35 ms cold start.
 * TypeBox stays the authoring tool (schema.ts, schemas/*.ts); at run time we only walk
 * the schema's plain JSON keys, so a schema object and its JSON.parse(JSON.stringify())
 * copy behave the same, and the bundler may inline schemas as JSON literals.
 *
 * The first error, its path and its message mirror TypeBox 0.34.41's `Errors(...).First()`
 * (errors/errors.mjs, errors/function.mjs) exactly, because tests and callers match them.
 * A keyword outside the subset throws instead of being ignored: we fail closed.
 */

export interface SchemaError {
  kind: 'unknown-field' | 'missing-field' | 'invalid';
  /** RFC 6901 pointer as TypeBox builds it: '' for the root, keys escaped ~0 ~1. */
  path: string;
  /** TypeBox's message text, e.g. 'Expected integer'. */
  message: string;
  value: unknown;
}

type Schema = Record<string, unknown>;
type Kind = 'union' | 'literal' | 'record' | 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'null' | 'unknown';

/** Keys that never change what validates. */
const descriptive = ['$id', '$schema', '$comment', 'title', 'description', 'default', 'examples'];

/** The keywords each kind understands, besides the descriptive ones. */
const keywords: Record<Kind, readonly string[]> = {
  union: ['anyOf'],
  literal: ['const', 'type'],
  record: ['type', 'patternProperties', 'additionalProperties'],
  object: ['type', 'properties', 'required', 'additionalProperties'],
  array: ['type', 'items', 'minItems', 'maxItems'],
  string: ['type', 'minLength', 'maxLength', 'pattern'],
  integer: ['type', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  number: ['type', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  boolean: ['type'],
  null: ['type'],
  unknown: [],
};

/** TypeBox dispatches on a symbol; JSON has none, so the kind is read from the keys. */
function kindOf(schema: Schema): Kind {
  if ('anyOf' in schema) return 'union';
  if ('const' in schema) return 'literal';
  switch (schema.type) {
    case 'object':
      return 'patternProperties' in schema ? 'record' : 'object';
    case 'array':
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
    case 'null':
      return schema.type;
    case undefined:
      return 'unknown';
    default:
      throw new Error(`unsupported schema keyword "type": ${JSON.stringify(schema.type)}`);
  }
}

function unsupported(key: string, where: string): never {
  throw new Error(`unsupported schema keyword "${key}" at ${where || '/'}`);
}

/** Every schema walked once, whole, so an unsupported keyword throws whatever the value. */
const verified = new WeakSet<object>();

function verify(schema: unknown, where: string): void {
  if (!isObjectLike(schema)) throw new Error(`unsupported schema at ${where || '/'}: not an object`);
  const kind = kindOf(schema);
  for (const key of Object.keys(schema)) {
    if (!descriptive.includes(key) && !keywords[kind].includes(key)) unsupported(key, where);
  }
  switch (kind) {
    case 'union':
      if (!Array.isArray(schema.anyOf)) unsupported('anyOf', where);
      schema.anyOf.forEach((member, i) => verify(member, `${where}/anyOf/${i}`));
      return;
    case 'literal':
      if (!['string', 'number', 'boolean'].includes(typeof schema.const)) unsupported('const', where);
      return;
    case 'object':
    case 'record': {
      // additionalProperties as a schema would validate extra keys: not in the subset.
      if (schema.additionalProperties !== undefined && typeof schema.additionalProperties !== 'boolean') {
        unsupported('additionalProperties', where);
      }
      if (kind === 'record') {
        const patterns = schema.patternProperties;
        if (!isObjectLike(patterns) || Object.keys(patterns).length !== 1) unsupported('patternProperties', where);
        for (const [pattern, inner] of Object.entries(patterns)) {
          regex(pattern);
          verify(inner, `${where}/patternProperties/${pattern}`);
        }
        return;
      }
      const properties = schema.properties ?? {};
      if (!isObjectLike(properties)) unsupported('properties', where);
      if (schema.required !== undefined && !Array.isArray(schema.required)) unsupported('required', where);
      for (const [key, inner] of Object.entries(properties)) verify(inner, `${where}/properties/${key}`);
      return;
    }
    case 'array':
      verify(schema.items, `${where}/items`);
      return;
    case 'string':
      if (schema.pattern !== undefined) {
        if (typeof schema.pattern !== 'string') unsupported('pattern', where);
        regex(schema.pattern);
      }
      return;
  }
}

/** Compiled once: the same few patterns are tested on every run. */
const regexes = new Map<string, RegExp>();
function regex(pattern: string): RegExp {
  let re = regexes.get(pattern);
  if (!re) regexes.set(pattern, (re = new RegExp(pattern)));
  return re;
}

/** As TypeBox's EscapeKey: RFC 6901. */
function escapeKey(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** TypeBox's IsObjectLike: arrays are not objects (also what a schema node must be). */
function isObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(path: string, message: string, value: unknown): SchemaError {
  return { kind: 'invalid', path, message, value };
}

/** The numeric checks, in TypeBox's order; `noun` is 'integer' or 'number'. */
function numberError(schema: Schema, noun: string, path: string, value: number): SchemaError | undefined {
  const { exclusiveMaximum, exclusiveMinimum, maximum, minimum, multipleOf } = schema as Record<string, number | undefined>;
  if (exclusiveMaximum !== undefined && !(value < exclusiveMaximum)) {
    return invalid(path, `Expected ${noun} to be less than ${exclusiveMaximum}`, value);
  }
  if (exclusiveMinimum !== undefined && !(value > exclusiveMinimum)) {
    return invalid(path, `Expected ${noun} to be greater than ${exclusiveMinimum}`, value);
  }
  if (maximum !== undefined && !(value <= maximum)) {
    return invalid(path, `Expected ${noun} to be less or equal to ${maximum}`, value);
  }
  if (minimum !== undefined && !(value >= minimum)) {
    return invalid(path, `Expected ${noun} to be greater or equal to ${minimum}`, value);
  }
  if (multipleOf !== undefined && !(value % multipleOf === 0)) {
    return invalid(path, `Expected ${noun} to be a multiple of ${multipleOf}`, value);
  }
  return undefined;
}

/** One node of TypeBox's error walk, stopping at the first error it would yield. */
function visit(schema: Schema, path: string, value: unknown): SchemaError | undefined {
  switch (kindOf(schema)) {
    case 'unknown':
      return undefined;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : invalid(path, 'Expected boolean', value);
    case 'null':
      return value === null ? undefined : invalid(path, 'Expected null', value);
    case 'literal': {
      const c = schema.const;
      return value === c ? undefined : invalid(path, `Expected ${typeof c === 'string' ? `'${c}'` : String(c)}`, value);
    }
    case 'union': {
      // TypeBox reports the union itself, never a member's error. It tests members with
      // Check, which differs from its error walk only for a required property whose schema
      // accepts undefined or whose name Object.prototype has; our contracts have neither.
      const members = schema.anyOf as Schema[];
      return members.some((member) => visit(member, path, value) === undefined)
        ? undefined
        : invalid(path, 'Expected union value', value);
    }
    case 'integer':
      if (!Number.isInteger(value)) return invalid(path, 'Expected integer', value);
      return numberError(schema, 'integer', path, value as number);
    case 'number':
      // TypeBox's default policy (AllowNaN false): NaN and Infinity are not numbers.
      if (!Number.isFinite(value)) return invalid(path, 'Expected number', value);
      return numberError(schema, 'number', path, value as number);
    case 'string': {
      if (typeof value !== 'string') return invalid(path, 'Expected string', value);
      const { minLength, maxLength, pattern } = schema as { minLength?: number; maxLength?: number; pattern?: string };
      if (minLength !== undefined && !(value.length >= minLength)) {
        return invalid(path, `Expected string length greater or equal to ${minLength}`, value);
      }
      if (maxLength !== undefined && !(value.length <= maxLength)) {
        return invalid(path, `Expected string length less or equal to ${maxLength}`, value);
      }
      if (pattern !== undefined && !regex(pattern).test(value)) {
        return invalid(path, `Expected string to match '${pattern}'`, value);
      }
      return undefined;
    }
    case 'array': {
      if (!Array.isArray(value)) return invalid(path, 'Expected array', value);
      const { minItems, maxItems } = schema as { minItems?: number; maxItems?: number };
      if (minItems !== undefined && !(value.length >= minItems)) {
        return invalid(path, `Expected array length to be greater or equal to ${minItems}`, value);
      }
      if (maxItems !== undefined && !(value.length <= maxItems)) {
        return invalid(path, `Expected array length to be less or equal to ${maxItems}`, value);
      }
      for (let i = 0; i < value.length; i++) {
        const error = visit(schema.items as Schema, `${path}/${i}`, value[i]);
        if (error) return error;
      }
      return undefined;
    }
    case 'record': {
      // TypeBox's IsRecordLike also excludes Date and Uint8Array (never JSON, but mirrored).
      if (!isObjectLike(value) || value instanceof Date || value instanceof Uint8Array) {
        return invalid(path, 'Expected object', value);
      }
      const [pattern, inner] = Object.entries(schema.patternProperties as Schema)[0] as [string, Schema];
      const re = regex(pattern);
      const entries = Object.entries(value);
      for (const [key, item] of entries) {
        if (!re.test(key)) continue;
        const error = visit(inner, `${path}/${escapeKey(key)}`, item);
        if (error) return error;
      }
      // Without additionalProperties: false, keys that miss the pattern are accepted, as TypeBox does.
      if (schema.additionalProperties === false) {
        const extra = entries.find(([key]) => !re.test(key));
        if (extra) return { kind: 'unknown-field', path: `${path}/${escapeKey(extra[0])}`, message: 'Unexpected property', value: extra[1] };
      }
      return undefined;
    }
    case 'object':
      return objectError(schema, path, value);
  }
}

function objectError(schema: Schema, path: string, value: unknown): SchemaError | undefined {
  if (!isObjectLike(value)) return invalid(path, 'Expected object', value);
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = (schema.required ?? []) as string[];
  const known = Object.getOwnPropertyNames(properties);
  const present = Object.getOwnPropertyNames(value);
  // 1. Required keys, in `required` order; only own properties count.
  for (const key of required) {
    if (!present.includes(key)) return { kind: 'missing-field', path: `${path}/${escapeKey(key)}`, message: 'Expected required property', value: undefined };
  }
  // 2. Unknown keys, in the value's own-key order.
  if (schema.additionalProperties === false) {
    for (const key of present) {
      if (!known.includes(key)) return { kind: 'unknown-field', path: `${path}/${escapeKey(key)}`, message: 'Unexpected property', value: value[key] };
    }
  }
  // 3. Each property in schema order. TypeBox reads value[key] (not only own keys) and
  // skips an optional property whose value is undefined; mirrored as is.
  for (const key of known) {
    const item = value[key];
    if (!required.includes(key) && item === undefined) continue;
    const error = visit(properties[key] as Schema, `${path}/${escapeKey(key)}`, item);
    if (error) return error;
  }
  return undefined;
}

/**
 * The first error TypeBox's `Errors(schema, value).First()` would report, or undefined
 * when the value conforms. Throws on a schema keyword outside the supported subset.
 */
export function firstSchemaError(schema: object, value: unknown): SchemaError | undefined {
  if (!verified.has(schema)) {
    verify(schema, '');
    verified.add(schema);
  }
  return visit(schema as Schema, '', value);
}

/** True when the value conforms to the schema. */
export function conforms(schema: object, value: unknown): boolean {
  return firstSchemaError(schema, value) === undefined;
}

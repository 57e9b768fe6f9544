import { ToolError } from './tool-error.js';

/** Larger documents are refused rather than buffered: no contract needs more. */
export const maxInputBytes = 16 * 1024 * 1024;

/** What ajv reports for one failed check (the fields of its ErrorObject that we read). */
export interface ValidationError {
  /** JSON Pointer of the value that failed: '' for the root, keys escaped ~0 ~1. */
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/**
 * A validator ajv generated at build time from one contract schema
 * (scripts/write-validators.mjs; import it from '@agent-sandbox/shared/validators/<module>').
 */
export interface Validator<T> {
  (value: unknown): value is T;
  errors?: ValidationError[] | null;
}

/** Parses one JSON document; anything else is a usage error (80) that says where. */
export function parseJsonDocument(text: string, source = 'stdin'): unknown {
  if (Buffer.byteLength(text) > maxInputBytes) {
    throw new ToolError('usage', 'input-too-large', `${source}: JSON document is larger than ${maxInputBytes} bytes`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ToolError('usage', 'malformed-json', `${source}: not a JSON document (${why})`);
  }
}

function pointerKeys(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .split('/')
        .slice(1)
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** ["limits", "memory"] -> "input.limits.memory"; array indices as [0]. */
function fieldName(keys: string[], root: string): string {
  return keys.reduce((acc, key) => (/^\d+$/.test(key) ? `${acc}[${key}]` : `${acc}.${key}`), root);
}

function valueAt(value: unknown, keys: string[]): unknown {
  return keys.reduce<unknown>((v, key) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), value);
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'string') return value.length > 40 ? 'a string' : `string ${JSON.stringify(value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return typeof value;
}

/**
 * What a failed anyOf expected, from its members' errors at the same place: the allowed
 * constants as one list ('must be one of "codex", "claude"'), each other member's message.
 */
function expectedOfUnion(errors: ValidationError[], at: string): string {
  const members = errors.filter((e) => e.instancePath === at && e.keyword !== 'anyOf');
  const constants = members.filter((e) => e.keyword === 'const').map((e) => JSON.stringify(e.params['allowedValue']));
  const others = members.filter((e) => e.keyword !== 'const').map((e) => (e.message ?? e.keyword).replace(/^must /, ''));
  const parts = new Set([...(constants.length > 0 ? [`be one of ${constants.join(', ')}`] : []), ...others]);
  return parts.size > 0 ? `must ${[...parts].join(' or ')}` : 'must match one of the allowed forms';
}

/**
 * The refusal for ajv's errors. Without allErrors ajv stops at the first failure, so the
 * last error is the one that failed the document (for an anyOf, its members' come first).
 */
function toToolError(errors: ValidationError[], value: unknown, root: string): ToolError {
  const error = errors[errors.length - 1];
  if (!error) return new ToolError('usage', 'invalid-field', `${root}: does not match its schema`, { field: root });
  const keys = pointerKeys(error.instancePath);
  if (error.keyword === 'additionalProperties' || error.keyword === 'required') {
    const key = String(error.params[error.keyword === 'required' ? 'missingProperty' : 'additionalProperty']);
    const field = fieldName([...keys, key], root);
    return error.keyword === 'required'
      ? new ToolError('usage', 'missing-field', `${field}: required field is missing`, { field })
      : new ToolError('usage', 'unknown-field', `${field}: unknown field`, { field });
  }
  const field = fieldName(keys, root);
  const expected =
    error.keyword === 'anyOf' ? expectedOfUnion(errors, error.instancePath) : (error.message ?? `must pass ${error.keyword}`);
  return new ToolError('usage', 'invalid-field', `${field}: ${expected}, got ${describeValue(valueAt(value, keys))}`, { field });
}

/**
 * Checks a value with a contract's generated validator. The first problem becomes a usage
 * error (80) whose message starts with the field's name: `input.limits.pids: must be >= 1, got number 0`.
 */
export function validateDocument<T>(validate: Validator<T>, value: unknown, root = 'input'): T {
  if (validate(value)) return value;
  throw toToolError(validate.errors ?? [], value, root);
}

/** Parse and validate in one step. */
export function readDocument<T>(validate: Validator<T>, text: string, source = 'stdin'): T {
  return validateDocument(validate, parseJsonDocument(text, source));
}

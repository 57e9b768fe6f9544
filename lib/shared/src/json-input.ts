import type { Static, TSchema } from '@sinclair/typebox';
import { ToolError } from './tool-error.js';
import { firstSchemaError, type SchemaError } from './validate.js';

/** Larger documents are refused rather than buffered: no contract needs more. */
export const maxInputBytes = 16 * 1024 * 1024;

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

/** "/limits/memory" -> "limits.memory"; the root is "input". */
function fieldName(pointer: string, root: string): string {
  if (pointer === '') return root;
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  return parts.reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : `${acc}.${part}`), root);
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'string') return value.length > 40 ? 'a string' : `string ${JSON.stringify(value)}`;
  return typeof value;
}

function toToolError(error: SchemaError, root: string): ToolError {
  const field = fieldName(error.path, root);
  if (error.kind === 'unknown-field') {
    return new ToolError('usage', 'unknown-field', `${field}: unknown field`, { field });
  }
  if (error.kind === 'missing-field') {
    return new ToolError('usage', 'missing-field', `${field}: required field is missing`, { field });
  }
  return new ToolError(
    'usage',
    'invalid-field',
    `${field}: ${error.message.toLowerCase()}, got ${describeValue(error.value)}`,
    { field },
  );
}

/**
 * Checks a value against a contract schema. The first problem becomes a usage
 * error (80) whose message starts with the field's name: `input.limits.pids: ...`.
 */
export function validateDocument<S extends TSchema>(schema: S, value: unknown, root = 'input'): Static<S> {
  // TypeBox is the authoring tool only: loading it would cost ~5 ms of every cold start.
  const first = firstSchemaError(schema, value);
  if (first) throw toToolError(first, root);
  return value as Static<S>;
}

/** Parse and validate in one step. */
export function readDocument<S extends TSchema>(schema: S, text: string, source = 'stdin'): Static<S> {
  return validateDocument(schema, parseJsonDocument(text, source));
}

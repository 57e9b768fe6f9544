/**
 * Schema building blocks. Every contract is a TypeBox schema: it is at once the
 * TypeScript type (Static<>) and a JSON Schema, written to schemas/*.json for
 * shell and Python callers by scripts/write-schemas.mjs. Objects are closed:
 * an unknown field is refused, never ignored.
 */
import { Type, type TProperties, type ObjectOptions } from '@sinclair/typebox';

export { Type, type Static, type TSchema } from '@sinclair/typebox';

/** A closed object: unknown fields are an error. */
export function Closed<T extends TProperties>(properties: T, options: ObjectOptions = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/** An absolute path (starts with "/"); containment is path-guard's job, not the schema's. */
export const AbsolutePath = Type.String({ minLength: 1, pattern: '^/', description: 'an absolute path' });

/** The error document every tool writes on failure. */
export const ErrorDocumentSchema = Type.Object(
  {
    ok: Type.Literal(false),
    error: Type.Object(
      {
        code: Type.String({ pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' }),
        message: Type.String(),
      },
      { additionalProperties: true },
    ),
  },
  { $id: 'error', additionalProperties: false },
);

/** A mount as every tool passes it around. */
export const Mount = Closed(
  {
    source: AbsolutePath,
    destination: AbsolutePath,
    readOnly: Type.Boolean(),
  },
  { description: 'a bind mount: host source at container destination' },
);

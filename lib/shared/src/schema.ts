/**
 * Schema building blocks. Every contract is a TypeBox schema: it is at once the
 * TypeScript type (Static<>) and a JSON Schema, written to schemas/*.json for
 * shell and Python callers by scripts/write-schemas.mjs. Objects are closed:
 * an unknown field is refused, never ignored.
 */
import { Type, type TProperties, type TSchema, type ObjectOptions } from '@sinclair/typebox';

export { Type, type Static, type TSchema } from '@sinclair/typebox';

/** A closed object: unknown fields are an error. */
export function Closed<T extends TProperties>(properties: T, options: ObjectOptions = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/** An absolute path (starts with "/"); containment is path-guard's job, not the schema's. */
/** At most `max` items named, then a count (shared/bounded-list): every list a session can make long. */
export function Bounded<T extends TSchema>(item: T, max: number, description: string) {
  return Closed(
    { named: Type.Array(item, { maxItems: max }), others: Type.Integer({ minimum: 0, description: 'how many more there were' }) },
    { description },
  );
}

export const AbsolutePath = Type.String({ minLength: 1, pattern: '^/', description: 'an absolute path' });

/** A container's network: none, or a network namespace the caller made; never the host's or a bridge. */
export const ContainerNetwork = Type.String({
  pattern: '^(none|ns:/run/netns/[A-Za-z0-9_.-]+)$',
  description: '"none" (default) or "ns:/run/netns/<name>"',
});

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
    overlay: Type.Optional(
      Type.Object(
        { upper: AbsolutePath, work: AbsolutePath },
        {
          additionalProperties: false,
          description:
            "podman's overlay volume (:O,upperdir=,workdir=): the source is only the lower layer, never written; what the container writes there goes to the upper directory, which the caller makes empty before and removes after the container (readOnly must be false)",
        },
      ),
    ),
  },
  { description: 'a bind mount: host source at container destination (or, with overlay, a writable layer of its own over it)' },
);

/** A size as podman takes it: "512m", "4G", "1.5g", "512MiB" or bytes (parsed by lib/shared/src/limits.ts). */
export const SizeText = Type.String({
  pattern: '^[0-9]+(\\.[0-9]+)? ?[kmgtpKMGTP]?([iI]?[bB])?$',
  description: 'bytes, or a number with a unit k/m/g/t',
});

/** "90s", "45m", "2h", "1h30m" or seconds (parsed by lib/shared/src/limits.ts). */
export const DurationText = Type.String({
  pattern: '^([0-9]+|([0-9]+h)?([0-9]+m)?([0-9]+s)?)$',
  minLength: 1,
  description: 'seconds, or a duration such as 45m or 1h30m',
});

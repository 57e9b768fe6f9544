import { Closed, Type, type Static } from '../schema.js';

export const PathGuardInput = Closed(
  {
    path: Type.String({ description: 'the path to check; relative paths are taken relative to root' }),
    root: Type.String({ description: 'the permitted root; must be absolute' }),
    create: Type.Optional(Type.Boolean({ description: 'create a missing directory under the root, never through a symlink' })),
    kind: Type.Optional(
      Type.Union([Type.Literal('directory'), Type.Literal('file'), Type.Literal('any')], {
        description: 'what the path must be (default directory)',
      }),
    ),
  },
  { $id: 'path-guard.input' },
);
export type PathGuardInput = Static<typeof PathGuardInput>;

export const PathGuardOutput = Closed(
  {
    ok: Type.Literal(true),
    path: Type.String({ description: 'the path as given' }),
    resolved: Type.String({ description: 'its realpath, inside the root' }),
    root: Type.String({ description: "the root's realpath" }),
    created: Type.Boolean({ description: 'true when this call created the directory' }),
  },
  { $id: 'path-guard.output' },
);
export type PathGuardOutput = Static<typeof PathGuardOutput>;

// The hand-written validator must report exactly the first error TypeBox 0.34.41 reports
// (same path, message and kind), for every contract schema, on the TypeBox object and on
// its JSON copy. TypeBox is loaded here, in the test, as the reference only.
import t from 'tap';
import fc from 'fast-check';
import { deepStrictEqual } from 'node:assert';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { Kind, Type, type TSchema } from '@sinclair/typebox';
import { Errors, ValueErrorType } from '@sinclair/typebox/errors';
import { firstSchemaError, conforms, type SchemaError } from '../dist/validate.js';
import { Closed } from '../dist/schema.js';

const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');

/** Every exported schema object, found the way scripts/write-schemas.mjs finds them. */
async function contractSchemas(): Promise<Array<[string, TSchema]>> {
  const files = ['schema.js', ...(await readdir(path.join(dist, 'schemas'))).filter((f) => f.endsWith('.js')).sort().map((f) => `schemas/${f}`)];
  const found: Array<[string, TSchema]> = [];
  for (const file of files) {
    const mod = (await import(path.join(dist, file))) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      // `Type` (the builder) is exported too; only TypeBox schema objects carry Kind.
      if (value && typeof value === 'object' && Kind in value) found.push([`${file}:${name}`, value as TSchema]);
    }
  }
  return found;
}

/** TypeBox's first error in our shape. */
function reference(schema: TSchema, value: unknown): SchemaError | undefined {
  const e = Errors(schema, value).First();
  if (!e) return undefined;
  const kind =
    e.type === ValueErrorType.ObjectAdditionalProperties ? 'unknown-field'
    : e.type === ValueErrorType.ObjectRequiredProperty ? 'missing-field'
    : 'invalid';
  return { kind, path: e.path, message: e.message, value: e.value };
}

/** Ours against TypeBox's; the value must be the very same one TypeBox names. */
function agree(schema: TSchema, copy: object, value: unknown): void {
  const expected = reference(schema, value);
  for (const ours of [firstSchemaError(schema, value), firstSchemaError(copy, value)]) {
    const { value: v1, ...rest1 } = ours ?? { value: undefined };
    const { value: v2, ...rest2 } = expected ?? { value: undefined };
    deepStrictEqual(ours === undefined, expected === undefined, `error? ours ${JSON.stringify(ours)} typebox ${JSON.stringify(expected)}`);
    deepStrictEqual(rest1, rest2);
    if (!Object.is(v1, v2)) throw new Error(`different value at ${expected?.path}`);
  }
}

// ---- A schema-aware arbitrary: mostly valid documents, with deviations at random nodes ----

type S = TSchema & Record<string, any>;
const anyJson = fc.jsonValue({ maxDepth: 2 });
const wrongType = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
  fc.string({ maxLength: 8 }),
  fc.constant([]),
  fc.constant({}),
);
/** Keys worth adding as unknown fields: ordinary, escape-worthy, prototype-ish, numeric. */
const oddKey = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('__proto__', 'constructor', 'a/b', 'x~y', '0', '10', 'extra'));

/** Puts `key` on a copy of `obj` as an own data property, even `__proto__`. */
function withKey(obj: object, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...obj } as Record<string, unknown>;
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

function validString(s: S): fc.Arbitrary<string> {
  const base = s.pattern !== undefined ? fc.stringMatching(new RegExp(s.pattern)) : fc.string({ maxLength: 12 });
  return base.filter((v) => v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? Infinity));
}

function validNumber(s: S): fc.Arbitrary<number> {
  if (s[Kind] === 'Integer') {
    const min = s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : (s.minimum ?? -1e6);
    const max = s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : (s.maximum ?? 1e6);
    return fc.integer({ min, max });
  }
  return fc.double({
    min: s.exclusiveMinimum ?? s.minimum ?? -1e6,
    minExcluded: s.exclusiveMinimum !== undefined,
    max: s.exclusiveMaximum ?? s.maximum ?? 1e6,
    maxExcluded: s.exclusiveMaximum !== undefined,
    noNaN: true,
  });
}

/** Values that break this node's own rule (the type stays right where it can). */
function deviation(s: S, node: (s: S) => fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [wrongType, anyJson];
  switch (s[Kind]) {
    case 'String':
      options.push(fc.string({ maxLength: 10 }), fc.constant(''));
      if (s.maxLength !== undefined) options.push(fc.string({ minLength: s.maxLength + 1, maxLength: s.maxLength + 3 }));
      break;
    case 'Integer':
    case 'Number': {
      const edges = [s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum].filter((n) => n !== undefined) as number[];
      const near = [...edges, 0, s.multipleOf ?? 0].flatMap((n) => [n - 1, n, n + 1, n - 0.5, n + 0.5]);
      options.push(fc.constantFrom(...near), fc.constantFrom(Infinity, -Infinity, NaN, 2 ** 53, -0, 1e300));
      break;
    }
    case 'Literal': {
      const c = s.const;
      options.push(fc.constant(typeof c === 'string' ? `${c}x` : typeof c === 'boolean' ? !c : c + 1));
      break;
    }
    case 'Array':
      options.push(fc.array(node(s.items), { minLength: (s.maxItems ?? 3) + 1, maxLength: (s.maxItems ?? 3) + 2 }));
      if (s.minItems) options.push(fc.array(node(s.items), { maxLength: s.minItems - 1 }));
      break;
    case 'Record':
      // keys outside the pattern (accepted unless additionalProperties is false)
      options.push(fc.tuple(valid(s, node), oddKey, anyJson).map(([obj, k, v]) => withKey(obj as object, k, v)));
      break;
    case 'Object': {
      const required: string[] = s.required ?? [];
      const base = valid(s, node) as fc.Arbitrary<Record<string, unknown>>;
      if (required.length > 0) {
        options.push(fc.tuple(base, fc.constantFrom(...required)).map(([obj, k]) => { const copy = { ...obj }; delete copy[k]; return copy; }));
      }
      options.push(fc.tuple(base, oddKey, anyJson).map(([obj, k, v]) => withKey(obj, k, v)));
      // several problems at once: which one is first is the point
      options.push(
        fc.tuple(base, fc.subarray(required), fc.array(fc.tuple(oddKey, anyJson), { maxLength: 2 })).map(([obj, drop, extra]) => {
          const copy = { ...obj };
          for (const k of drop) delete copy[k];
          return extra.reduce((acc, [k, v]) => withKey(acc, k, v), copy);
        }),
      );
      break;
    }
  }
  return fc.oneof(...options);
}

/** A document this node accepts, built from children that may themselves deviate. */
function valid(s: S, node: (s: S) => fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  switch (s[Kind]) {
    case 'String':
      return validString(s);
    case 'Integer':
    case 'Number':
      return validNumber(s);
    case 'Boolean':
      return fc.boolean();
    case 'Null':
      return fc.constant(null);
    case 'Literal':
      return fc.constant(s.const);
    case 'Unknown':
      return anyJson;
    case 'Union':
      return fc.oneof(...(s.anyOf as S[]).map(node));
    case 'Array':
      return fc.array(node(s.items), { minLength: s.minItems ?? 0, maxLength: s.maxItems ?? 3 });
    case 'Record': {
      const [pattern, inner] = Object.entries(s.patternProperties as Record<string, S>)[0]!;
      return fc.dictionary(fc.stringMatching(new RegExp(pattern)), node(inner), { maxKeys: 3, noNullPrototype: true });
    }
    case 'Object': {
      const shape = Object.fromEntries(Object.entries(s.properties as Record<string, S>).map(([k, v]) => [k, node(v)]));
      return fc.record(shape, { requiredKeys: s.required ?? [], noNullPrototype: true });
    }
    default:
      throw new Error(`no arbitrary for kind ${String(s[Kind])}`);
  }
}

/** At each node, a deviation with probability 1/(1 + validWeight). */
function documents(schema: TSchema, validWeight: number): fc.Arbitrary<unknown> {
  const memo = new Map<S, fc.Arbitrary<unknown>>();
  const node = (s: S): fc.Arbitrary<unknown> => {
    let arb = memo.get(s);
    if (!arb) {
      // built once per node (schemas share sub-schemas and are not recursive)
      arb =
        validWeight === Infinity
          ? valid(s, node)
          : fc.oneof({ weight: validWeight, arbitrary: valid(s, node) }, { weight: 1, arbitrary: deviation(s, node) });
      memo.set(s, arb);
    }
    return arb;
  };
  return node(schema as S);
}

const schemas = await contractSchemas();

/** Parts of the subset the contracts do not use (yet), held to the same standard. */
const synthetic: Array<[string, TSchema]> = [
  ['string literal', Type.Literal('on')],
  ['number literal', Type.Literal(1)],
  ['boolean literal', Type.Literal(true)],
  ['closed record', Type.Record(Type.String({ pattern: '^[a-z]+$' }), Type.Integer(), { additionalProperties: false })],
  ['numeric bounds', Closed({
    n: Type.Number({ exclusiveMaximum: 10, minimum: -5, multipleOf: 0.5 }),
    i: Type.Integer({ exclusiveMinimum: -3, maximum: 8, multipleOf: 3 }),
  })],
  ['lengths', Closed({ s: Type.String({ minLength: 2, maxLength: 4 }), a: Type.Array(Type.Null(), { minItems: 1, maxItems: 2 }) })],
  ['unknown and open', Type.Object({ u: Type.Unknown(), o: Type.Optional(Type.Unknown()) })],
];

t.test('the contract schemas are found', async (t) => {
  t.ok(schemas.length > 20, `found ${schemas.length}`);
});

for (const [name, schema] of [...schemas, ...synthetic]) {
  t.test(`${name}: same first error as TypeBox`, async (t) => {
    const copy = JSON.parse(JSON.stringify(schema)) as object;
    const docs = fc.oneof(
      { weight: 2, arbitrary: documents(schema, Infinity) },
      { weight: 3, arbitrary: documents(schema, 25) },
      { weight: 3, arbitrary: documents(schema, 6) },
      { weight: 1, arbitrary: fc.jsonValue() },
    );
    let valid = 0;
    fc.assert(
      fc.property(docs, (doc) => {
        agree(schema, copy, doc);
        if (conforms(copy, doc)) valid += 1;
      }),
      { numRuns: 300 },
    );
    t.pass(`${valid}/300 valid`);
  });
}

// ---- Examples ----

const Example = Closed({
  name: Type.String({ minLength: 1 }),
  pids: Type.Integer({ minimum: 1 }),
  tags: Type.Optional(Type.Array(Type.String(), { maxItems: 2 })),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
});

t.test('a valid document passes', async (t) => {
  t.equal(firstSchemaError(Example, { name: 'a', pids: 3, tags: ['x'], env: { A: 'b' } }), undefined);
  t.ok(conforms(JSON.parse(JSON.stringify(Example)), { name: 'a', pids: 3 }));
});

t.test('with several problems, the first is the one TypeBox names first', async (t) => {
  // missing (in `required` order) before unknown before a wrong value
  const all = { zz: 1, pids: 0, tags: 'x' };
  t.match(firstSchemaError(Example, all), { kind: 'missing-field', path: '/name', message: 'Expected required property' });
  t.match(firstSchemaError(Example, { ...all, name: '' }), { kind: 'unknown-field', path: '/zz', message: 'Unexpected property', value: 1 });
  t.match(firstSchemaError(Example, { name: '', pids: 0 }), { kind: 'invalid', path: '/name', message: 'Expected string length greater or equal to 1' });
  t.match(firstSchemaError(Example, { name: 'a', pids: 0, tags: 'x' }), { path: '/pids', message: 'Expected integer to be greater or equal to 1' });
  t.match(firstSchemaError(Example, { name: 'a', pids: 1, tags: ['a', 'b', 'c'] }), { path: '/tags', message: 'Expected array length to be less or equal to 2' });
  for (const doc of [all, { ...all, name: '' }, { name: '', pids: 0 }, { name: 'a', pids: 1.5 }]) agree(Example, JSON.parse(JSON.stringify(Example)), doc);
});

t.test('__proto__ is an ordinary key: unknown in a closed object, checked in a record', async (t) => {
  const doc = JSON.parse('{"name":"a","pids":1,"__proto__":{"x":1}}');
  t.match(firstSchemaError(Example, doc), { kind: 'unknown-field', path: '/__proto__' });
  const inRecord = JSON.parse('{"name":"a","pids":1,"env":{"__proto__":5}}');
  t.match(firstSchemaError(Example, inRecord), { kind: 'invalid', path: '/env/__proto__', message: 'Expected string', value: 5 });
  agree(Example, JSON.parse(JSON.stringify(Example)), doc);
  agree(Example, JSON.parse(JSON.stringify(Example)), inRecord);
});

t.test('keys in paths are escaped as RFC 6901', async (t) => {
  t.match(firstSchemaError(Example, { name: 'a', pids: 1, 'a/b~c': 1 }), { path: '/a~1b~0c' });
});

t.test('an unsupported keyword throws instead of being ignored', async (t) => {
  const cases: Array<[string, object]> = [
    ['format', Type.Object({ a: Type.String({ format: 'email' }) })],
    ['allOf', Type.Intersect([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })])],
    ['not', Type.Not(Type.String())],
    ['$ref', Type.Ref('error')],
    ['uniqueItems', Type.Array(Type.String(), { uniqueItems: true })],
    ['type', { type: ['string', 'null'] }],
    ['additionalProperties', Type.Object({}, { additionalProperties: Type.String() })],
    ['minProperties', Type.Object({}, { minProperties: 1 })],
    ['additionalItems', Type.Tuple([Type.String()])],
    ['oneOf', { oneOf: [{ type: 'string' }] }],
  ];
  for (const [keyword, schema] of cases) {
    t.throws(() => firstSchemaError(schema, 'x'), { message: new RegExp(`unsupported schema keyword "${keyword.replace('$', '\\$')}"`) }, keyword);
  }
  // even where the value never reaches the unsupported part
  const deep = Closed({ a: Type.Optional(Type.String({ format: 'date' })) });
  t.throws(() => firstSchemaError(deep, {}), /unsupported schema keyword "format" at \/properties\/a/);
});

// One option layer (lib/shared/src/options.ts): a command's flags, their --help and their
// defaults come from the fields of its schema, and one normalisation turns parsed flags into
// the document, refusing (80) with the flag the user typed and what was expected.
import t from 'tap';
import { Closed, Type, AbsolutePath } from '../dist/schema.js';
import { defaultsOf, flagsOf, givenOf, normalise, readOptions } from '../dist/options.js';
import type { Validator } from '../dist/json-input.js';

const Demo = Closed({
  root: Type.String({ ...AbsolutePath, flag: 'root', description: 'permitted root', defaultText: '$HOME/sandbox' }),
  count: Type.String({ flag: 'n', pattern: '^[1-9][0-9]*$', default: '20', description: 'how many', expect: 'a whole number' }),
  allowHosts: Type.Array(Type.String({ minLength: 1 }), {
    flag: 'allow-host',
    default: [],
    description: 'also allow this host; repeatable',
  }),
  dryRun: Type.Boolean({ flag: 'dry-run', default: false, description: 'change nothing' }),
  inner: Closed({ memory: Type.String({ flag: 'memory', description: 'memory limit', default: '4g' }) }),
  internal: Type.String({ default: 'x', description: 'no flag: not on the command line' }),
});

/** A validator in the generated validators' shape, for the demo schema: the checks this test needs. */
const validate = ((doc: Record<string, unknown>) => {
  const errors = [];
  if (typeof doc['root'] !== 'string' || !String(doc['root']).startsWith('/'))
    errors.push({ instancePath: '/root', keyword: 'pattern', params: { pattern: '^/' } });
  else if (!/^[1-9][0-9]*$/.test(String(doc['count'])))
    errors.push({ instancePath: '/count', keyword: 'pattern', params: { pattern: '^[1-9][0-9]*$' }, message: 'must match pattern' });
  else if (!Array.isArray(doc['allowHosts']) || doc['allowHosts'].some((h) => h === ''))
    errors.push({ instancePath: '/allowHosts/0', keyword: 'minLength', params: {} });
  (validate as Validator<unknown>).errors = errors;
  return errors.length === 0;
}) as unknown as Validator<Record<string, unknown>>;

t.test(
  "the flags come from the fields that name one, in order, a nested object's in its place, with the description and the default",
  async (t) => {
    t.same(flagsOf(Demo), [
      { flag: 'root', type: 'string', describe: 'permitted root (default $HOME/sandbox)' },
      { flag: 'n', type: 'string', describe: 'how many (default 20)' },
      { flag: 'allow-host', type: 'string', describe: 'also allow this host; repeatable' },
      { flag: 'dry-run', type: 'boolean', describe: 'change nothing' },
      { flag: 'memory', type: 'string', describe: 'memory limit (default 4g)' },
    ]);
    t.same(
      flagsOf(Demo, ['n', 'memory']).map((f) => f.flag),
      ['n', 'memory'],
      'a command may take some of them',
    );
  },
);

t.test(
  'the parsed flags (camelCase, as the skeleton hands them) become fields: a repeatable one a list, a boolean only when set',
  async (t) => {
    t.same(givenOf(Demo, { root: '/r', n: '5', allowHost: 'a.example', dryRun: false }), {
      root: '/r',
      count: '5',
      allowHosts: ['a.example'],
    });
    t.same(givenOf(Demo, { allowHost: ['a', 'b'], dryRun: true }), { allowHosts: ['a', 'b'], dryRun: true });
    t.same(defaultsOf(Demo), { count: '20', allowHosts: [], dryRun: false, internal: 'x' });
  },
);

t.test('one normalisation: fixed defaults, then computed ones, then what was given; the document the schema holds', async (t) => {
  t.same(readOptions(validate, Demo, {}, { root: '/home/u/sandbox' }), {
    count: '20',
    allowHosts: [],
    dryRun: false,
    internal: 'x',
    root: '/home/u/sandbox',
  });
  t.same(readOptions(validate, Demo, { root: '/srv', n: '3' }, { root: '/home/u/sandbox' }), {
    count: '3',
    allowHosts: [],
    dryRun: false,
    internal: 'x',
    root: '/srv',
  });
});

t.test('a refusal is 80, names the flag as typed (-n, --root) and says what was expected', async (t) => {
  t.throws(() => readOptions(validate, Demo, { root: 'relative' }), {
    exitCode: 80,
    code: 'relative-root',
    message: '--root: expected an absolute path, got "relative"',
  });
  t.throws(() => readOptions(validate, Demo, { root: '/r', n: 'lots' }), {
    exitCode: 80,
    code: 'bad-flag',
    message: '-n: expected a whole number, got "lots"',
  });
  t.throws(
    () => normalise(validate, { schema: Demo, nameOf: (f) => `request.${f}` }, { root: 'x' }),
    { message: /^request\.root: expected an absolute path/ },
    "a caller's own names win (a node's request)",
  );
});

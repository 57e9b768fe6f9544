// The name rules as a table: exact hosts, *.domain (strict subdomains only), port defaults,
// deny wins, IPv6 literals, case and trailing dots; and the entries the config refuses.
import t from 'tap';
import { decideTarget, parseEntry, parsePolicy, parseTarget } from '../../dist/index.js';

type Row = [allow: string[], deny: string[], target: string, rule: string, entry?: string | null];

const rows: Row[] = [
  // exact names, default port 443
  [['api.openai.com'], [], 'api.openai.com:443', 'allowlisted', 'api.openai.com'],
  [['api.openai.com'], [], 'api.openai.com', 'allowlisted', 'api.openai.com'],
  [['api.openai.com'], [], 'api.openai.com:80', 'bad-port', null],
  [['api.openai.com'], [], 'api.openai.com:22', 'bad-port', null],
  [['api.openai.com'], [], 'openai.com:443', 'not-allowlisted', null],
  [['api.openai.com'], [], 'x.api.openai.com:443', 'not-allowlisted', null],
  [['api.openai.com'], [], 'api.openai.com.evil.example:443', 'not-allowlisted', null],
  [['api.openai.com'], [], 'evilapi.openai.com:443', 'not-allowlisted', null],
  // explicit ports
  [['api.openai.com:8443'], [], 'api.openai.com:8443', 'allowlisted', 'api.openai.com:8443'],
  [['api.openai.com:8443'], [], 'api.openai.com:443', 'bad-port', null],
  [['api.openai.com:80', 'api.openai.com'], [], 'api.openai.com:80', 'allowlisted', 'api.openai.com:80'],
  // *.domain: strict subdomains at any depth, never the domain itself
  [['*.openai.com'], [], 'api.openai.com:443', 'allowlisted', '*.openai.com'],
  [['*.openai.com'], [], 'a.b.openai.com:443', 'allowlisted', '*.openai.com'],
  [['*.openai.com'], [], 'openai.com:443', 'not-allowlisted', null],
  [['*.openai.com'], [], 'notopenai.com:443', 'not-allowlisted', null],
  [['*.openai.com'], [], 'openai.com.evil.example:443', 'not-allowlisted', null],
  [['*.openai.com:8443'], [], 'api.openai.com:443', 'bad-port', null],
  // deny wins; a deny entry without a port denies every port
  [['*.openai.com'], ['evil.openai.com'], 'evil.openai.com:443', 'denylisted', 'evil.openai.com'],
  [['*.openai.com'], ['evil.openai.com'], 'api.openai.com:443', 'allowlisted', '*.openai.com'],
  [['api.openai.com:80'], ['api.openai.com'], 'api.openai.com:80', 'denylisted', 'api.openai.com'],
  [['api.openai.com'], ['api.openai.com:80'], 'api.openai.com:443', 'allowlisted', 'api.openai.com'],
  [['api.openai.com'], ['*.openai.com'], 'api.openai.com:443', 'denylisted', '*.openai.com'],
  [[], ['*.openai.com'], 'api.openai.com:443', 'denylisted', '*.openai.com'],
  // case-insensitive, one trailing dot ignored, on either side
  [['API.OpenAI.com'], [], 'api.openai.com:443', 'allowlisted', 'API.OpenAI.com'],
  [['api.openai.com'], [], 'API.OPENAI.COM:443', 'allowlisted', 'api.openai.com'],
  [['api.openai.com'], [], 'api.openai.com.:443', 'allowlisted', 'api.openai.com'],
  [['api.openai.com.'], [], 'api.openai.com:443', 'allowlisted', 'api.openai.com.'],
  [['*.OpenAI.com'], [], 'Chat.openai.COM.:443', 'allowlisted', '*.OpenAI.com'],
  // IP literals match only the same literal, compared in canonical form
  [['203.0.113.10'], [], '203.0.113.10:443', 'allowlisted', '203.0.113.10'],
  [['203.0.113.10'], [], '203.0.113.11:443', 'not-allowlisted', null],
  [['[2001:db8::10]'], [], '[2001:db8::10]:443', 'allowlisted', '[2001:db8::10]'],
  [['[2001:db8::10]'], [], '[2001:0DB8:0:0::0:10]:443', 'allowlisted', '[2001:db8::10]'],
  [['[2001:db8::10]:8443'], [], '[2001:db8::10]:443', 'bad-port', null],
  [['[2001:db8::10]'], [], '[::ffff:203.0.113.10]:443', 'not-allowlisted', null],
  [['203.0.113.10'], [], '[::ffff:203.0.113.10]:443', 'not-allowlisted', null],
  [['*.openai.com'], [], '[2001:db8::10]:443', 'not-allowlisted', null],
  // an empty allowlist allows nothing
  [[], [], 'api.openai.com:443', 'not-allowlisted', null],
];

let ran = 0;
for (const [allow, deny, target, rule, entry] of rows) {
  t.test(`allow ${JSON.stringify(allow)} deny ${JSON.stringify(deny)}: ${target} is ${rule}`, async (t) => {
    const parsed = parseTarget(target);
    t.ok(parsed, `${target} parses`);
    const decided = decideTarget(parsePolicy(allow, deny), parsed!);
    t.equal(decided.rule, rule);
    t.equal(decided.decision, rule === 'allowlisted' ? 'allowed' : 'denied');
    if (entry !== undefined) t.equal(decided.entry, entry);
    ran += 1;
  });
}
t.test('every rule row ran', async (t) => t.equal(ran, rows.length));

const targets: [string, { host: string; kind: string; port: number } | undefined][] = [
  ['[2001:db8::1]:443', { host: '2001:db8::1', kind: 'ipv6', port: 443 }],
  ['[2001:db8::1]', { host: '2001:db8::1', kind: 'ipv6', port: 443 }],
  ['[::1]:8080', { host: '::1', kind: 'ipv6', port: 8080 }],
  ['[::ffff:127.0.0.1]:443', { host: '::ffff:7f00:1', kind: 'ipv6', port: 443 }],
  ['2001:db8::1:443', undefined], // an IPv6 literal without brackets is ambiguous
  ['[2001:db8::1', undefined],
  ['[2001:db8::1]x', undefined],
  ['[fe80::1%eth0]:443', undefined], // zone ids are refused
  ['[203.0.113.1]:443', undefined],
  ['example.com:0', undefined],
  ['example.com:65536', undefined],
  ['example.com:-1', undefined],
  ['example.com:', undefined],
  ['exa mple.com:443', undefined],
  ['exam%70le.com:443', undefined],
  ['ex@mple.com:443', undefined],
  ['-bad.example:443', undefined],
  ['a..b:443', undefined],
  ['127.1:443', undefined], // an IPv4 number to URL parsers, not a DNS name
  ['2130706433:443', undefined],
  ['0177.0.0.1:443', undefined], // leading zeros: octal to some parsers
  ['münchen.example:443', undefined],
  [`${'a'.repeat(64)}.example:443`, undefined],
  ['localhost:443', { host: 'localhost', kind: 'name', port: 443 }],
  ['EXAMPLE.com.:8443', { host: 'example.com', kind: 'name', port: 8443 }],
];
for (const [raw, expected] of targets) {
  t.test(
    `target ${JSON.stringify(raw)} ${expected ? `is ${expected.kind} ${expected.host} port ${expected.port}` : 'is refused'}`,
    async (t) => {
      const parsed = parseTarget(raw);
      if (!expected) return void t.equal(parsed, undefined);
      t.same(parsed && { host: parsed.host.text, kind: parsed.host.kind, port: parsed.port }, expected);
    },
  );
}

for (const bad of [
  '*.com',
  '*.203.0.113.1',
  '*.[2001:db8::1]',
  'host:0',
  'host:99999',
  '[::1',
  'a b',
  '*.*.example.com',
  'exa%41mple.com',
  '',
]) {
  t.test(`the config entry ${JSON.stringify(bad)} is refused with exit 80 naming it`, async (t) => {
    t.throws(() => parseEntry(bad, 'allow[0]'), { exitCode: 80, code: 'invalid-field', message: /^allow\[0\]: / });
  });
}

// --ca-file gives the session's agent certificates to trust besides the image's roots (a TLS
// proxy that re-signs, a test CA). The file is read and checked before anything is staged: a
// missing or non-regular file is refused with 86, anything but PEM certificates (a private key,
// garbage, no certificate) with 80, and nothing runs. Accepted, only its certificate blocks are
// copied, read-only at /run/sandbox-ca/ca.pem, with NODE_EXTRA_CA_CERTS and CODEX_CA_CERTIFICATE
// set by name (never SSL_CERT_FILE, which replaces the system roots); the copy is gone with the
// session, and plan and the ledger name the file and its certificates.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeTestCa, tempDir } from '@agent-sandbox/testkit';
import { sessionNeeds, nothingLeft, sessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds();

const dir = await tempDir(t, 'astest-ca-');
const ca = await makeTestCa(dir, ['proxy.example']);
const keyPem = ca.servers['proxy.example']!.key;
const write = (name: string, text: string) => {
  writeFileSync(path.join(dir, name), text);
  return path.join(dir, name);
};
// A bundle as users have them: a comment line, then the certificates.
const bundle = write('bundle.pem', `# corporate proxy roots\n${ca.certPem}${ca.servers['proxy.example']!.cert}`);

const refusals: { label: string; file: () => Promise<string> | string; exit: number; message: RegExp }[] = [
  {
    label: 'a missing file',
    file: () => path.join(dir, 'none-such.pem'),
    exit: 86,
    message: /--ca-file .*none-such\.pem: cannot be resolved \(ENOENT\)/,
  },
  {
    label: 'a directory',
    file: () => (mkdirSync(path.join(dir, 'a-dir'), { recursive: true }), path.join(dir, 'a-dir')),
    exit: 86,
    message: /expected a regular file/,
  },
  {
    label: 'a FIFO (never read: it would block)',
    file: () => (execFileSync('mkfifo', [path.join(dir, 'fifo')]), path.join(dir, 'fifo')),
    exit: 86,
    message: /expected a regular file/,
  },
  { label: 'a relative path', file: () => 'bundle.pem', exit: 80, message: /--ca-file: expected an absolute path/ },
  { label: 'a file with no certificate', file: () => write('text.pem', 'not a certificate\n'), exit: 80, message: /no PEM certificate/ },
  {
    label: 'a certificate with its private key',
    file: () => write('with-key.pem', `${ca.certPem}${keyPem}`),
    exit: 80,
    message: /holds a PRIVATE KEY block; expected PEM certificates only/,
  },
  {
    label: 'a certificate block that does not parse',
    file: () => write('garbage.pem', '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n'),
    exit: 80,
    message: /certificate 1 does not parse/,
  },
];
let rows = 0;

for (const row of refusals) {
  t.test(`--ca-file naming ${row.label} is refused with ${row.exit} before anything is staged`, requirements, async (t) => {
    const fx = await sessionFixture(t, `ca${rows}`);
    const out = await fx.run(['run', ...fx.flags, '--ca-file', await row.file(), '--', ...fx.agentArgs(0)]);
    t.equal(out.exitCode, row.exit, out.stderr);
    t.match(out.stderr, row.message, 'the message names the flag and the cause');
    t.notMatch(out.stderr, /PRIVATE KEY-----|MII/, 'no PEM text in the message');
    t.equal(fx.ranInWorkspace(), undefined, 'the agent did not run');
    t.same(await fx.leftovers(), nothingLeft, 'nothing is left on the host');
    t.match(fx.ledgerLines().pop(), { outcome: 'refused', exitCode: row.exit });
    rows++;
  });
}

t.test('every refusal row ran', requirements, async (t) => {
  t.equal(rows, refusals.length, `${rows} of ${refusals.length} rows`);
});

t.test('plan mounts the copy read-only and names the variables; never SSL_CERT_FILE', requirements, async (t) => {
  const fx = await sessionFixture(t, 'caplan');
  const out = await fx.run(['plan', ...fx.flags, '--ca-file', bundle, '--', ...fx.agentArgs(0)]);
  t.equal(out.exitCode, 0, out.stderr);
  const plan = JSON.parse(out.stdout);
  t.same(plan.egress.ca.file, bundle, 'the file given');
  t.same(
    plan.egress.ca.certificates.map((c: { subject: string }) => c.subject),
    ['CN=agent-sandbox test CA (one run)', 'CN=proxy.example'],
    'its two certificates',
  );
  t.same(
    plan.mounts.filter((m: { destination: string }) => m.destination === '/run/sandbox-ca/ca.pem'),
    [{ source: path.join(fx.root, 'secrets', fx.id, 'ca', 'ca.pem'), destination: '/run/sandbox-ca/ca.pem', readOnly: true }],
    'one read-only mount of the staged copy',
  );
  t.match(plan.containerEnv, { NODE_EXTRA_CA_CERTS: '/run/sandbox-ca/ca.pem', CODEX_CA_CERTIFICATE: '/run/sandbox-ca/ca.pem' });
  t.ok(plan.runPlan.env.includes('NODE_EXTRA_CA_CERTS') && plan.runPlan.env.includes('CODEX_CA_CERTIFICATE'), 'passed by name');
  t.notOk(plan.runPlan.env.includes('SSL_CERT_FILE'), 'SSL_CERT_FILE is not set');
  t.notOk(out.stdout.includes('BEGIN CERTIFICATE'), 'the plan carries no PEM text');
});

t.test('the session reads the certificates only, read-only, and the copy is gone afterwards', requirements, async (t) => {
  const fx = await sessionFixture(t, 'carun');
  const seen = `/sandbox/workspaces/${fx.id}/ca-seen`;
  const script = `cat "$NODE_EXTRA_CA_CERTS" > ${seen}; test "$CODEX_CA_CERTIFICATE" = "$NODE_EXTRA_CA_CERTS" && echo same >> ${seen}; if (: > "$NODE_EXTRA_CA_CERTS") 2>/dev/null; then echo writable >> ${seen}; else echo read-only >> ${seen}; fi`;
  const flags = fx.flags.filter((f, i) => f !== '--agent-bin' && fx.flags[i - 1] !== '--agent-bin');
  const out = await fx.run(['run', ...flags, '--ca-file', bundle, '--agent-bin', '/bin/sh', '--', '-c', script]);
  t.equal(out.exitCode, 0, out.stderr);
  const text = readFileSync(path.join(fx.workspace, 'ca-seen'), 'utf8');
  t.equal(
    text,
    `${ca.certPem}${ca.servers['proxy.example']!.cert}same\nread-only\n`,
    'the two certificates without the comment line, one path for both CLIs, read-only',
  );
  t.same(await fx.leftovers(), nothingLeft, 'the staged copy is removed with the session');
  const line = fx.ledgerLines().pop();
  t.same(line.egress.ca.certificates.length, 2, 'the ledger names both certificates');
  t.equal(line.egress.ca.file, bundle);
});

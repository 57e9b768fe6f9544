// A bad plan is refused with exit 80 and a message naming the field; nothing starts.
import t from 'tap';
import { runBin } from '@agent-sandbox/testkit';

const limits = { memory: '512m', memorySwap: '512m', pids: 64, cpus: 1, cpuShares: 256 };
const good = { image: 'localhost/agent-sandbox-busybox:latest', sessionId: 'refuse1', limits, command: ['true'] };

interface Row {
  claim: string;
  input: unknown;
  args?: string[];
  field: string;
  code: string;
}

const withLimits = (patch: Record<string, unknown>) => ({ ...good, limits: { ...limits, ...patch } });
const without = (key: string) => Object.fromEntries(Object.entries(limits).filter(([k]) => k !== key));

const rows: Row[] = [
  { claim: 'an unknown top-level field', input: { ...good, privileged: true }, field: 'input.privileged', code: 'unknown-field' },
  {
    claim: 'a slice parent with a backslash that is not a \\xNN escape',
    input: { ...good, cgroupParent: 'a\\b.slice' },
    field: 'input.cgroupParent',
    code: 'invalid-field',
  },
  {
    claim: 'a relative cgroup parent that is not a slice',
    input: { ...good, cgroupParent: 'agent-sandbox/x' },
    field: 'input.cgroupParent',
    code: 'invalid-field',
  },
  { claim: 'an unknown limits field', input: withLimits({ swappiness: 0 }), field: 'input.limits.swappiness', code: 'unknown-field' },
  {
    claim: 'an unknown mount field',
    input: { ...good, mounts: [{ source: '/tmp', destination: '/w', readOnly: false, options: 'rbind' }] },
    field: 'input.mounts[0].options',
    code: 'unknown-field',
  },
  {
    claim: 'a relative mount source',
    input: { ...good, mounts: [{ source: 'tmp', destination: '/w', readOnly: false }] },
    field: 'input.mounts[0].source',
    code: 'invalid-field',
  },
  {
    claim: 'a relative mount destination',
    input: { ...good, mounts: [{ source: '/tmp', destination: 'w', readOnly: false }] },
    field: 'input.mounts[0].destination',
    code: 'invalid-field',
  },
  {
    claim: 'a dot-dot segment in a mount source',
    input: { ...good, mounts: [{ source: '/tmp/../etc', destination: '/w', readOnly: true }] },
    field: 'input.mounts[0].source',
    code: 'invalid-field',
  },
  {
    claim: 'a comma in a mount path (it would add --mount options)',
    input: { ...good, mounts: [{ source: '/tmp', destination: '/w,ro=false', readOnly: true }] },
    field: 'input.mounts[0].destination',
    code: 'invalid-field',
  },
  {
    claim: 'a mount over the container root',
    input: { ...good, mounts: [{ source: '/tmp', destination: '/', readOnly: true }] },
    field: 'input.mounts[0].destination',
    code: 'invalid-field',
  },
  {
    claim: 'two mounts at one destination',
    input: {
      ...good,
      mounts: [
        { source: '/tmp', destination: '/w', readOnly: true },
        { source: '/var/tmp', destination: '/w', readOnly: false },
      ],
    },
    field: 'input.mounts[1].destination',
    code: 'duplicate-destination',
  },
  {
    claim: 'a missing readOnly flag',
    input: { ...good, mounts: [{ source: '/tmp', destination: '/w' }] },
    field: 'input.mounts[0].readOnly',
    code: 'missing-field',
  },
  {
    claim: 'limits missing',
    input: { image: good.image, sessionId: 's', command: ['true'] },
    field: 'input.limits',
    code: 'missing-field',
  },
  { claim: 'limits.memory missing', input: { ...good, limits: without('memory') }, field: 'input.limits.memory', code: 'missing-field' },
  {
    claim: 'limits.memorySwap missing',
    input: { ...good, limits: without('memorySwap') },
    field: 'input.limits.memorySwap',
    code: 'missing-field',
  },
  { claim: 'limits.pids missing', input: { ...good, limits: without('pids') }, field: 'input.limits.pids', code: 'missing-field' },
  { claim: 'limits.cpus missing', input: { ...good, limits: without('cpus') }, field: 'input.limits.cpus', code: 'missing-field' },
  {
    claim: 'limits.cpuShares missing',
    input: { ...good, limits: without('cpuShares') },
    field: 'input.limits.cpuShares',
    code: 'missing-field',
  },
  { claim: 'memory "0"', input: withLimits({ memory: '0' }), field: 'input.limits.memory', code: 'invalid-field' },
  { claim: 'memory 0 bytes', input: withLimits({ memory: 0 }), field: 'input.limits.memory', code: 'invalid-field' },
  { claim: 'memory -1 (podman: unlimited)', input: withLimits({ memory: -1 }), field: 'input.limits.memory', code: 'invalid-field' },
  {
    claim: "memory below podman's 6m minimum",
    input: withLimits({ memory: '1m', memorySwap: '1m' }),
    field: 'input.limits.memory',
    code: 'invalid-field',
  },
  {
    claim: 'memorySwap -1 (podman: unlimited swap)',
    input: withLimits({ memorySwap: -1 }),
    field: 'input.limits.memorySwap',
    code: 'invalid-field',
  },
  { claim: 'memorySwap below memory', input: withLimits({ memorySwap: '256m' }), field: 'input.limits.memorySwap', code: 'invalid-field' },
  { claim: 'pids 0', input: withLimits({ pids: 0 }), field: 'input.limits.pids', code: 'invalid-field' },
  { claim: 'pids -1 (podman: unlimited)', input: withLimits({ pids: -1 }), field: 'input.limits.pids', code: 'invalid-field' },
  { claim: 'pids not an integer', input: withLimits({ pids: 1.5 }), field: 'input.limits.pids', code: 'invalid-field' },
  { claim: 'cpus 0', input: withLimits({ cpus: 0 }), field: 'input.limits.cpus', code: 'invalid-field' },
  { claim: 'cpus negative', input: withLimits({ cpus: -2 }), field: 'input.limits.cpus', code: 'invalid-field' },
  { claim: 'cpus as a string', input: withLimits({ cpus: '4' }), field: 'input.limits.cpus', code: 'invalid-field' },
  { claim: 'cpuShares 0', input: withLimits({ cpuShares: 0 }), field: 'input.limits.cpuShares', code: 'invalid-field' },
  {
    claim: 'a network other than none or a named netns',
    input: { ...good, network: 'host' },
    field: 'input.network',
    code: 'invalid-field',
  },
  {
    claim: 'an env entry that is a value, not a name',
    input: { ...good, env: ['TOKEN=abc'] },
    field: 'input.env[0]',
    code: 'invalid-field',
  },
  { claim: 'uid 0', input: { ...good, user: '0:0' }, field: 'input.user', code: 'invalid-field' },
  { claim: 'an empty command', input: { ...good, command: [] }, field: 'input.command', code: 'invalid-field' },
  { claim: 'a command both in the plan and after --', input: good, args: ['--', 'id'], field: 'input.command', code: 'command-twice' },
  { claim: 'a session id with a slash', input: { ...good, sessionId: '../x' }, field: 'input.sessionId', code: 'invalid-field' },
  { claim: 'malformed JSON', input: '{"image":', field: 'stdin', code: 'malformed-json' },
];

let ran = 0;
for (const row of rows) {
  t.test(`refused with 80: ${row.claim}`, async (t) => {
    const out = await runBin('sandbox-run', row.args ?? [], { input: row.input });
    t.equal(out.exitCode, 80, out.stderr);
    t.equal(out.json?.ok, false);
    t.equal(out.json?.error?.code, row.code);
    t.ok(String(out.json?.error?.message).startsWith(row.field), `message names ${row.field}: ${out.json?.error?.message}`);
    ran += 1;
  });
}

t.test('every row ran', async (t) => {
  t.equal(ran, rows.length);
  t.ok(rows.length >= 30);
});

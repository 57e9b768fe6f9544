// A user who cannot read the kernel log (dmesg_restrict=1, no CAP_SYSLOG) gets
// "unreadable" with the reason, never a guess. Run for real as nobody.
import t from 'tap';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { readKmsg } from '../../dist/verdict/kernel-log.js';

const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'verdict', 'kernel-log.js');

t.test('root reads /dev/kmsg and gets records', { skip: process.getuid?.() !== 0 ? 'not root here' : false }, async (t) => {
  const read = readKmsg();
  t.equal(read.state, 'read');
  if (read.state === 'read') t.ok(read.records.length > 0);
});

const restricted = readFileSync('/proc/sys/kernel/dmesg_restrict', 'utf8').trim() === '1';

t.test(
  'as user nobody the kernel log is unreadable and the evidence says why',
  { skip: restricted ? false : 'dmesg_restrict is 0 here: an unprivileged user may read the log' },
  async (t) => {
    const script = `import(${JSON.stringify(dist)}).then((m) => console.log(JSON.stringify(m.readKmsg())))`;
    const out = await execa('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'node', '-e', script], {
      reject: false,
      cwd: '/',
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
      extendEnv: false,
    });
    // (tap's process tracker, injected into every child, cannot write its file as nobody: stderr noise only)
    t.equal(out.exitCode, 0, 'node ran as nobody');
    const read = JSON.parse(String(out.stdout));
    t.equal(read.state, 'unreadable');
    t.match(read.error, /^EPERM: reading the kernel log needs CAP_SYSLOG/);
  },
);

// The one definition of a session's limits: sizes and durations as the user types them (what
// podman accepts), every refusal naming the flag, and the defaults following from the rule.
import t from 'tap';
import {
  checkLimits,
  defaultLimits,
  deriveLimits,
  formatDuration,
  formatSize,
  limitsFrom,
  parseDuration,
  parseSize,
} from '../dist/limits.js';

t.test('sizes are read as podman reads them: binary units, optional b/ib, decimals, bytes', async (t) => {
  const rows: [string | number, number][] = [
    ['512m', 512 * 1024 ** 2],
    ['512M', 512 * 1024 ** 2],
    ['4g', 4 * 1024 ** 3],
    ['1.5g', 1.5 * 1024 ** 3],
    ['512MiB', 512 * 1024 ** 2],
    ['512mb', 512 * 1024 ** 2],
    ['268435456', 268435456],
    [268435456, 268435456],
    ['64k', 65536],
    ['1t', 1024 ** 4],
  ];
  for (const [text, bytes] of rows) t.equal(parseSize('--memory', text), bytes, `${text} is ${bytes} bytes`);
});

t.test('a size that is not one is refused (80), naming the flag the user typed', async (t) => {
  for (const bad of ['lots', '', '-1', '0', '12x', '1.5.5g', 'g']) {
    t.throws(() => parseSize('--memory', bad), { exitCode: 80, code: 'invalid-field', message: /^--memory: / }, JSON.stringify(bad));
  }
});

t.test('durations: seconds, or h/m/s parts in order', async (t) => {
  const rows: [string, number][] = [
    ['90', 90],
    ['90s', 90],
    ['45m', 2700],
    ['2h', 7200],
    ['1h30m', 5400],
    ['1h0m5s', 3605],
  ];
  for (const [text, seconds] of rows) t.equal(parseDuration('--timeout', text), seconds, `${text} is ${seconds} s`);
  for (const bad of ['', '0', '0s', 'soon', '30m1h', '-5', '1d'])
    t.throws(() => parseDuration('--timeout', bad), { exitCode: 80, message: /^--timeout: / }, JSON.stringify(bad));
  t.equal(formatDuration(5400), '1h30m');
  t.equal(formatDuration(90), '1m30s');
  t.equal(formatSize(4 * 1024 ** 3), '4g');
  t.equal(formatSize(1536 * 1024 ** 2), '1536m');
});

t.test('memory below 6m, swap below memory, and unbounded values are refused, naming the flag', async (t) => {
  t.throws(() => limitsFrom({ memory: '1m' }), { exitCode: 80, message: /^--memory: must be at least 6m/ });
  t.throws(() => limitsFrom({ memory: '512m', memorySwap: '256m' }), {
    exitCode: 80,
    message: /^--memory-swap: must be at least --memory/,
  });
  t.throws(() => limitsFrom({ pids: '0' }), { exitCode: 80, message: /^--pids: / });
  t.throws(() => limitsFrom({ pids: '-1' }), { exitCode: 80, message: /^--pids: / });
  t.throws(() => limitsFrom({ cpus: '0' }), { exitCode: 80, message: /^--cpus: / });
  t.throws(() => limitsFrom({ disk: '1m' }), { exitCode: 80, message: /^--disk: must be at least 64m/ });
  const fields = {
    memory: 'input.limits.memory',
    memorySwap: 'input.limits.memorySwap',
    pids: 'p',
    cpus: 'c',
    cpuShares: 's',
    disk: 'd',
    timeout: 't',
  };
  t.throws(
    () => checkLimits({ ...defaultLimits, memory: '1m', memorySwap: '1m' }, fields),
    { message: /^input\.limits\.memory: / },
    'a JSON caller gets its own field names',
  );
});

t.test('--memory alone means no swap; the defaults are what the rule gives', async (t) => {
  t.same(limitsFrom({ memory: '512m' }), { ...defaultLimits, memory: '512m', memorySwap: '512m' });
  t.same(limitsFrom({}), defaultLimits);
  t.same(defaultLimits, { memory: '4g', memorySwap: '4g', pids: 512, cpus: 2, cpuShares: 512, disk: '8g', timeout: '2h' });
  t.same(
    deriveLimits({ memoryMiB: 600, pids: 100, cpuPerWallSecond: 1.6 }),
    { ...defaultLimits, memory: '16g', memorySwap: '16g', pids: 1024, cpus: 4 },
    'the rule scales with the measurement',
  );
});

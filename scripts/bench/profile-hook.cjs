// Preloaded into a launcher by section 11 (`NODE_OPTIONS=--require <this>`): timestamps of its
// steps without ptrace (strace -f stops every syscall and triples a run). Records when node
// started and when this ran, the bundle's load, every child process (spawn and exit) and the
// synchronous file-system calls that mark the launcher's steps, and at its exit its own CPU
// (node's, without its children); appends them as JSON lines to $PROFILE_HOOK_OUT when the
// process exits. Times are epoch milliseconds.
'use strict';
const { performance } = require('node:perf_hooks');
const fs = require('node:fs');
const cp = require('node:child_process');
const Module = require('node:module');

const out = process.env.PROFILE_HOOK_OUT;
const now = () => performance.timeOrigin + performance.now();
const events = [
  { t: performance.timeOrigin, what: 'node-start' },
  { t: now(), what: 'preload' },
];
const note = (t, what) => events.push({ t, what });
const argvText = (argv) => (Array.isArray(argv) ? argv.slice(0, 4).join(' ') : '').slice(0, 160);

const load = Module._load;
Module._load = function (request, ...rest) {
  const start = now();
  const loaded = load.call(this, request, ...rest);
  if (/\.bundle\.cjs$/.test(request)) note(start, `bundle-load ${(now() - start).toFixed(1)}`);
  return loaded;
};

// A shim with the code cache (lib/shared/src/bin-entry.cts) compiles the bundle with vm.Script
// and calls its wrapper: the load is from the compile's start to the wrapper's return.
const vm = require('node:vm');
vm.Script = class extends vm.Script {
  constructor(code, options) {
    const start = now();
    super(code, options);
    this.profileStart = start;
    this.profileFile = typeof options === 'object' && options !== null ? options.filename : undefined;
  }
  runInThisContext(...args) {
    const wrapper = super.runInThisContext(...args);
    if (!/\.bundle\.cjs$/.test(this.profileFile ?? '') || typeof wrapper !== 'function') return wrapper;
    const start = this.profileStart;
    const cached = this.cachedDataRejected === false ? 'cached' : 'compiled';
    return function (...rest) {
      try {
        return wrapper.apply(this, rest);
      } finally {
        note(start, `bundle-load ${(now() - start).toFixed(1)} ${cached}`);
      }
    };
  }
};

for (const name of ['spawn', 'execFile']) {
  const original = cp[name];
  cp[name] = function (cmd, argv, ...rest) {
    const child = original.call(this, cmd, argv, ...rest);
    const label = `${cmd} ${argvText(argv)}`;
    note(now(), `spawn ${label}`);
    child.once('exit', () => note(now(), `exit ${label}`));
    return child;
  };
}
for (const name of ['spawnSync', 'execFileSync']) {
  const original = cp[name];
  cp[name] = function (cmd, argv, ...rest) {
    const start = now();
    try {
      return original.call(this, cmd, argv, ...rest);
    } finally {
      note(start, `sync ${cmd} ${argvText(argv)} | ${(now() - start).toFixed(1)}`);
    }
  };
}
// Not the sampler's and the watchdogs' reads (every few ms under /proc and the cgroup tree).
const quiet = /^\/proc\/|^\/sys\/fs\/cgroup\/.+\/(pids|memory|cpuacct)\.|\.(c?js)$/;
for (const name of ['readdirSync', 'readFileSync', 'writeFileSync', 'appendFileSync', 'rmdirSync', 'mkdirSync', 'openSync']) {
  const original = fs[name];
  fs[name] = function (file, ...rest) {
    if (typeof file === 'string' && !quiet.test(file)) note(now(), `${name} ${file}`);
    return original.call(this, file, ...rest);
  };
}

process.on('exit', (code) => {
  note(now(), `exit-code ${code}`);
  const cpu = process.cpuUsage();
  note(now(), `own-cpu ${((cpu.user + cpu.system) / 1000).toFixed(1)}`);
  if (out) fs.appendFileSync(out, `${JSON.stringify({ pid: process.pid, argv: process.argv.slice(1, 3), events })}\n`);
});

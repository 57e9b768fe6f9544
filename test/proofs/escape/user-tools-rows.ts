// The rows of what the user's own tools meet after a session (issue 32, findings 1, 2, 4 and 5;
// user-tools.ts runs the session and the controls). Each row states the claim for the owner
// and the launcher, beside its control: the same plant on the host without the launcher.
import type { Asserts } from './probe-script.js';
import type { Settled } from './session-kit.js';
import { depth, type userToolsControls, type userToolsSession } from './user-tools.js';

type Unwrap = <T>(tt: Asserts, s: Settled<T>) => T | undefined;
// tap's Test, as far as these rows use it.
interface Registrar {
  test(title: string, options: { skip: string | false }, fn: (tt: any) => Promise<void>): unknown;
}
export interface UserToolsRuns {
  session: Promise<Settled<Awaited<ReturnType<typeof userToolsSession>>>>;
  controls: Promise<Settled<Awaited<ReturnType<typeof userToolsControls>>>>;
}

type Both = { s: Awaited<ReturnType<typeof userToolsSession>>; c: Awaited<ReturnType<typeof userToolsControls>> };
type Options = { skip: string | false };

/** The four rows, each on the session and the controls together. */
export function userToolsRows(t: Registrar, req: Options, runs: UserToolsRuns | undefined, unwrap: Unwrap): void {
  const both = async (tt: Asserts): Promise<Both | undefined> => {
    const s = unwrap(tt, await runs!.session);
    const c = unwrap(tt, await runs!.controls);
    return s && c ? { s, c } : undefined;
  };
  fsmonitorAndFifoRows(t, req, both);
  indexAndTreeRows(t, req, both);
}

/** Findings 1 and 4: a nested repository's fsmonitor, and FIFOs where the owner's tools read. */
function fsmonitorAndFifoRows(t: Registrar, req: Options, both: (tt: Asserts) => Promise<Both | undefined>): void {
  t.test(
    "a nested repository committed as a gitlink with a core.fsmonitor command: after the session the owner's git status at the top and in the nested folder runs nothing and answers within 10 s [issue 32, 1]",
    req,
    async (tt) => {
      const o = await both(tt);
      if (!o) return;
      tt.ok(o.c.fsmonitorRan, "control: without the launcher, the owner's git status at the top runs the nested repository's fsmonitor");
      tt.notOk(o.s.fsmonitorRan, 'after the session it did not run');
      for (const [where, r] of [
        ['top', o.s.after.statusTop],
        ['nested folder', o.s.after.statusNested],
      ] as const) {
        tt.equal(r.exitCode, 0, `git status at the ${where} exits 0 (${r.stderr.trim().slice(0, 200)})`);
        tt.ok(r.ms < 10_000, `and answers in ${r.ms} ms`);
      }
      const moved = (o.s.line?.['quarantined']?.['named'] ?? []) as Array<{ path: string; kind: string }>;
      tt.ok(
        moved.some((q) => q.path === 'nested/.git' && q.kind === 'gitdir'),
        'the ledger says the nested git dir was moved out',
      );
    },
  );
  t.test(
    "FIFOs at .gitignore, sub/.gitignore, .gitattributes, Makefile, package.json and sub2/.git: the owner's git status and make return, and workspace list answers within 15 s [issue 32, 4]",
    req,
    async (tt) => {
      const o = await both(tt);
      if (!o) return;
      tt.equal(
        o.c.gitStatusOnFifo.exitCode,
        124,
        `control: git status with a FIFO .gitignore is still blocked after 10 s (killed by timeout, ${o.c.gitStatusOnFifo.ms} ms)`,
      );
      tt.ok(
        o.s.after.statusTop.ms < 10_000 && o.s.after.statusTop.exitCode === 0,
        `after the session the owner's git status returns (${o.s.after.statusTop.ms} ms)`,
      );
      tt.not(o.s.after.make.exitCode, 124, `make returns (exit ${o.s.after.make.exitCode}, ${o.s.after.make.ms} ms)`);
      tt.equal(o.s.after.list.exitCode, 0, `workspace list exits 0 (${o.s.after.list.stderr.slice(-200)})`);
      tt.ok(o.s.after.list.ms < 15_000, `and answers in ${o.s.after.list.ms} ms`);
      const moved = (o.s.line?.['quarantined']?.['named'] ?? [])
        .filter((q: { kind: string }) => q.kind === 'special')
        .map((q: { path: string }) => q.path)
        .sort();
      tt.same(
        moved,
        ['.gitattributes', '.gitignore', 'Makefile', 'package.json', 'sub/.gitignore', 'sub2/.git'],
        'the ledger names every FIFO moved out',
      );
      const hostRun = (o.s.line?.['hostRun']?.['named'] ?? []).map((c: { path: string }) => c.path);
      tt.ok(
        ['Makefile', 'package.json'].every((p) => hostRun.includes(p)),
        `Makefile and package.json are reported as host-run files (${hostRun.join(', ')})`,
      );
    },
  );
}

/** Findings 2 and 5: an index listing paths outside, and trees too deep for a recursive walk. */
function indexAndTreeRows(t: Registrar, req: Options, both: (tt: Asserts) => Promise<Both | undefined>): void {
  t.test(
    "an index listing ../../outside-by-index: the index the host keeps lists no path outside the worktree, and the owner's git checkout -- . writes nothing outside [issue 32, 2]",
    req,
    async (tt) => {
      const o = await both(tt);
      if (!o) return;
      tt.ok(o.c.outside, "control: without the launcher, that index makes the owner's checkout -- . write outside the worktree");
      tt.equal(o.s.after.checkout.exitCode, 0, `the owner's checkout -- . exits 0 (${o.s.after.checkout.stderr.trim().slice(0, 200)})`);
      tt.notOk(o.s.outside, 'and writes nothing outside');
      tt.same(
        o.s.indexPaths.filter((p) => p.split('/').some((c) => c === '..' || c === '')),
        [],
        `the host's index lists only paths inside (${o.s.indexPaths.length} paths)`,
      );
      tt.same(o.s.line?.['gitReturn']?.['copiedBack'], [], "the session's index did not come back");
    },
  );
  t.test(
    `${depth}-level trees in the store, the home and the workspace: the agent's status stands, the store goes, the workspace runs again and workspace rm --force removes it [issue 32, 5]`,
    req,
    async (tt) => {
      const o = await both(tt);
      if (!o) return;
      tt.match(o.c.rmSync, /Maximum call stack size exceeded/, "control: node's recursive rm overflows on such a tree");
      tt.equal(o.s.end.exitCode, 7, `the session ends with its agent's status (stderr tail: ${o.s.end.stderr.slice(-300)})`);
      tt.match(o.s.line, { outcome: 'ran', reason: 'exited', exitCode: 7 });
      tt.equal(o.s.line?.['gitReturn']?.['outcome'], 'fast-forward', "the agent's commit came home");
      tt.notOk(o.s.storeLeft, 'the store is removed');
      tt.equal(o.s.next.exitCode, 3, `the workspace runs again (stderr tail: ${o.s.next.stderr.slice(-300)})`);
      tt.equal(o.s.rm.exitCode, 0, `workspace rm --force exits 0 (${o.s.rm.stderr.slice(-300)})`);
      tt.same(o.s.left, [], 'and leaves no workspace, home or store');
    },
  );
}

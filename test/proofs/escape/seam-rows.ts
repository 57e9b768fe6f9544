/**
 * The escape suite's rows for the seams (what crosses back to the host): attacks on the
 * session's git store (issue 23), links planted where the launcher cleans up and names made to
 * drive a terminal (issue 29); floods of files and of the broker (issue 24) in flood-rows.ts.
 * Registered by escape-attempts.test.ts on the sessions it started (runs.ts), so all of them
 * run at once.
 */
import type { StoreAttackOutcome } from './git-store-attacks.js';
import type { Asserts } from './probe-script.js';
import { gitKinds, type startAll } from './runs.js';
import type { Settled } from './session-kit.js';
import { plantCases, plantModes, type PlantCase, type PlantMode, type PlantOutcome } from './planted-links.js';
import { bytesOf, hostileNames, rawControls } from './terminal-names.js';

export type Runs = ReturnType<typeof startAll>;
export type Unwrap = <T>(tt: Asserts, s: Settled<T>) => T | undefined;
// tap's Test, as far as these rows use it.
export interface Registrar {
  test(title: string, options: { skip: string | false }, fn: (tt: any) => Promise<void>): unknown;
}

/** What holds after any attack on the session's git state: the host repository whole, every ref but the session's branch as it was, the ledger bounded. */
function hostRepositoryWhole(tt: Asserts, o: StoreAttackOutcome): void {
  tt.equal(
    o.fsck.exitCode,
    0,
    `git fsck --full on the host repository is clean (${o.fsck.stderr.trim().split('\n').slice(0, 3).join(' | ')})`,
  );
  tt.equal(
    o.after.refs,
    o.before.refs,
    'main, every other branch and every tag are unchanged, and no ref the session made exists on the host',
  );
  tt.ok(
    o.lineBytes.length > 0 && o.lineBytes.every((n) => n < 64 * 1024),
    `every ledger line is under 64 KiB (${o.lineBytes.join(', ')} bytes)`,
  );
  tt.ok(
    o.end.stderr.length < 16 * 1024 && (o.end.stderr.match(/refs\//g) ?? []).length <= 22,
    `stderr is bounded (${o.end.stderr.length} bytes, ${(o.end.stderr.match(/refs\//g) ?? []).length} ref names)`,
  );
}

/** The git store rows (issue 23). */
export function gitStoreRows(t: Registrar, req: { skip: string | false }, runs: Runs | undefined, unwrap: Unwrap): void {
  for (const kind of gitKinds) {
    t.test(
      `${kind}: a session that deletes every object, ref and log it can reach, then recovers and commits honestly: the host repository is whole and the honest commit is on its branch [peer: Docker Sandboxes clone mode]`,
      req,
      async (tt) => {
        const o = unwrap(tt, await runs!.store.get(`${kind}/wipe`)!);
        if (!o) return;
        const out = o.end.stdout;
        tt.equal(o.end.exitCode, 0, `the session ran (stderr tail: ${o.end.stderr.slice(-300)})`);
        tt.match(out, /^early-commit=0$/m, 'the agent worked a little first');
        tt.ok(
          Number(/^store-objects-before=(\d+)/m.exec(out)?.[1]) > 0 && /^store-objects-after=0 /m.test(out),
          `the wipe itself succeeded inside: every object file of the git dir it sees is gone (${out.match(/store-objects-\w+=\d+/g)?.join(' ')})`,
        );
        tt.match(out, /^store-refs-after=0$/m, 'and every ref file, packed-refs and log');
        tt.match(
          out,
          / alternates=\/sandbox\/git\/live\/objects$/m,
          'but not what ties its store to the host objects (objects/info/alternates is pinned)',
        );
        tt.match(out, /Read-only file system/, "the host's own objects and refs are read-only inside");
        tt.ok(Number(/^live-objects-after=(\d+)$/m.exec(out)?.[1]) > 0, "the host's objects are all still there, seen from inside");
        tt.match(out, /^recover=0$/m, 'the honest agent put its branch back at the tip it remembered');
        tt.match(out, /^honest-commit=0$/m, 'and committed');
        hostRepositoryWhole(tt, o);
        tt.ok(o.honestOnBranch, "the agent's honest commit is on its branch in the host repository");
        tt.notMatch(o.branchLog, /early work/, 'the early commit went with the objects the session deleted');
        tt.match(o.line?.['gitReturn'], { outcome: 'fast-forward' }, 'the ledger says it came home');
      },
    );

    t.test(
      `${kind}: 100 000 refs, a moved main, other branch and tag, a replace ref, a note and gc --prune=now stay in the session's store; its honest commit comes home`,
      req,
      async (tt) => {
        const o = unwrap(tt, await runs!.store.get(`${kind}/flood`)!);
        if (!o) return;
        const out = o.end.stdout;
        tt.equal(o.end.exitCode, 0, `the session ran (stderr tail: ${o.end.stderr.slice(-300)})`);
        for (const step of ['honest-commit', 'move-main', 'move-other', 'move-tag', 'replace', 'note', 'flood', 'gc'])
          tt.match(out, new RegExp(`^${step}=0$`, 'm'), `${step} succeeded inside`);
        tt.ok(
          Number(/^refs-inside=(\d+)$/m.exec(out)?.[1]) >= 100_000,
          `the session's own git for-each-ref counts ${/^refs-inside=(\d+)$/m.exec(out)?.[1]} refs`,
        );
        tt.match(out, /^honest-survives-gc$/m, 'its commit survived its gc --prune=now');
        hostRepositoryWhole(tt, o);
        tt.ok(o.honestOnBranch, "the agent's honest commit is on its branch in the host repository");
        const r = o.line?.['gitReturn'];
        tt.match(r, { outcome: 'fast-forward' }, 'by fast-forward');
        tt.equal(r?.refsDropped?.named?.length, 20, 'the ledger names 20 dropped refs');
        tt.ok(r?.refsDropped?.named?.length + r?.refsDropped?.others >= 100_004, `and counts the rest (${r?.refsDropped?.others} more)`);
        tt.match(o.end.stderr, /ref changes outside .* were dropped: .* and \d+ more/, 'stderr says so, 20 named then a count');
      },
    );
  }

  gitStoreLifecycleRows(t, req, runs, unwrap);
}

/** The store's control and its crash rows (issue 23). */
function gitStoreLifecycleRows(t: Registrar, req: { skip: string | false }, runs: Runs | undefined, unwrap: Unwrap): void {
  t.test(
    'control: the same wipe against a plain read-write bind of the objects (the layout before the store) destroys a throwaway copy',
    req,
    async (tt) => {
      const c = unwrap(tt, await runs!.storeControl);
      if (!c) return;
      tt.equal(c.fsckBefore, 0, 'the copy was whole before');
      tt.match(c.run.stdout, /wipe-objects=0/, 'the wipe ran in the container');
      tt.not(c.fsck, 0, 'git fsck --full on the copy fails afterwards');
      tt.not(c.mainAfter, 0, 'main names a missing object');
    },
  );

  t.test(
    'control: without the pinned alternates the same wipe cuts a store off the host objects and the honest commit fails; with them it succeeds',
    req,
    async (tt) => {
      const c = unwrap(tt, await runs!.pinControl);
      if (!c) return;
      tt.match(c.pinned.stdout, / alternates=\/sandbox\/git\/live\/objects$/m, 'pinned: the alternates file survives the wipe');
      tt.match(c.pinned.stdout, /^recover=0$/m, 'pinned: the recovery works');
      tt.match(c.pinned.stdout, /^honest-commit=0$/m, 'pinned: the honest commit works');
      tt.match(c.unpinned.stdout, /^store-objects-after=0 alternates=$/m, 'unpinned: the wipe took the alternates file');
      tt.notMatch(c.unpinned.stdout, /^recover=0$/m, 'unpinned: the remembered tip is an object the store no longer sees');
      tt.notMatch(c.unpinned.stdout, /^honest-commit=0$/m, 'unpinned: the honest commit fails');
    },
  );

  t.test(
    'a commit, then kill -9 of the launcher and its sentinel: the next launcher start brings the commit home (linked worktree)',
    req,
    async (tt) => {
      const k = unwrap(tt, await runs!.committedThenKilled);
      if (!k) return;
      tt.ok(k.committed, 'the agent committed before the kill');
      tt.equal(k.nextStart.exitCode, 0, `the next launcher start (plan) ran (${k.nextStart.stderr.slice(-200)})`);
      tt.ok(k.honestOnBranch, 'the commit is on the branch afterwards');
      tt.match(
        k.abandoned,
        { reason: 'abandoned', gitReturn: { outcome: 'fast-forward', by: 'the next launcher start' } },
        'the ledger line says the next start brought it home',
      );
      tt.notOk(k.storeLeft, 'the store is removed once imported');
    },
  );

  t.test('a commit, then kill -9 of the launcher: its sentinel brings the commit home (plain repository)', req, async (tt) => {
    const k = unwrap(tt, await runs!.committedThenLauncherKilled);
    if (!k) return;
    tt.ok(k.committed, 'the agent committed before the kill');
    tt.ok(k.honestOnBranch, 'the commit is on the branch after the next start');
    tt.match(
      k.abandoned,
      { reason: 'abandoned', gitReturn: { outcome: 'fast-forward', by: 'its sentinel' } },
      'the ledger line says its sentinel brought it home',
    );
    tt.notOk(k.storeLeft, 'the store is removed once imported');
  });
}

const plantTitle = (c: PlantCase, mode: PlantMode) =>
  `a ${c.runtime} session links .codex, .claude and .config/cursor to ${c.toEtc ? '/etc' : "the host user's own"} and the entrypoint log to ${c.toEtc ? '/etc/passwd' : 'its credential'}; ${mode}: ${c.toEtc ? "/etc's files" : "the host user's files"} are byte-identical, each link is removed as a link and named in the ledger [control: the old rmSync through the link deletes the file on a copy]`;

function checkPlant(tt: Asserts, c: PlantCase, o: PlantOutcome): void {
  tt.equal(
    o.end.exitCode,
    0,
    `the ${o.mode === 'normal end' ? 'session' : 'next start'} exits 0 (stderr tail: ${o.end.stderr.slice(-300)})`,
  );
  tt.match(o.agentStdout, /^installed-before=1$/m, `the ${c.runtime} credential was installed where the link went`);
  tt.same(o.plants.map(([name]) => `/sandbox/home/${name}`).sort(), o.expectedPaths, 'the session planted every link');
  for (const f of o.hostFiles) tt.equal(f.after, f.before, `${f.file}: sha256 unchanged (${f.before.slice(0, 12)})`);
  tt.same(o.linksLeft, [], 'no link is left in the home');
  tt.notOk(o.installedLeft, 'the installed copy is gone from the home');
  tt.equal(o.lines.length, 1, 'one ledger line');
  const line = o.lines[0] ?? {};
  if (o.mode === 'normal end') tt.equal(line['reason'], 'exited', 'the session ended by itself');
  else tt.same([line['reason'], line['evidence']?.['cause']], ['abandoned', 'the next launcher start'], 'the next launcher start swept it');
  tt.same(
    (line['planted']?.['named'] ?? []).map((p: { path: string }) => p.path).sort(),
    o.expectedPaths,
    'the ledger names every planted link',
  );
  tt.same(
    line['planted']?.['named']?.map((p: { path: string; target: string }) => [p.path.slice('/sandbox/home/'.length), p.target]).sort(),
    [...o.plants].sort(),
    'with what it pointed at',
  );
  tt.match(o.end.stderr, /left symbolic links where the launcher cleans up: .*removed as a link/, 'and stderr says so');
  tt.ok(
    o.control.existedBefore && o.control.deleted,
    `control: on a copy, the old clean-up through the link deletes ${o.control.followed}`,
  );
}

/** The planted-link and terminal-name rows (issue 29). */
export function plantedRows(t: Registrar, req: { skip: string | false }, runs: Runs | undefined, unwrap: Unwrap): void {
  for (const c of plantCases) {
    for (const mode of plantModes) {
      t.test(plantTitle(c, mode), req, async (tt) => {
        const o = unwrap(tt, await runs!.planted.get(`${c.label}/${mode}`)!);
        if (o) checkPlant(tt, c, o);
      });
    }
  }

  t.test(
    "names with ESC, BEL, C1 controls and bytes that are not UTF-8 (files, directories, nested repositories, refs, a planted link) reach the terminal escaped: no raw control byte on the launcher's stderr; a FIFO planted as a ref does not hold up the session's end",
    req,
    async (tt) => {
      const o = unwrap(tt, await runs!.names);
      if (!o) return;
      tt.equal(o.exitCode, 0, `the session ran and ended (stderr: ${JSON.stringify(o.stderr.toString('latin1').slice(-300))})`);
      const onDisk = (list: Buffer[], f: string) => list.some((b) => b.equals(bytesOf(f)));
      for (const k of ['nested', 'nestedC1', 'nestedRawC1', 'nestedBad', 'dir', 'file'] as const)
        tt.ok(onDisk(o.onDisk, hostileNames[k]), `control: ${k} is on disk with its raw bytes`);
      for (const k of ['ref', 'refBad'] as const)
        tt.ok(onDisk(o.refsOnDisk, hostileNames[k]), `control: the ${k} file is in the session's git store with its raw bytes`);
      tt.same(rawControls(o.stderr), [], 'no ESC, BEL, other C0, DEL, C1 or non-UTF-8 byte on stderr');
      const text = o.stderr.toString('utf8');
      for (const shown of [
        'a nested git gitdir was added at n\\e]0;TITLE-SET-BY-AGENT\\a\\e[2K\\e[1Afake/.git',
        'added at c1-\\u009b-31m/.git',
        'added at raw-\\x9b-2J/.git',
        'added at bad-\\xff\\xfe-utf8/.git',
        'refs/heads/ref-\\e[2K\\a (made)',
        'refs/heads/ref-\\xff-x (made)',
        'refs/heads/br-\\u009b-1A (made)',
        '/sandbox/home/.codex -> /x/\\e]0;link\\a',
      ])
        tt.ok(text.includes(shown), `stderr shows ${shown}`);
      tt.notOk(o.ledger.includes(0x1b) || o.ledger.includes(0x07), 'the ledger keeps the names JSON-escaped');
      tt.ok(
        o.line?.['nestedGit']?.some((n: { path: string }) => n.path === 'n\x1b]0;TITLE-SET-BY-AGENT\x07\x1b[2K\x1b[1Afake/.git'),
        'and names the repository exactly',
      );
    },
  );
}

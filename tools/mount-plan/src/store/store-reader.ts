/**
 * The repository the import fetches from: made by the launcher beside the store once the
 * container is gone, never the store itself. The store was the session's to write: its config
 * and HEAD are symlinks into a container path, and anything it holds may be a planted link, a
 * FIFO, or an `objects/info/alternates` naming another repository. So only what git writes as
 * objects is taken over, by name and type (a regular file at `objects/xx/<38 hex>`, or a
 * `pack-<hex>.pack` with its `.idx`), hard-linked (copied across file systems): the count of the
 * session's own objects, never the host's. The reader borrows the host's objects through its own
 * alternates, holds one ref, and the fetch's checks (import-branch.ts) judge every object sent.
 */
import { copyFileSync, constants, existsSync, linkSync, mkdirSync, readdirSync, rmSync, writeFileSync, type Dirent } from 'node:fs';
import { walkBeneath } from '@agent-sandbox/shared/beneath';
import { runGit } from '@agent-sandbox/shared/git-run';

const looseDir = /^[0-9a-f]{2}$/;
const looseName = /^([0-9a-f]{38}|[0-9a-f]{62})$/;
const packName = /^pack-([0-9a-f]{40}|[0-9a-f]{64})\.pack$/;

/** The entries of `dir`, a directory beneath `root` reached without a link (else none: readdir would follow one). */
function listDir(root: string, dir: string): Dirent[] {
  if (!walkBeneath(root, dir).stats?.isDirectory()) return [];
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** A hard link, or a copy where the file system will not link. */
function take(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM') throw err;
    copyFileSync(from, to, constants.COPYFILE_EXCL);
  }
}

/** Takes the session's object files from `<store>/objects` into the reader's; returns how many. */
function takeObjects(store: string, into: string): number {
  const objects = `${store}/objects`;
  let count = 0;
  for (const dir of listDir(store, objects)) {
    if (!dir.isDirectory() || !looseDir.test(dir.name)) continue;
    const files = listDir(store, `${objects}/${dir.name}`).filter((f) => f.isFile() && looseName.test(f.name));
    if (files.length === 0) continue;
    mkdirSync(`${into}/${dir.name}`, { recursive: true });
    for (const f of files) take(`${objects}/${dir.name}/${f.name}`, `${into}/${dir.name}/${f.name}`);
    count += files.length;
  }
  const pack = listDir(store, `${objects}/pack`);
  const plain = new Set(pack.filter((f) => f.isFile()).map((f) => f.name));
  for (const name of plain) {
    const idx = name.replace(/\.pack$/, '.idx');
    if (!packName.test(name) || !plain.has(idx)) continue;
    take(`${objects}/pack/${name}`, `${into}/pack/${name}`);
    take(`${objects}/pack/${idx}`, `${into}/pack/${idx}`);
    count += 1;
  }
  return count;
}

/**
 * Makes `<dir>` a bare repository holding the objects of the git dir `store` (a store's
 * `common/`; a directory without `objects/` gives none), borrowing `hostObjects`. Throws only
 * for causes on this side (git init, a link or copy that fails): never for what the store holds.
 */
export function makeReader(dir: string, store: string, hostObjects: string): { objects: number } {
  rmSync(dir, { recursive: true, force: true });
  runGit({}, ['init', '--quiet', '--bare', dir], {}, { exit: 'internal', code: 'reader-init-failed' });
  writeFileSync(`${dir}/objects/info/alternates`, `${hostObjects}\n`);
  return { objects: existsSync(store) ? takeObjects(store, `${dir}/objects`) : 0 };
}

/** The reader's one ref at `tip`. Throws when the tip is not an object it has (the session removed it). */
export function setReaderRef(dir: string, ref: string, tip: string): void {
  runGit({ gitDir: dir }, ['update-ref', ref, tip], {}, { code: 'import-refused' });
}

/** makeReader, then setReaderRef. */
export function buildReader(dir: string, store: string, hostObjects: string, ref: string, tip: string): { objects: number } {
  const made = makeReader(dir, store, hostObjects);
  setReaderRef(dir, ref, tip);
  return made;
}

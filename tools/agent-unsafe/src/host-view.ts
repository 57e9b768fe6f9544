/**
 * The host as the checks see it: existence and contents of a few files. Passed
 * in so unit tests can describe any host; the real one reads the file system.
 */
import { existsSync, readFileSync } from 'node:fs';

export interface HostView {
  exists(path: string): boolean;
  /** The file's text, or undefined when it cannot be read (missing, EACCES, process gone). */
  read(path: string): string | undefined;
}

export const realHost: HostView = {
  exists: (path) => existsSync(path),
  read: (path) => {
    try {
      return readFileSync(path, 'latin1');
    } catch {
      return undefined;
    }
  },
};

/** A host made of a path -> contents map (undefined contents: exists but unreadable). */
export function fakeHost(files: Record<string, string | undefined>): HostView {
  return {
    exists: (path) => path in files,
    read: (path) => files[path],
  };
}

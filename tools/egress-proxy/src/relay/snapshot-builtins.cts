/**
 * `net` and `child_process` for the relay, loaded on first use. Not to save start-up time (the
 * project's rule gives that up under 10 ms) but because the relay starts from a V8 startup
 * snapshot in the image (image/run-snapshot.sh), and node 18 cannot put these two modules in a
 * snapshot: loaded at the top, the snapshot's build fails. CommonJS on purpose: an ES module
 * cannot require(), and import() is async. In the relay's CommonJS bundle this `require` is node's own.
 */
import type * as ChildProcess from 'node:child_process';
import type * as Net from 'node:net';

export const childProcess = (): typeof ChildProcess => require('node:child_process') as typeof ChildProcess;
export const net = (): typeof Net => require('node:net') as typeof Net;

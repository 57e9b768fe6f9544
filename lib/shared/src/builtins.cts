/**
 * Node builtins that cost a tool's cold start 2-3 ms each to load (measured: child_process,
 * crypto, net; node -e 0 is ~23 ms), loaded on first use instead. CommonJS on purpose: an ES
 * module cannot require(), and import() is async and starts node's ES module loader. In the
 * tools' CommonJS bundles this `require` is node's own; in the unbundled ES modules node
 * loads this file as CommonJS. Import these only where the builtin is needed off the common path.
 */
import type * as ChildProcess from 'node:child_process';
import type * as Crypto from 'node:crypto';
import type * as Net from 'node:net';

export const childProcess = (): typeof ChildProcess => require('node:child_process') as typeof ChildProcess;
export const crypto = (): typeof Crypto => require('node:crypto') as typeof Crypto;
export const net = (): typeof Net => require('node:net') as typeof Net;

export { guardPath, isWithin, checkPathText, resolveRoot, realFs, type GuardFs } from './guard-path.js';
export { tool } from './cli.js';

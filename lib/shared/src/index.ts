export * from './exit-codes.js';
export * from './error-codes.js';
export * from './tool-error.js';
export * from './json-input.js';
export * from './cli.js';
export * from './host-facts.js';

export * from './run-bin.js';
export * from './temp-dir.js';
export * from './podman-names.js';
export * from './model-server.js';
export * from './test-ca.js';
export * from './fake-internet.js';
export * from './requirements.js';
export * from './private-hosts.js';

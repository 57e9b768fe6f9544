export * from './run-bin.js';
export * from './temp-dir.js';
export * from './podman-names.js';
export * from './model-server.js';
export * from './cgroup-parent.js';

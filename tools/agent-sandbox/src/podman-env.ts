/**
 * The environment podman runs with, built from an allowlist, lives once in the shared
 * package (lib/shared/src/podman.ts: why each variable is dangerous, what is kept). The bin
 * shim imports this module first to pin PATH and drop those variables from the launcher's
 * own environment before anything else loads; it re-exports only the dependency-free
 * constants (lib/shared/src/podman-pin.ts), so that first import loads nothing else.
 */
export { systemPath, podmanConfigVariables } from '@agent-sandbox/shared/podman-pin';

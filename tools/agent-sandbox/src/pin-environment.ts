/**
 * Pins the launcher's own lookups before anything else of it loads: this is the first import
 * of src/cli.ts (the executable's entry; importing the library does not pin), and ES modules
 * evaluate in import order (in dist/cli.js and in the bundle alike), so no module captures
 * PATH or a podman variable before this runs. podman, ssh and
 * systemd-run come from the system PATH, never from a directory an agent put first; the
 * variables that make podman (or the shared helper) use another binary, config or remote
 * engine are dropped (the list and the why: lib/shared/src/podman-pin.ts). No variable can
 * route the agent's command anywhere but into a real podman container.
 */
import { podmanConfigVariables, resolverEnvironment, systemPath } from '@agent-sandbox/shared/podman-pin';

process.env.PATH = systemPath;
for (const name of podmanConfigVariables) delete process.env[name];
// The egress broker resolves names in this process: nothing may point a name elsewhere.
for (const name of resolverEnvironment) delete process.env[name];

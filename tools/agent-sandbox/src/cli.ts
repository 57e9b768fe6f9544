/**
 * The launcher executable's entry (bin/agent-sandbox runs it, bundled or not). It pins the
 * process's own lookups before anything else of the launcher loads: ES modules evaluate in
 * import order, so ./pin-environment.ts runs before ./commands/index.ts or any of its imports.
 */
import './pin-environment.js';

export { run } from './commands/index.js';

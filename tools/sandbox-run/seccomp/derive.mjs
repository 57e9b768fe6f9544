#!/usr/bin/env node
// Derives the session's seccomp profile (agent-sandbox.json, beside this file) from podman's
// default profile (containers-common's seccomp.json) with the rules in
// ../src/seccomp-profile.ts (built: ../dist/seccomp-profile.js; `pnpm run build` first), and
// records which default it came from in provenance.json. Both files are committed: the hosts
// that run sessions may have another containers-common, so the profile podman gets is this
// self-contained file, never the host's default.
//   node tools/sandbox-run/seccomp/derive.mjs [--check] [DEFAULT_PROFILE]
// --check writes nothing and exits 1 when the committed files are not what it would write.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deriveProfile, profileText } from '../dist/seccomp-profile.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const check = args.includes('--check');
const source = args.find((a) => a !== '--check') ?? '/usr/share/containers/seccomp.json';

/** The Debian package that installed `file` and its version, when dpkg knows it (for the record only). */
function packageOf(file) {
  const owner = spawnSync('dpkg-query', ['-S', file], { encoding: 'utf8' });
  const name = owner.status === 0 ? owner.stdout.split(':')[0].trim() : undefined;
  if (!name) return undefined;
  const version = spawnSync('dpkg-query', ['-W', '-f', '${Version}', name], { encoding: 'utf8' });
  return version.status === 0 ? `${name} ${version.stdout.trim()}` : name;
}

const text = readFileSync(source, 'utf8');
const files = {
  'agent-sandbox.json': profileText(deriveProfile(JSON.parse(text))),
  'provenance.json': `${JSON.stringify(
    {
      derivedFrom: source,
      package: packageOf(source) ?? 'unknown',
      sha256: createHash('sha256').update(text).digest('hex'),
      by: 'node tools/sandbox-run/seccomp/derive.mjs',
    },
    null,
    2,
  )}\n`,
};
let stale = 0;
for (const [name, content] of Object.entries(files)) {
  const file = path.join(here, name);
  if (check) {
    let committed;
    try {
      committed = readFileSync(file, 'utf8');
    } catch {
      committed = undefined;
    }
    if (committed !== content) {
      console.error(`${file}: not what ${source} derives`);
      stale += 1;
    }
  } else {
    writeFileSync(file, content);
    console.error(`wrote ${file}`);
  }
}
process.exitCode = stale > 0 ? 1 : 0;

// The bench's fixture, made once: a base directory with a HOME holding a codex credential
// (not a secret), permitted roots made per section, plain and git-worktree workspaces, and the
// launcher's argv for a session in them. Removed at the end with every container of this bench.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { baseEnv, bin, image, onTeardown, tag, timed } from './common.mjs';

export const base = mkdtempSync('/tmp/agent-sandbox-bench-');
chmodSync(base, 0o755);
export const home = path.join(base, 'home');
mkdirSync(path.join(home, '.codex'), { recursive: true });
writeFileSync(path.join(home, '.codex', 'auth.json'), JSON.stringify({ OPENAI_API_KEY: 'bench-not-a-secret' }), { mode: 0o600 });
export const env = { ...baseEnv, HOME: home };
export const defaultLedger = path.join(base, 'state', 'ledger.jsonl');

onTeardown(() => {
  spawnSync('sh', [
    '-c',
    `podman --runtime runc ps -aq --filter name=agent-sandbox-${tag} | xargs -r podman --runtime runc rm -f >/dev/null 2>&1`,
  ]);
  spawnSync('podman', ['--runtime', 'runc', 'rm', '-f', '--ignore', `${tag}-attrib`], { stdio: 'ignore' });
  rmSync(base, { recursive: true, force: true });
});

const gitEnv = { ...env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' };
export const git = (cwd, ...a) => timed('git', ['-C', cwd, ...a], { env: gitEnv });

export function makeRoot(name) {
  const root = path.join(base, name);
  mkdirSync(path.join(root, 'workspaces'), { recursive: true });
  return root;
}

/** <root>/workspaces/<id>, owned by the container's uid. */
export function plainWorkspace(root, id) {
  const ws = path.join(root, 'workspaces', id);
  mkdirSync(ws, { recursive: true });
  chownSync(ws, 1000, 1000);
  return ws;
}

/** <root>/workspaces/<id> holding `files` empty files, 1000 to a directory, owned by the container's uid. */
export function filledWorkspace(root, id, files) {
  const ws = plainWorkspace(root, id);
  for (let d = 0; d * 1000 < files; d += 1) {
    const dir = path.join(ws, `d${d}`);
    mkdirSync(dir);
    for (let f = 0; f < Math.min(1000, files - d * 1000); f += 1) writeFileSync(path.join(dir, `f${f}`), '');
    chownSync(dir, 1000, 1000);
  }
  return ws;
}

/** A repo under <root>/repos/main and `count` linked worktrees as workspaces <prefix>0..; returns their ids and the repo. */
export function worktreeWorkspaces(root, prefix, count) {
  const main = path.join(root, 'repos', 'main');
  mkdirSync(main, { recursive: true });
  git(main, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(main, 'README'), 'bench\n');
  git(main, 'add', 'README');
  git(main, 'commit', '-q', '-m', 'bench');
  const ids = [];
  for (let i = 0; i < count; i += 1) {
    const id = `${prefix}${i}`;
    git(main, 'worktree', 'add', '-q', '-b', id, path.join(root, 'workspaces', id));
    chownSync(path.join(root, 'workspaces', id), 1000, 1000);
    ids.push(id);
  }
  return { ids, main };
}

/** The flags of every bench session: codex, this image (or `img`), small limits, its own ledger. */
export const flags = (root, id, ledger = defaultLedger, img = image) => [
  '--runtime',
  'codex',
  '--workspace',
  id,
  '--root',
  root,
  '--ledger',
  ledger,
  '--memory',
  '256m',
  '--pids',
  '64',
  '--image',
  img,
];

/** A case: `agent-sandbox <sub>` for one workspace, the agent `true` unless `rest` says otherwise. */
export const launcher =
  (sub, root, id, extra = [], rest = []) =>
  () =>
    timed(bin('agent-sandbox'), [sub, ...flags(root, id), ...extra, '--agent-bin', 'true', '--', ...rest], { env });

export const nodeZero = () => timed(process.execPath, ['-e', '0'], { env });

/** Executables started during one run, by basename, from strace (execve that succeeded). */
export function processesOf(cmd, argv) {
  const out = path.join(base, `strace-${Math.random().toString(16).slice(2)}.txt`);
  spawnSync('strace', ['-f', '-qq', '-e', 'trace=execve', '-o', out, cmd, ...argv], { env, stdio: 'ignore' });
  const counts = {};
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = /execve\("([^"]+)".*= 0$/.exec(line);
    if (!m) continue;
    const name = path.basename(m[1]);
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

/** The ledger's lines, parsed (none when it does not exist yet). */
export function ledgerLines(file) {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
}

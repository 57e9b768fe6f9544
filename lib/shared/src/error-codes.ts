/**
 * Every error code a tool may put in `{"ok":false,"error":{"code"}}`, with its exit (a name from
 * exit-codes.ts) and what it means: the one list. ToolError takes only a code from it, with an
 * exit the code has here (checked by the compiler), and the READMEs' lists of codes are
 * generated from it (scripts/write-docs.mjs). A code names one cause; a few causes are met by
 * two tools whose refusals have different exits (path-guard refuses every path problem with 86,
 * cred-stage every credential problem with 85), and those codes have one row per exit.
 *
 * Long because it is a table: one row per code.
 */
import type { ExitName } from './exit-codes.js';

export const errorCodes = {
  // 80 usage
  'agent-cli-not-found': { usage: "the runtime's program is not on PATH (the hatch)" },
  'bad-branch': { usage: '--branch is not a valid branch name' },
  'bad-flag': { usage: 'an unknown flag or command, a missing or malformed flag value, a stray argument (the message names it)' },
  'bad-from': { usage: '--from names no commit' },
  'bad-key': { usage: '--key is neither one OpenSSH public key nor a .pub file' },
  'bad-path': { usage: 'a path in the forced command has characters outside [A-Za-z0-9/._+-]' },
  'bad-repo': { usage: '--repo is not a directory' },
  'bad-user': { usage: '--user is not a user name' },
  'bad-workspace-record': { usage: "a workspace record names another workspace than its file's" },
  'branch-exists': { usage: '--branch already exists, and --from was given' },
  'bundle-checksum': { usage: "a returned bundle's size or sha256 is not what the node announced" },
  'bundle-invalid': { usage: 'a bundle is not a valid git bundle' },
  'bundle-refs': { usage: 'a bundle holds other refs than the one branch at its announced tip' },
  'bundle-too-large': { usage: 'a bundle is larger than the node takes (receive --bundle-max)' },
  'bundle-truncated': { usage: 'the connection ended before the announced bundle had arrived' },
  'command-twice': { usage: 'the command is given both in the plan and after --' },
  'container-running': { usage: 'the container has not ended yet: attribute it after it ended' },
  'duplicate-host': { usage: 'a host is listed twice in the hosts registry' },
  'duplicate-destination': {
    usage: "two mounts of sandbox-run's plan have one destination",
    unsafePath: "two of mount-plan's mounts would have one destination",
  },
  'git-failed': {
    usage: "git refused an operation on a repository the user named (git's last line is the message)",
    startFailed: 'git cannot be run (not installed?)',
    internal: 'git failed on a repository the launcher made itself (a bug)',
  },
  'import-refused': {
    usage: "the session's branch cannot be imported: the store's ref is not the expected tip, or the checked fetch refused it",
  },
  'input-too-large': { usage: 'the JSON document is larger than a tool reads' },
  'no-kept-store': { usage: 'workspace import: the workspace has no git store kept by a failed import' },
  'invalid-field': { usage: "a field does not match its schema (the message starts with the field's path)" },
  'invalid-session-id': { usage: 'a session id that is not [A-Za-z0-9][A-Za-z0-9_.-]{0,63} (library)' },
  'local-only-flag': {
    usage: '--network, --egress, --allow-host, --ca-file, --cache, --allow-expiring or --git-root for a session on another host',
  },
  'malformed-json': { usage: 'the input is not a JSON document' },
  'missing-field': { usage: 'a required field is missing' },
  'missing-flag': { usage: 'a required flag is missing' },
  'no-command': { usage: 'nothing after -- where a command is needed' },
  'no-input': { usage: 'no JSON document on stdin (it is a terminal) and no input flag' },
  'no-login-shell': { usage: "the node user's login shell cannot run the forced command" },
  'no-registry': { usage: '--hosts names a file that does not exist' },
  'no-return-bundle': { usage: 'no commits wait to be fetched for that session on this node' },
  'no-such-container': { usage: 'podman inspect does not know the container' },
  'no-such-workspace': { usage: 'workspace rm: the root has no workspace of that id' },
  'no-workspace': { usage: 'the root has no workspace yet (the message says how to make one)' },
  'no-workspace-record': { usage: 'the workspace was not made by `agent-sandbox workspace new`' },
  'node-workspace-branch': { usage: "the node's worktree has another branch (or a detached HEAD) checked out" },
  'node-workspace-conflict': { usage: "the node's worktree cannot take the incoming commits (git reset --keep refused)" },
  'not-a-repository': { usage: '--repo is not a git repository that git will use (not one, or owned by another user)' },
  'not-root': { usage: 'node-setup not run as root' },
  'quarantine-not-empty': { usage: 'workspace rm without --force: what its sessions left was moved to its quarantine and is still there' },
  'publish-port-taken': {
    usage:
      '--publish names a host port that cannot be listened on on 127.0.0.1 (another process holds it, or it is privileged): refused before anything of the session exists',
  },
  'receiver-refused': {
    usage:
      "the node's receiver refused with a code this launcher does not know, or said none (its message is kept); a node's known code is carried back as itself",
  },
  'relative-root': {
    usage: '--root is not an absolute path (library callers of workspace new, rm and the layout)',
    unsafePath: 'root is not an absolute path',
  },
  'remote-plan': { usage: 'plan or kube for another node: run it there' },
  'remote-workspace-path': { usage: 'a workspace path for a remote host, which takes a workspace id' },
  'socket-in-use': { usage: 'a process listens on socketPath already' },
  'uncommitted-work': { usage: 'workspace rm of a workspace with uncommitted work (--force discards it)' },
  'unknown-command': { usage: 'a command the container-side cred-stage does not have' },
  'unknown-field': { usage: 'a field the schema does not have' },
  'unknown-runtime': { usage: 'a runtime that is not in the table' },
  'useradd-failed': { usage: 'useradd failed to make the node user' },
  'workspace-detached': { usage: 'a workspace with a detached HEAD cannot be dispatched' },
  'workspace-exists': { usage: 'the workspace id is in use' },
  'worktree-add-failed': { usage: 'git worktree add failed (workspace new here, or a dispatched workspace on a node)' },

  // 81 unreachable
  'bad-machine-id': { unreachable: 'the machine id file does not hold 32 hex digits' },
  'no-host-answers': { unreachable: 'no host with the agent-seat role answers (each is named with why)' },
  'no-machine-id': { unreachable: "this node's machine id cannot be read" },
  'no-seat': { unreachable: 'no host in the registry has the agent-seat role' },
  'no-seat-role': { unreachable: '--host names a host without the agent-seat role' },
  'return-failed': { unreachable: "fetching a dispatched session's commits back from the node failed" },
  'ssh-failed': { unreachable: 'ssh failed before the remote side started' },
  'node-answer-invalid': {
    unreachable: 'the node answered ps or stop with a line that is not the document asked for (checked against its schema)',
  },
  'unknown-host': { unreachable: '--host names no host of the registry' },

  // 82 image absent
  'image-absent': { imageAbsent: "the image is not in podman's local storage (never pulled)" },

  // 83 start failed
  'launch-failed': { startFailed: 'the agent could not be executed after it was found (the hatch)' },
  'ledger-unwritable': { startFailed: 'the ledger cannot be appended to' },
  'lock-failed': { startFailed: "util-linux flock failed on the workspace's lock" },
  'no-new-privs-rootless': { startFailed: 'rootless podman under NoNewPrivs 1 (setuid newuidmap cannot run): go through nnp-probe exec' },
  'no-setfacl': { startFailed: "setfacl is not installed (root mode grants uid 1000 a repository's git metadata with ACLs)" },
  'no-subuids': { startFailed: 'the user has no range in /etc/subuid' },
  'podman-broken': { startFailed: 'podman version failed' },
  'podman-killed': { startFailed: 'podman died without a status; the container was removed' },
  'podman-missing': { startFailed: 'podman is not installed, not on PATH, or cannot be run' },
  'podman-run-failed': { startFailed: 'podman run itself exited 125 (name in use, storage error): the command never ran' },
  'runtime-missing': { startFailed: 'no usable OCI runtime (cgroup v1 needs runc)' },
  'seccomp-profile-invalid': {
    startFailed: 'the seccomp profile beside the tool is not JSON or not the profile (it does not refuse namespaces)',
  },
  'seccomp-profile-missing': { startFailed: 'the seccomp profile beside the tool is missing or not readable' },
  'setfacl-failed': { startFailed: "setfacl failed to grant uid 1000 a repository's git metadata" },
  'storage-full': { startFailed: "podman's storage has too little room for a container" },
  'storage-unwritable': { startFailed: "podman's storage cannot be written by this user" },

  // 84 user manager
  'user-manager-missing': {
    userManager:
      'NoNewPrivs 1 and the user manager is not ready: the message lists the problems and names `loginctl enable-linger <user>`; `problems` in the document',
  },

  // 85 credential
  'account-path-relative': { credential: "an account's credential path is neither absolute nor ~/..." },
  'accounts-unparsable': { credential: 'the accounts file is not valid JSON' },
  'accounts-unreadable': { credential: 'the accounts file cannot be read' },
  'destination-not-directory': { credential: "a directory on the way to the credential's place in the home is not one" },
  'destination-not-file': { credential: "the credential's place in the home holds something that is not a regular file" },
  'destination-symlink': { credential: "the credential's place in the home, or a directory on the way, is a symlink" },
  expiring: { credential: 'the token expires within the session: refresh it on the host first' },
  'expiry-unreadable': { credential: 'when the token expires cannot be told' },
  'home-not-found': { credential: 'the home the credential is looked up in does not exist' },
  'install-failed': { credential: 'the staged credential cannot be installed (an examination failed)' },
  'no-home': { credential: 'HOME is not an absolute path (install)' },
  'not-found': {
    credential: 'the credential file does not exist',
    unsafePath: 'the path does not exist (and create is not set)',
  },
  'not-regular-file': { credential: 'the credential file is not a regular file' },
  'stage-chown-failed': { credential: 'the staged copy cannot be given to the container user' },
  'stage-failed': { credential: 'the stage directory cannot be made' },
  'stage-unsafe': { credential: 'the stage directory is a symlink or not a directory' },
  'staged-missing': { credential: 'a required runtime has no staged credential (install --require)' },
  'staged-not-regular-file': { credential: 'a staged credential is not a regular file' },
  'staged-unreadable': { credential: 'a staged credential cannot be opened' },
  'symlink-loop': {
    credential: 'the credential file is a symlink loop',
    unsafePath: 'the path is a symlink loop',
  },
  'symlink-outside-home': { credential: 'the credential file resolves through a symlink outside the home' },
  'too-large': { credential: 'the credential file is larger than a credential can be' },
  'too-permissive': { credential: 'group or others can read the credential file (chmod 600 it)' },
  'unexpected-staged-file': { credential: "the staging directory holds a file the runtime's row does not stage" },
  'unknown-account': { credential: 'the account is not in the accounts file' },
  'unknown-staged-entry': { credential: 'the staging root holds an entry that is no runtime of the table' },
  unparsable: { credential: 'the credential file is not valid JSON' },
  unreadable: { credential: 'the credential file cannot be examined' },

  // 86 unsafe path
  'bad-workspace-id': { unsafePath: 'a workspace id that is not 1-64 characters of [A-Za-z0-9._-] (not starting with . or -)' },
  'ca-file-missing': { unsafePath: '--ca-file cannot be resolved' },
  'ca-file-not-regular': { unsafePath: '--ca-file is not a regular file' },
  'cache-dir-unsafe': {
    unsafePath: "--cache: the host package cache is a symlink or not a directory, or resolves outside the user's home",
  },
  'create-failed': { unsafePath: 'a missing directory of the path cannot be made' },
  'create-not-directory': { unsafePath: 'create asked for a path that is not a directory' },
  'create-race': { unsafePath: 'a directory being made was replaced by a symlink or a non-directory' },
  'credential-destination': { unsafePath: 'a credential mount is not a plain path below /sandbox-secrets/' },
  'dot-segment-in-create': { unsafePath: 'a path to create has "." or ".." segments' },
  'empty-path': { unsafePath: 'the path is an empty string' },
  'home-not-directory': { unsafePath: 'the session home is a symlink or not a directory' },
  'home-not-pinned': { unsafePath: 'homes/<id> resolves elsewhere (a link)' },
  'mount-source-missing': { unsafePath: 'a mount source does not exist (sandbox-run creates nothing on the host)' },
  'not-a-directory': { unsafePath: 'the path is not a directory (kind directory)' },
  'not-a-file': { unsafePath: 'the path is not a regular file (kind file)' },
  'nul-byte': { unsafePath: 'the path holds a NUL byte' },
  'outside-root': { unsafePath: 'the path resolves outside the root' },
  'path-too-long': { unsafePath: 'the path is longer than the kernel takes' },
  'root-is-symlink': { unsafePath: 'the root is itself a symlink' },
  'root-not-directory': { unsafePath: 'the root is not a directory' },
  'root-not-found': { unsafePath: 'the root does not exist (the launcher says how a first workspace makes it)' },
  'root-not-owned': { unsafePath: 'the root is owned by another user than the one who runs sessions' },
  'root-not-writable': { unsafePath: 'the root is not writable by the user who runs sessions' },
  'root-symlink-untrusted': { unsafePath: 'an ancestor of the root is a symlink owned by another user than root or the caller' },
  'root-writable-by-others': { unsafePath: 'group or others can write the root' },
  'sessions-dir-unsafe': { unsafePath: "the root's sessions directory is a symlink or not a directory" },
  'socket-dir-unsafe': { unsafePath: "socketPath's directory is missing, a symlink, or group- or world-writable" },
  'socket-path-taken': { unsafePath: 'socketPath exists and is not a socket' },
  'symlink-escape': { unsafePath: 'the path resolves through a symlink outside the root' },
  'workspace-not-pinned': { unsafePath: "the workspace is not exactly <root>/workspaces/<id> (another session's, the root, a link)" },
  'workspace-record-symlink': { unsafePath: 'a workspace record, or the directory of them, is a symlink' },

  // 87 git metadata
  'commondir-not-a-repository': { gitMount: 'the common dir has no objects/ or refs/: not a git directory' },
  'commondir-not-canonical': { gitMount: 'the common dir is not a canonical absolute path (a symlink, .., // or a trailing /)' },
  'commondir-not-found': { gitMount: 'the common dir does not exist' },
  'dotgit-commondir': { gitMount: '.git is a directory with a commondir file' },
  'dotgit-not-a-file': { gitMount: '.git is neither a directory nor a regular file' },
  'dotgit-symlink': { gitMount: '.git is a symlink' },
  'git-config-names-session-file': { gitMount: 'host git configuration names a file the session can write (error.found lists it)' },
  'git-config-unreadable': { gitMount: 'the git configuration cannot be read or listed' },
  'git-entry-missing': {
    gitMount:
      "an entry the session's git store mounts, borrows or copies (objects/, refs/, logs/, worktrees/, modules/, HEAD, index, ORIG_HEAD, commondir, gitdir, config.worktree) is missing",
  },
  'git-entry-not-plain': { gitMount: "an entry the session's git store mounts, borrows or copies is a symlink" },
  'git-metadata-contains-root': { gitMount: 'the git metadata contains the sandbox root' },
  'git-metadata-in-other-session': { gitMount: "the git metadata lies in another session's directory" },
  'git-metadata-inside-workspace': { gitMount: 'the gitdir lies inside the workspace' },
  'git-outside-permitted-root': { gitMount: 'the git metadata is not under a permitted git root (gitRoots)' },
  'git-refs-unreadable': { gitMount: "the host repository's refs cannot be listed (git for-each-ref failed)" },
  'git-store-exists': { gitMount: "the session's git store exists: a session with this id was not finished" },
  'git-store-kept': {
    gitMount:
      "the workspace's last session left a git store whose import failed again: its commits come home before another session starts",
  },
  'gitdir-not-a-repository': { gitMount: 'the gitdir has no HEAD, objects/ or refs/: not a git directory' },
  'gitdir-not-canonical': { gitMount: 'the gitdir is not a canonical absolute path (a symlink, .., // or a trailing /)' },
  'gitdir-not-found': { gitMount: 'the gitdir does not exist' },
  'gitdir-outside-commondir': { gitMount: 'a worktree gitdir is not <common>/worktrees/<name>' },
  'gitfile-bom': { gitMount: 'a gitfile (.git, commondir, gitdir) starts with a byte-order mark' },
  'gitfile-control-char': { gitMount: 'a gitfile holds a control character' },
  'gitfile-crlf': { gitMount: 'a gitfile holds a carriage return' },
  'gitfile-empty': { gitMount: 'a gitfile names no path' },
  'gitfile-malformed': { gitMount: 'a gitfile does not start with "gitdir: "' },
  'gitfile-not-a-file': { gitMount: 'a gitfile is not a regular file' },
  'gitfile-not-utf8': { gitMount: 'a gitfile is not valid UTF-8' },
  'gitfile-nul': { gitMount: 'a gitfile holds a NUL byte' },
  'gitfile-path-too-long': { gitMount: "a gitfile's path is longer than the kernel takes" },
  'gitfile-too-large': { gitMount: 'a gitfile is larger than 1 MiB' },
  'gitfile-trailing-junk': { gitMount: 'a gitfile has more than one line' },
  'gitfile-unreadable': { gitMount: 'a gitfile cannot be opened' },
  'gitfile-whitespace': { gitMount: "a gitfile's path starts or ends with white space" },
  'node-workspace-not-mirror': { gitMount: "the node's workspace exists and is not a worktree of the session's mirror" },
  'repository-inside-root': { gitMount: "--repo's git metadata is inside the sandbox root" },
  'relative-gitdir-unresolvable': {
    gitMount: "the workspace's .git names a relative gitdir, which resolves elsewhere inside than on the host",
  },
  'reserved-destination': {
    gitMount:
      'git metadata would be mounted at, under or above a reserved path inside (/proc /sys /dev /sandbox /sandbox-secrets /etc /usr /bin /sbin /lib /lib64 /run /boot)',
  },
  'submodule-worktree-mismatch': { gitMount: "a submodule's core.worktree names another directory than the workspace" },
  'workspace-git-moved': { gitMount: "the workspace's git metadata no longer names the repository it was made from" },
  'worktree-registration-mismatch': { gitMount: "<gitdir>/gitdir does not name the worktree's .git (git worktree repair)" },

  // 88 limits
  'cgroup-parent-failed': { limits: "the session's parent cgroup cannot be made (library)" },
  'controller-missing': { limits: 'cgroup v1 without the memory, pids or cpu hierarchy' },
  'controllers-not-delegated': { limits: 'cgroup v2 without memory, pids and cpu available (rootless: in user@UID.service)' },
  'no-kernel-log': { limits: 'cgroup v1 and the kernel log cannot be read: OOM and pids-limit kills could not be told' },
  'no-limit-mechanism': { limits: 'no user manager and no prlimit: the hatch never runs an agent without limits' },
  'no-room-for-disk': { limits: "--disk is more than the root's filesystem has room for" },
  'rootless-cgroup-v1': { limits: 'rootless podman on cgroup v1 ignores every limit' },
  'swap-limit-unsupported': { limits: 'cgroup v1 without swap accounting (podman would drop --memory-swap)' },

  // 89 systemd-run
  'status-dir-failed': { systemdRun: "the handoff's status directory under /run/user/<uid> cannot be made" },
  'systemd-run-failed': {
    systemdRun:
      'systemd-run ended and the command left no status: the handoff itself failed (bus, unit, option); detail: `systemdRunExit`, `systemdRunSignal`, `unit`',
  },

  // 90 policy
  'agent-ancestor': { policy: 'an ancestor process is an agent CLI (the hatch)' },
  'agent-marker': { policy: "an agent's marker variable is set (the hatch; the message names it, never its value)" },
  'container-environment': { policy: 'the hatch runs inside a container' },
  'handoff-recursion': {
    policy: 'already inside a handoff unit and NoNewPrivs is still 1: another handoff would not clear it and would nest forever',
  },
  'hatch-loop': { policy: 'the program on PATH is the hatch itself' },
  'inside-container': { policy: 'the launcher runs inside a container: a session does not start sessions' },
  'no-tty': { policy: 'stdin or stdout is not a terminal (the hatch is for a human)' },
  recursion: { policy: 'already inside an agent-sandbox session (AGENT_SANDBOX_SESSION is set)' },
  'wrong-node': { policy: 'the request is meant for another node' },

  // 91 internal
  'bundle-create-failed': { internal: 'git bundle create failed on a repository the launcher made' },
  'bundle-fetch-failed': { internal: 'fetching a checked bundle into the repository failed' },
  'git-store-manifest': { internal: "the session's git store manifest cannot be read or written" },
  internal: { internal: 'a bug: anything thrown that is not a refusal' },
  'no-new-privs-unmeasurable': { internal: '/proc/self/status has no NoNewPrivs field (kernel < 4.10)' },
  'no-ssh-entry': { internal: 'a remote host of the registry has no ssh entry' },
  'podman-failed': { internal: 'a podman command the tool needed failed' },
  'proc-unreadable': { internal: '/proc cannot be read' },
  'reader-init-failed': { internal: "the reader repository of the session's git store cannot be made" },
  'stop-unanswered': { internal: "the session's launcher did not end it within the grace and two minutes after `agent-sandbox stop`" },
  'worktree-not-linked': { internal: 'git worktree add made a workspace that is not a linked worktree (here, or of the mirror on a node)' },

  // 92 busy
  'workspace-busy': { busy: 'another session holds the workspace (the message names who, since when, which container)' },
  'id-busy': {
    busy: "a session of the same workspace id runs from another root on this host (its container, cgroup and socket names are the id's)",
  },

  // 93 no session running
  'no-running-session': { notRunning: 'stop or shell named a workspace in which no session runs now' },
} as const satisfies Record<string, Partial<Record<ExitName, string>>>;

export type ErrorCode = keyof typeof errorCodes;

/** The exits a code may have (nearly always one). */
export type ExitOf<C extends ErrorCode> = keyof (typeof errorCodes)[C] & ExitName;

/** The codes that may have the exit E (for helpers that refuse with one exit). */
export type CodeOf<E extends ExitName> = { [C in ErrorCode]: E extends ExitOf<C> ? C : never }[ErrorCode];

/** Every (code, exit, meaning) row of the table, in its order. */
export function errorCodeRows(): { code: ErrorCode; exit: ExitName; meaning: string }[] {
  return (Object.entries(errorCodes) as [ErrorCode, Partial<Record<ExitName, string>>][]).flatMap(([code, exits]) =>
    (Object.entries(exits) as [ExitName, string][]).map(([exit, meaning]) => ({ code, exit, meaning })),
  );
}

/**
 * `agent-sandbox workspace new|list|rm|import`: the command's wiring (positionals after the command
 * name pick the action). Human text on stderr; `--json` prints the document on stdout.
 */
import path from 'node:path';
import { ToolError, type CommandSpec, type RunContext } from '@agent-sandbox/shared';
import { defaultLedgerPath } from '../ledger/append.js';
import { defaultRoot, homeOf } from '../session/request.js';
import { formatWorkspaceList, workspaceList } from '../workspace/list.js';
import { workspaceImport } from '../recovery/kept-store-import.js';
import { workspaceNew } from '../workspace/new.js';
import { workspaceRm } from '../workspace/rm.js';

const usage = 'workspace new ID --repo DIR [--branch NAME] [--from REF] | workspace list | workspace rm ID [--force] | workspace import ID';

function opt(ctx: RunContext, key: string): string | undefined {
  const v = ctx.options[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') throw new ToolError('usage', 'bad-flag', `--${key}: expected a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function absoluteOpt(ctx: RunContext, key: string): string | undefined {
  const v = opt(ctx, key);
  if (v !== undefined && !path.isAbsolute(v)) throw new ToolError('usage', 'bad-flag', `--${key}: expected an absolute path, got ${JSON.stringify(v)}`);
  return v;
}

function onlyFlags(ctx: RunContext, action: string, allowed: string[]): void {
  const given = Object.entries(ctx.options).filter(([, v]) => v !== undefined && v !== false).map(([k]) => k);
  const extra = given.find((k) => !allowed.includes(k));
  if (extra) throw new ToolError('usage', 'bad-flag', `workspace ${action}: --${extra.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} does not apply (${usage})`);
}

function positional(ctx: RunContext, action: string, count: number): string[] {
  const args = ctx.rest.slice(1);
  if (args.length !== count) throw new ToolError('usage', 'bad-flag', `workspace ${action}: expected ${count === 0 ? 'no arguments' : 'ID'}, got ${JSON.stringify(args)} (${usage})`);
  return args;
}

async function runAction(ctx: RunContext) {
  const action = ctx.rest[0];
  const rootFlag = absoluteOpt(ctx, 'root');
  const root = rootFlag ?? defaultRoot(homeOf(ctx.env));
  const json = ctx.options['json'] === true;
  if (action === 'new') {
    onlyFlags(ctx, 'new', ['repo', 'branch', 'from', 'root', 'json']);
    const [id] = positional(ctx, 'new', 1);
    const repo = opt(ctx, 'repo');
    if (!repo) throw new ToolError('usage', 'missing-flag', '--repo: required (the git repository the workspace is a worktree of)');
    const branch = opt(ctx, 'branch');
    const from = opt(ctx, 'from');
    const doc = await workspaceNew({ id: id!, repo, root, rootGiven: rootFlag !== undefined, ...(branch ? { branch } : {}), ...(from ? { from } : {}) });
    ctx.log(`agent-sandbox: workspace ${doc.id} is ${doc.workspace}, branch ${doc.branch.replace(/^refs\/heads\//, '')} of ${doc.repository} at ${doc.base.slice(0, 12)}`);
    ctx.log(`agent-sandbox: start a session there: ${doc.next}`);
    return json ? { output: doc } : {};
  }
  if (action === 'list') {
    onlyFlags(ctx, 'list', ['root', 'ledger', 'json']);
    positional(ctx, 'list', 0);
    const doc = await workspaceList(root, absoluteOpt(ctx, 'ledger') ?? defaultLedgerPath(ctx.env, homeOf(ctx.env)));
    if (json) return { output: doc };
    for (const line of formatWorkspaceList(doc)) ctx.log(line);
    return {};
  }
  if (action === 'rm') {
    onlyFlags(ctx, 'rm', ['root', 'force', 'json']);
    const [id] = positional(ctx, 'rm', 1);
    const doc = await workspaceRm({ id: id!, root, force: ctx.options['force'] === true });
    ctx.log(`agent-sandbox: removed workspace ${doc.id}${doc.discarded ? ` (discarded ${doc.discarded} uncommitted paths)` : ''}; its branch ${doc.branch?.replace(/^refs\/heads\//, '') ?? ''} stays in the repository`);
    return json ? { output: doc } : {};
  }
  if (action === 'import') {
    onlyFlags(ctx, 'import', ['root', 'json']);
    const [id] = positional(ctx, 'import', 1);
    const doc = await workspaceImport({ id: id!, root, log: ctx.log });
    return json ? { output: doc } : {};
  }
  throw new ToolError('usage', 'bad-flag', `workspace: expected new, list, rm or import, got ${JSON.stringify(action ?? '')} (${usage})`);
}

export function workspaceCommand(): CommandSpec {
  return {
    name: 'workspace',
    describe: `make, list and remove workspaces (linked worktrees under <root>/workspaces), import a kept git store: ${usage}`,
    takesCommand: true,
    options: [
      { flag: 'repo', type: 'string', describe: 'new: the git repository the workspace is a linked worktree of' },
      { flag: 'branch', type: 'string', describe: 'new: the branch to check out (default agent/<id>; made from --from when it does not exist)' },
      { flag: 'from', type: 'string', describe: "new: where a new branch starts (default the repository's HEAD)" },
      { flag: 'force', type: 'boolean', describe: 'rm: discard uncommitted work' },
      { flag: 'root', type: 'string', describe: 'permitted root (default $HOME/sandbox)' },
      { flag: 'ledger', type: 'string', describe: 'list: the ledger to read last sessions from' },
      { flag: 'json', type: 'boolean', describe: 'print the document (JSON) on stdout' },
    ],
    examples: [
      ['agent-sandbox workspace new fix-1 --repo ~/src/project', 'a worktree of ~/src/project on branch agent/fix-1'],
      ['agent-sandbox workspace list', 'every workspace, its branch, last session and uncommitted work'],
      ['agent-sandbox workspace rm fix-1', 'remove it (the branch stays)'],
      ['agent-sandbox workspace import fix-1', 'import the git store a failed import kept (its commits come home)'],
    ],
    run: async (_input, ctx) => await runAction(ctx),
  };
}

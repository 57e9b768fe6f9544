/**
 * `agent-sandbox workspace new|list|rm|import`: the command's wiring (positionals after the command
 * name pick the action). Human text on stderr; `--json` prints the document on stdout.
 */
import { ToolError, type CommandSpec, type RunContext } from '@agent-sandbox/shared';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import { WorkspaceOptions, WorkspaceOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { pathDefaults } from '../paths.js';
import { formatWorkspaceList, workspaceList } from '../workspace/list.js';
import { workspaceImport } from '../recovery/kept-store-import.js';
import { workspaceNew } from '../workspace/new.js';
import { workspaceRm } from '../workspace/rm.js';

const usage = 'workspace new ID --repo DIR [--branch NAME] [--from REF] | workspace list | workspace rm ID [--force] | workspace import ID';

function onlyFlags(ctx: RunContext, action: string, allowed: string[]): void {
  const given = Object.entries(ctx.options)
    .filter(([, v]) => v !== undefined && v !== false)
    .map(([k]) => k);
  const extra = given.find((k) => !allowed.includes(k));
  if (extra)
    throw new ToolError(
      'usage',
      'bad-flag',
      `workspace ${action}: --${extra.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} does not apply (${usage})`,
    );
}

function positional(ctx: RunContext, action: string, count: number): string[] {
  const args = ctx.rest.slice(1);
  if (args.length !== count)
    throw new ToolError(
      'usage',
      'bad-flag',
      `workspace ${action}: expected ${count === 0 ? 'no arguments' : 'ID'}, got ${JSON.stringify(args)} (${usage})`,
    );
  return args;
}

async function runAction(ctx: RunContext) {
  const action = ctx.rest[0];
  const { root: defaultRoot, ledgerFile } = pathDefaults(ctx.env);
  const options: WorkspaceOptions = readOptions(WorkspaceOptions, WorkspaceOptionsSchema, ctx.options, { root: defaultRoot, ledgerFile });
  const { root, json } = options;
  if (action === 'new') {
    onlyFlags(ctx, 'new', ['repo', 'branch', 'from', 'root', 'json']);
    const [id] = positional(ctx, 'new', 1);
    const { repo, branch, from } = options;
    if (!repo) throw new ToolError('usage', 'missing-flag', '--repo: required (the git repository the workspace is a worktree of)');
    const doc = await workspaceNew({
      id: id!,
      repo,
      root,
      rootGiven: ctx.options['root'] !== undefined,
      ...(branch ? { branch } : {}),
      ...(from ? { from } : {}),
    });
    ctx.log(
      `agent-sandbox: workspace ${doc.id} is ${doc.workspace}, branch ${doc.branch.replace(/^refs\/heads\//, '')} of ${doc.repository} at ${doc.base.slice(0, 12)}`,
    );
    ctx.log(`agent-sandbox: start a session there: ${doc.next}`);
    return json ? { output: doc } : {};
  }
  if (action === 'list') {
    onlyFlags(ctx, 'list', ['root', 'ledger', 'json']);
    positional(ctx, 'list', 0);
    const doc = await workspaceList(root, options.ledgerFile);
    if (json) return { output: doc };
    for (const line of formatWorkspaceList(doc)) ctx.log(line);
    return {};
  }
  if (action === 'rm') {
    onlyFlags(ctx, 'rm', ['root', 'force', 'json']);
    const [id] = positional(ctx, 'rm', 1);
    const doc = await workspaceRm({ id: id!, root, force: options.force });
    ctx.log(
      `agent-sandbox: removed workspace ${doc.id}${doc.discarded ? ` (discarded ${doc.discarded} uncommitted paths)` : ''}; its branch ${doc.branch?.replace(/^refs\/heads\//, '') ?? ''} stays in the repository`,
    );
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
    options: flagsOf(WorkspaceOptionsSchema),
    examples: [
      ['agent-sandbox workspace new fix-1 --repo ~/src/project', 'a worktree of ~/src/project on branch agent/fix-1'],
      ['agent-sandbox workspace list', 'every workspace, its branch, last session and uncommitted work'],
      ['agent-sandbox workspace rm fix-1', 'remove it (the branch stays)'],
      ['agent-sandbox workspace import fix-1', 'import the git store a failed import kept (its commits come home)'],
    ],
    run: async (_input, ctx) => await runAction(ctx),
  };
}

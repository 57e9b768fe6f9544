/**
 * `agent-sandbox prune [--older-than DUR] [--keep N] [--max-bytes SIZE] [--dry-run] [--ledger FILE]`:
 * the retention of the per-session logs (retention.ts), by hand, with other numbers if given.
 * Prints `{ok, removed, kept, bytes, dryRun, policy}`; a line on stderr says what it did.
 */
import path from 'node:path';
import { ToolError, type CommandSpec, type RunContext } from '@agent-sandbox/shared';
import { parseDuration, parseSize } from '@agent-sandbox/shared/limits';
import type { PruneOutput } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { defaultLedgerPath } from '../ledger/append.js';
import { homeOf } from '../session/request.js';
import { applyRetention, defaultRetention, type RetentionPolicy } from '../ledger/retention.js';

/** "30d", "12h", "90m", "45s" or seconds -> ms (days beside the durations --timeout takes). */
export function parseAge(flag: string, value: string): number {
  const days = /^([0-9]+)d$/.exec(value.trim());
  if (days) return Number(days[1]) * 24 * 3600 * 1000;
  if (/^0+$/.test(value.trim())) return 0;
  return parseDuration(flag, value) * 1000;
}

function stringOpt(ctx: RunContext, key: string): string | undefined {
  const v = ctx.options[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw new ToolError('usage', 'bad-flag', `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: expected a value, got ${JSON.stringify(v)}`);
  return v;
}

/** The policy: the retention's numbers, each replaced by its flag when given. */
export function policyOf(ctx: RunContext): RetentionPolicy {
  const olderThan = stringOpt(ctx, 'olderThan');
  const keep = stringOpt(ctx, 'keep');
  const maxBytes = stringOpt(ctx, 'maxBytes');
  if (keep !== undefined && !/^[0-9]+$/.test(keep)) throw new ToolError('usage', 'bad-flag', `--keep: expected a whole number of files, got ${JSON.stringify(keep)}`);
  return {
    keep: keep === undefined ? defaultRetention.keep : Number(keep),
    olderThanMs: olderThan === undefined ? defaultRetention.olderThanMs : parseAge('--older-than', olderThan),
    maxBytes: maxBytes === undefined ? defaultRetention.maxBytes : parseSize('--max-bytes', maxBytes),
  };
}

export function pruneCommand(): CommandSpec {
  return {
    name: 'prune',
    describe: 'remove per-session logs past the retention (newest 200 per kind, 30 days, 1 GiB); also done after every session',
    options: [
      { flag: 'older-than', type: 'string', describe: 'remove files older than this (30d, 12h, 90m; default 30d)' },
      { flag: 'keep', type: 'string', describe: 'keep at most this many files per kind, newest first (default 200)' },
      { flag: 'max-bytes', type: 'string', describe: 'keep at most this much per kind, newest first (default 1g)' },
      { flag: 'dry-run', type: 'boolean', describe: 'say what would be removed; remove nothing' },
      { flag: 'ledger', type: 'string', describe: 'the ledger whose directory holds the logs (default ${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl)' },
    ],
    examples: [
      ['agent-sandbox prune --dry-run', 'what the retention would remove now'],
      ['agent-sandbox prune --older-than 7d --keep 50', 'keep less'],
    ],
    run: async (_input, ctx) => {
      const ledger = stringOpt(ctx, 'ledger') ?? defaultLedgerPath(ctx.env, homeOf(ctx.env));
      if (!path.isAbsolute(ledger)) throw new ToolError('usage', 'bad-flag', `--ledger: expected an absolute path, got ${JSON.stringify(ledger)}`);
      const policy = policyOf(ctx);
      const dryRun = ctx.options['dryRun'] === true;
      const result = applyRetention(path.dirname(ledger), policy, { dryRun });
      ctx.log(`agent-sandbox: ${dryRun ? 'would remove' : 'removed'} ${result.removed.length} per-session logs (${result.bytes} bytes), kept ${result.kept}`);
      const output: PruneOutput = { ok: true, ...result, dryRun, policy: { keep: policy.keep, olderThan: `${Math.round(policy.olderThanMs / 1000)}s`, maxBytes: policy.maxBytes } };
      return { output };
    },
  };
}

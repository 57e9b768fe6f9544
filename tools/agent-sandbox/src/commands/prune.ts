/**
 * `agent-sandbox prune [--older-than DUR] [--keep N] [--max-bytes SIZE] [--dry-run] [--ledger FILE]`:
 * the retention of the per-session logs (retention.ts), by hand, with other numbers if given.
 * Prints `{ok, removed, kept, bytes, dryRun, policy}`; a line on stderr says what it did.
 */
import path from 'node:path';
import type { CommandSpec } from '@agent-sandbox/shared';
import { parseDuration, parseSize } from '@agent-sandbox/shared/limits';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import type { PruneOutput } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { PruneOptions, PruneOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { applyRetention, defaultRetention, type RetentionPolicy } from '../ledger/retention.js';
import { pathDefaults } from '../paths.js';

/** "30d", "12h", "90m", "45s" or seconds -> ms (days beside the durations --timeout takes). */
export function parseAge(flag: string, value: string): number {
  const days = /^([0-9]+)d$/.exec(value.trim());
  if (days) return Number(days[1]) * 24 * 3600 * 1000;
  if (/^0+$/.test(value.trim())) return 0;
  return parseDuration(flag, value) * 1000;
}

/** The policy: the retention's numbers, each replaced by its flag when given. */
export function policyOf(options: PruneOptions): RetentionPolicy {
  return {
    keep: options.keep === undefined ? defaultRetention.keep : Number(options.keep),
    olderThanMs: options.olderThan === undefined ? defaultRetention.olderThanMs : parseAge('--older-than', options.olderThan),
    maxBytes: options.maxBytes === undefined ? defaultRetention.maxBytes : parseSize('--max-bytes', options.maxBytes),
  };
}

export function pruneCommand(): CommandSpec {
  return {
    name: 'prune',
    describe: 'remove per-session logs past the retention (newest 200 per kind, 30 days, 1 GiB); also done after every session',
    options: flagsOf(PruneOptionsSchema),
    examples: [
      ['agent-sandbox prune --dry-run', 'what the retention would remove now'],
      ['agent-sandbox prune --older-than 7d --keep 50', 'keep less'],
    ],
    run: async (_input, ctx) => {
      const options = readOptions(PruneOptions, PruneOptionsSchema, ctx.options, { ledgerFile: pathDefaults(ctx.env).ledgerFile });
      const policy = policyOf(options);
      const { dryRun } = options;
      const result = applyRetention(path.dirname(options.ledgerFile), policy, { dryRun });
      ctx.log(
        `agent-sandbox: ${dryRun ? 'would remove' : 'removed'} ${result.removed.length} per-session logs (${result.bytes} bytes), kept ${result.kept}`,
      );
      const output: PruneOutput = {
        ok: true,
        ...result,
        dryRun,
        policy: { keep: policy.keep, olderThan: `${Math.round(policy.olderThanMs / 1000)}s`, maxBytes: policy.maxBytes },
      };
      return { output };
    },
  };
}

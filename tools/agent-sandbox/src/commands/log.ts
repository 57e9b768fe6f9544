/**
 * `agent-sandbox log [--ledger FILE] [-n N] [--json]`: the recent sessions in words, one row
 * each, oldest first: when it started, which workspace and runtime, where, how it ended (the
 * exit status and the reason), how long it took, its peaks and its egress (what the broker
 * allowed, which hosts it refused and why). The table is what the command is for, so it goes
 * to stdout (`agent-sandbox log | less` pages it); `--json` prints the ledger's own lines on
 * stdout instead, unchanged (JSON lines, schema agent-sandbox.ledger-line). "No sessions" is a
 * note, on stderr. Reads the rotated `<ledger>.1` too when -n reaches past the current file.
 */
import type { CommandSpec } from '@agent-sandbox/shared';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { LogOptions, LogOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { describeDuration, describeEgressCell, describePeak } from '../ledger/describe.js';
import { recentLines } from '../ledger/read.js';
import { pathDefaults } from '../paths.js';
import type { Entry } from './entry.js';

export const defaultCount = Number(LogOptionsSchema.properties.count.default);

/** One row of the table: every cell made safe to print (a session chooses its host names, an agent its reasons). */
function rowOf(line: LedgerLine): string[] {
  const ended = line.outcome === 'refused' ? `refused ${line.exitCode} ${line.reason}` : `exit ${line.exitCode} ${line.reason}`;
  return [
    line.startedAt.replace(/\.\d+Z$/, 'Z'),
    line.sessionId,
    line.runtime,
    line.host,
    ended,
    describeDuration(line),
    describePeak(line.peak),
    describeEgressCell(line),
  ].map((cell) => forTerminal(cell));
}

/** The table: a header, then one row per line, columns padded (the last one is not). */
export function formatLog(lines: LedgerLine[], ledgerFile: string): string[] {
  if (lines.length === 0) return [`no sessions in ${forTerminal(ledgerFile)}`];
  const rows = [['STARTED', 'WORKSPACE', 'RUNTIME', 'HOST', 'ENDED', 'TOOK', 'PEAK', 'EGRESS'], ...lines.map(rowOf)];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
}

export function logCommand(entry: Entry): CommandSpec {
  return {
    name: 'log',
    describe:
      'the recent sessions: when, which workspace, how each ended, peaks and egress (a table on stdout; --json: the ledger lines instead)',
    options: flagsOf(LogOptionsSchema),
    examples: [
      ['agent-sandbox log', `the last ${defaultCount} sessions`],
      ['agent-sandbox log -n 100 --json | jq .egress.summary.refused', 'what the broker refused, as JSON'],
    ],
    run: async (_input, ctx) => {
      const { ledgerFile, count, json } = readOptions(LogOptions, LogOptionsSchema, ctx.options, {
        ledgerFile: pathDefaults(ctx.env).ledgerFile,
      });
      const lines = recentLines(ledgerFile, Number(count));
      if (json) {
        entry.writeStdout(lines.map(({ raw }) => `${raw}\n`).join(''));
        return {};
      }
      if (lines.length === 0) ctx.log(`no sessions in ${forTerminal(ledgerFile)}`);
      else
        entry.writeStdout(
          formatLog(
            lines.map(({ line }) => line),
            ledgerFile,
          )
            .map((row) => `${row}\n`)
            .join(''),
        );
      return {};
    },
  };
}

/**
 * `agent-sandbox ps [--json] [--root R]`: the running sessions of a root, one row each: the
 * workspace, runtime, host, uptime, and each ceiling's use now (memory, pids, CPU, the disk's
 * bytes and files as its launcher last counted them), and what the broker reached and refused
 * so far. The table is what the command is for, so it goes to stdout (it pipes); `--json` prints
 * one object per session (JSON lines, schema agent-sandbox.ps-line). "No sessions" is a note on
 * stderr. It reads what the sessions already keep (workspace/session-now.ts); none pays for it.
 */
import type { CommandSpec } from '@agent-sandbox/shared';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import type { PsLine } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { PsOptions, PsOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { PsLine as PsLineCheck } from '@agent-sandbox/shared/validators/agent-sandbox-reports';
import { askNode, remoteHost } from '../dispatch/ask-node.js';
import { describeUptime } from '../ledger/describe.js';
import { pathDefaults } from '../paths.js';
import { runningSessions } from '../workspace/running.js';
import { sessionNow } from '../workspace/session-now.js';
import type { Entry } from './entry.js';

/** Bytes in a few characters: 512, 12.3k, 4.0m, 1.5g. */
export function shortSize(bytes: number): string {
  const units = ['k', 'm', 'g', 't'];
  let value = bytes;
  let unit = '';
  for (const next of units) {
    if (value < 1024) break;
    value /= 1024;
    unit = next;
  }
  return unit === '' ? String(value) : `${value < 10 ? value.toFixed(1) : Math.round(value)}${unit}`;
}

const isPsLine = (value: unknown): value is PsLine => PsLineCheck(value);

const of = (now: string, limit: string | null) => (limit === null ? now : `${now}/${limit}`);

/** One row of the table; every cell made safe to print. */
function rowOf(s: PsLine): string[] {
  const memory = of(
    s.memory.bytes === null ? '-' : shortSize(s.memory.bytes),
    s.memory.limitBytes === null ? null : shortSize(s.memory.limitBytes),
  );
  const pids = of(s.pids.current === null ? '-' : String(s.pids.current), s.pids.limit === null ? null : String(s.pids.limit));
  const cpu =
    s.cpu.seconds === null
      ? '-'
      : `${s.cpu.seconds.toFixed(1)}s${s.cpu.average === null ? '' : ` (${s.cpu.average.toFixed(2)}${s.cpu.limit === null ? '' : `/${s.cpu.limit}`})`}`;
  const disk = of(s.disk.bytes === null ? '-' : shortSize(s.disk.bytes), s.disk.limitBytes === null ? null : shortSize(s.disk.limitBytes));
  const files = of(s.disk.files === null ? '-' : String(s.disk.files), s.disk.limitFiles === null ? null : String(s.disk.limitFiles));
  const egress = s.egress.reached === null ? s.egress.mode : `${s.egress.reached} reached, ${s.egress.refused} refused`;
  const published = s.published.map((p) => `127.0.0.1:${p.hostPort}->${p.port}`).join(',');
  return [
    s.workspace,
    s.runtime,
    s.host,
    describeUptime(s.uptimeSeconds),
    memory,
    pids,
    cpu,
    disk,
    files,
    egress + (published ? `; ${published}` : ''),
  ].map((c) => forTerminal(c));
}

/** The table: a header, then one row per session, columns padded (the last one is not). */
export function formatPs(sessions: PsLine[]): string[] {
  const rows = [
    ['WORKSPACE', 'RUNTIME', 'HOST', 'UP', 'MEMORY', 'PIDS', 'CPU (AVG/CPUS)', 'DISK', 'FILES', 'EGRESS'],
    ...sessions.map(rowOf),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
}

export function psCommand(entry: Entry): CommandSpec {
  return {
    name: 'ps',
    describe:
      'the running sessions of a root: workspace, runtime, host, uptime, each ceiling now, egress so far (a table on stdout; --json: JSON lines)',
    options: flagsOf(PsOptionsSchema),
    examples: [
      ['agent-sandbox ps', 'what runs now, against its ceilings'],
      ['agent-sandbox ps --json | jq .memory', 'the same as JSON lines (schema agent-sandbox.ps-line)'],
      ['agent-sandbox ps --host node-1', "a dispatch node's sessions, asked over its ssh identity"],
    ],
    run: async (_input, ctx) => {
      const paths = pathDefaults(ctx.env);
      const options = readOptions(PsOptions, PsOptionsSchema, ctx.options, { root: paths.root, registryFile: paths.registryFile });
      const { root, json } = options;
      const remote = await remoteHost(options, ctx.options);
      const sessions = remote
        ? await askNode(remote, { kind: 'ps' }, isPsLine)
        : runningSessions(root).map((running) => sessionNow(running));
      if (json) entry.writeStdout(sessions.map((s) => `${JSON.stringify(s)}\n`).join(''));
      else if (sessions.length === 0) ctx.log(`agent-sandbox: no session runs in ${forTerminal(root)}`);
      else
        entry.writeStdout(
          formatPs(sessions)
            .map((row) => `${row}\n`)
            .join(''),
        );
      return {};
    },
  };
}

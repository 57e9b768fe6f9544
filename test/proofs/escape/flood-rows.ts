// The escape suite's flood rows (issue 24): a loop of empty files under --disk, and 25 s of
// CONNECTs through the broker, to distinct names and to one denied name. Registered by
// escape-attempts.test.ts on the sessions it started (runs.ts).
import { describeRss } from './floods.js';
import type { Registrar, Runs, Unwrap } from './seam-rows.js';

/** The flood rows (issue 24): files, then the broker's. */
export function floodRows(t: Registrar, req: { skip: string | false }, runs: Runs | undefined, unwrap: Unwrap): void {
  filesFloodRow(t, req, runs, unwrap);
  egressFloodRows(t, req, runs, unwrap);
}

function filesFloodRow(t: Registrar, req: { skip: string | false }, runs: Runs | undefined, unwrap: Unwrap): void {
  t.test(
    'a loop of empty files under --disk 1g ends as "disk-limit" on the file ceiling (65 536), within its stated overshoot [issue 24]',
    req,
    async (tt) => {
      const o = unwrap(tt, await runs!.filesFlooded);
      if (!o) return;
      const disk = o.line?.['evidence']?.['disk'] ?? {};
      tt.equal(
        o.line?.['reason'],
        'disk-limit',
        `the ledger says disk-limit (exit ${o.end.exitCode}, stderr tail: ${o.end.stderr.slice(-300)})`,
      );
      tt.equal(disk['exceeded'], 'files', 'the evidence says the file ceiling was the one passed');
      tt.equal(disk['limitFiles'], 65_536, 'one file per 16 KiB of --disk 1g');
      tt.ok(o.made >= 60_000, `control: the loop really made files (${o.made} by its last report)`);
      tt.ok(disk['writtenBytes'] < 64 * 2 ** 20, `while the bytes stayed far below 1g (${disk['writtenBytes']})`);
      // The stated overshoot (tools/agent-sandbox/README.md, docs/performance.md): at most a quarter of the ceiling, at the decision and after the stop.
      tt.ok(
        disk['writtenFiles'] > 65_536 && disk['writtenFiles'] <= 1.25 * 65_536,
        `${disk['writtenFiles']} files at the decision (walk of ${disk['walkMs']} ms)`,
      );
      tt.ok(o.left <= 1.25 * 65_536, `${o.left} inodes left in the workspace and home after the stop`);
      tt.comment(
        `files flood: ${disk['writtenFiles']} at the decision (+${disk['writtenFiles'] - 65_536}), ${o.left} left (+${o.left - 65_536}), ${disk['walks']} walks, session ${o.end.ms} ms`,
      );
    },
  );
}

/** CONNECTs to distinct names and to one denied name: the ledger, the attempt log and the launcher stay bounded. */
function egressFloodRows(t: Registrar, req: { skip: string | false }, runs: Runs | undefined, unwrap: Unwrap): void {
  for (const [mode, key, what] of [
    ['distinct', 'namesFlooded', 'tens of thousands of distinct names'],
    ['identical', 'denialsFlooded', 'one denied name'],
  ] as const) {
    t.test(
      `25 s of CONNECTs to ${what} leave every ledger line under 64 KiB, the attempt log under 16 MiB and the launcher under 150 MiB [issue 24]`,
      req,
      async (tt) => {
        const o = unwrap(tt, await runs![key]);
        if (!o) return;
        const summary = o.lines[0]?.['egress']?.['summary'] ?? {};
        tt.equal(o.end.exitCode, 0, `the flood ran to its end (${o.report}; stderr tail: ${o.end.stderr.slice(-300)})`);
        tt.ok(o.sent >= 10_000, `control: ${o.sent} CONNECTs sent${mode === 'distinct' ? ', each to a new name' : ''}`);
        tt.ok(
          summary['attempts'] >= 10_000,
          `the broker counted ${summary['attempts']} attempts (${summary['rate']?.['delayed']} paced by the rate limit)`,
        );
        tt.equal(o.lines.length, 1, 'one ledger line');
        tt.ok(
          o.lineBytes.every((b) => b < 64 * 1024),
          `every ledger line under 64 KiB (${o.lineBytes.join(', ')} bytes)`,
        );
        tt.ok(
          summary['refused']?.length <= 20,
          `the summary names ${summary['refused']?.length} rows, then others: ${JSON.stringify(summary['others']?.['refused'])}`,
        );
        tt.ok(o.logBytes >= 0 && o.logBytes < 16 * 2 ** 20, `the attempt log is ${o.logBytes} bytes`);
        tt.ok(o.rss.peakMiB > 0 && o.rss.peakMiB < 150, `the launcher's peak RSS was ${o.rss.peakMiB.toFixed(1)} MiB`);
        tt.comment(
          `${mode} flood: sent ${o.sent}, counted ${summary['attempts']}, ledger line ${o.lineBytes.join(', ')} B, log ${o.logBytes} B, launcher peak ${o.rss.peakMiB.toFixed(1)} MiB, RSS MiB over time: ${describeRss(o.rss)}`,
        );
      },
    );
  }
}

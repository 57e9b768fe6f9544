import t from 'tap';
import { egressFlood, filesFlood, describeRss } from './escape/floods.js';
const which = process.env['FLOODS'] ?? 'files,distinct,identical';
if (which.includes('files')) t.test('files', async (tt) => {
  const o = await filesFlood(tt);
  tt.comment(JSON.stringify({ exit: o.end.exitCode, ms: o.end.ms, made: o.made, left: o.left, disk: o.line?.['evidence']?.['disk'], reason: o.line?.['reason'] }));
});
for (const mode of ['distinct', 'identical'] as const) if (which.includes(mode)) t.test(mode, async (tt) => {
  const o = await egressFlood(tt, mode);
  const s = o.lines[0]?.['egress']?.['summary'] ?? {};
  tt.comment(JSON.stringify({ exit: o.end.exitCode, ms: o.end.ms, report: o.report, lineBytes: o.lineBytes, logBytes: o.logBytes, peak: o.rss.peakMiB, attempts: s.attempts, rate: s.rate, others: s.others, log: s.log }));
  tt.comment(describeRss(o.rss));
  tt.comment(o.end.stderr.slice(-1500));
});

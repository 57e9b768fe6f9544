// Floods of what crosses back to the host (issue 24), each one session through the launcher:
// empty files under --disk 1g (they cost no bytes: only the file ceiling sees them), and 25 s
// of CONNECTs to the session's broker, to tens of thousands of distinct names and to one denied
// name. What the host kept of each is measured: the ledger lines, the attempt log, the files
// left, and the launcher's own memory, sampled from /proc/<pid>/status while it runs.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import type { Teardown } from '@agent-sandbox/testkit';
import { addWorkspace, launch, ledgerLines, sessionRoot, type LaunchEnd } from './session-kit.js';

/** The launcher's resident memory over time and at its peak (VmHWM), read until it exits. */
export interface RssTrace {
  peakMiB: number;
  /** [seconds since start, RSS MiB], one a second. */
  samples: Array<[number, number]>;
}

function sampleRss(pid: number | undefined, done: Promise<unknown>): Promise<RssTrace> {
  const trace: RssTrace = { peakMiB: 0, samples: [] };
  const began = Date.now();
  let last = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
      trace.peakMiB = Math.max(trace.peakMiB, kib('VmHWM') / 1024);
      if (Date.now() - last >= 1000) {
        last = Date.now();
        trace.samples.push([Math.round((last - began) / 1000), Math.round(kib('VmRSS') / 1024)]);
      }
    } catch {
      // exited
    }
  };
  const timer = setInterval(read, 200);
  return done.then(() => (clearInterval(timer), trace));
}

/** Inodes under the directories (files, directories, links): what the session left of the host's. */
async function duInodes(dirs: string[]): Promise<number> {
  const out = await execa('du', ['-s', '--inodes', '-c', '--', ...dirs], { env: { LC_ALL: 'C', PATH: '/usr/bin:/bin' } });
  return Number(/^(\d+)\s+total$/m.exec(String(out.stdout))?.[1]);
}

export interface FilesFlood {
  end: LaunchEnd;
  line: Record<string, any> | undefined;
  /** Files the flood had made by its last report (every 10 000). */
  made: number;
  /** Inodes the workspace and home hold after the session. */
  left: number;
}

/** A loop of empty files under --disk 1g (file ceiling 65 536). */
export async function filesFlood(t: Teardown): Promise<FilesFlood> {
  const r = await sessionRoot(t, 'files');
  const ws = await addWorkspace(t, r, 'files');
  const end = await launch(r, ws, '/usr/bin/node', [`${ws.inside}/.astest/files-flood.js`, `${ws.inside}/flood`], ['--disk', '1g'], 600_000)
    .done;
  let made = 0;
  try {
    made = Number(readFileSync(path.join(ws.path, 'flood', '.made'), 'utf8').trim());
  } catch {
    // it made no 10 000
  }
  return { end, line: ledgerLines(ws)[0], made, left: await duInodes([ws.path, ws.home]) };
}

export interface EgressFlood {
  end: LaunchEnd;
  lines: Array<Record<string, any>>;
  /** Every ledger line's size in bytes, newline included. */
  lineBytes: number[];
  /** The flood's own report: what it sent and how it was answered. */
  sent: number;
  report: string;
  logBytes: number;
  rss: RssTrace;
}

/** 25 s of CONNECTs on 1 000 connections at once, straight to the broker's socket. */
export async function egressFlood(t: Teardown, mode: 'distinct' | 'identical', seconds = 25): Promise<EgressFlood> {
  const r = await sessionRoot(t, `egress-${mode}`);
  const ws = await addWorkspace(t, r, `egress-${mode}`);
  const run = launch(r, ws, '/usr/bin/node', [`${ws.inside}/.astest/egress-flood.js`, mode, String(seconds), '1000']);
  const [end, rss] = await Promise.all([run.done, sampleRss(run.pid, run.done)]);
  const text = readFileSync(ws.ledger, 'utf8');
  const lineBytes = text
    .split('\n')
    .filter(Boolean)
    .map((l) => Buffer.byteLength(l) + 1);
  const lines = ledgerLines(ws);
  const log = lines[0]?.['egress']?.['log'] as string | undefined;
  const report = /^flood .*$/m.exec(end.stdout)?.[0] ?? '';
  return { end, lines, lineBytes, sent: Number(/sent=(\d+)/.exec(report)?.[1] ?? 0), report, logBytes: log ? statSync(log).size : -1, rss };
}

/** RSS over time, every 5th sample: "0 s 55, 5 s 63, ...". */
export function describeRss(trace: RssTrace): string {
  return trace.samples
    .filter((_, i) => i % 5 === 0)
    .map(([s, mib]) => `${s} s ${mib}`)
    .join(', ');
}

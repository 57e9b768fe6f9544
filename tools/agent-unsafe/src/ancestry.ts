/**
 * Is an agent CLI one of our ancestors? Walks the ppid chain through
 * /proc/<pid>/stat up to PID 1 and judges each process by its comm, argv[0]
 * and, for an interpreter (node, sh, ...), the script it runs.
 *
 * An ancestor we cannot read (hidepid, or it exited) ends the walk; the walk
 * reports it so the limit is visible. Processes of the same user, the ones an
 * agent would be, are always readable.
 */
import path from 'node:path';
import type { HostView } from './host-view.js';
import { agentPackagePaths, agentProgramNames, interpreterNames } from './markers.js';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  comm: string;
  argv: string[];
}

export interface AncestryResult {
  /** The agent ancestors found, nearest first. */
  agents: ProcessInfo[];
  /** Ancestors walked, nearest first. */
  walked: number[];
  /** Set when the walk stopped at a process it could not read. */
  unreadable?: number;
}

/** The ppid from a /proc/<pid>/stat line; comm may contain spaces and parentheses. */
export function parseStatPpid(stat: string): number | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = stat.slice(close + 2).split(' ');
  const ppid = Number(fields[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

export function readProcess(host: HostView, pid: number): ProcessInfo | undefined {
  const stat = host.read(`/proc/${pid}/stat`);
  const ppid = stat === undefined ? undefined : parseStatPpid(stat);
  if (ppid === undefined) return undefined;
  const comm = (host.read(`/proc/${pid}/comm`) ?? '').trim();
  const argv = (host.read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter((a, i, all) => a !== '' || i < all.length - 1);
  return { pid, ppid, comm, argv };
}

function programName(file: string): string {
  return path.basename(file).replace(/\.(c|m)?js$/, '');
}

/** True when the process is an agent CLI (see the header for the rules). */
export function isAgentProcess(proc: ProcessInfo): boolean {
  const names = new Set(agentProgramNames);
  if (names.has(proc.comm)) return true;
  const [arg0, arg1] = proc.argv;
  if (arg0 !== undefined && names.has(programName(arg0))) return true;
  if (arg0 !== undefined && arg1 !== undefined && interpreterNames.includes(path.basename(arg0))) {
    if (names.has(programName(arg1))) return true;
    if (agentPackagePaths.some((fragment) => arg1.includes(fragment))) return true;
  }
  return false;
}

/** Walks from `startPid` (normally our parent) up to PID 1. */
export function walkAncestry(host: HostView, startPid: number, maxDepth = 4096): AncestryResult {
  const result: AncestryResult = { agents: [], walked: [] };
  const seen = new Set<number>();
  let pid = startPid;
  while (pid > 0 && !seen.has(pid) && seen.size < maxDepth) {
    seen.add(pid);
    const proc = readProcess(host, pid);
    if (!proc) {
      result.unreadable = pid;
      break;
    }
    result.walked.push(pid);
    if (isAgentProcess(proc)) result.agents.push(proc);
    pid = proc.ppid;
  }
  return result;
}

/** "1234 codex (node /usr/lib/node_modules/@openai/codex/bin/codex.js)" for messages. */
export function describeProcess(proc: ProcessInfo): string {
  const shown = proc.argv.slice(0, 2).join(' ');
  return `pid ${proc.pid} ${proc.comm}${shown ? ` (${shown.slice(0, 160)})` : ''}`;
}

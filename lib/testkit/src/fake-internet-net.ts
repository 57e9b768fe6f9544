/**
 * The fake internet's plumbing (fake-internet.ts): one of 16 address slots, claimed with an
 * atomic mkdir under /run so parallel runs never share addresses, and the network namespace
 * with its veth pair, addresses and routes. A run that died leaves its slot to be reclaimed.
 */
import { execa } from 'execa';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
/** A host of the fake internet, as far as its addresses go. */
interface Addresses {
  v4: string;
  v6: string;
}

const slotRoot = '/run/agent-sandbox-fake-internet';

/** A run that died (SIGKILL, a timeout) left its namespace, veth and routes: remove them. */
async function clearStale(dir: string, slot: number): Promise<void> {
  const names = JSON.parse(await readFile(path.join(dir, 'names.json'), 'utf8').catch(() => '{}')) as { netns?: string; hv?: string };
  if (names.netns?.startsWith('asfi-')) await execa('ip', ['netns', 'del', names.netns], { reject: false });
  if (names.hv?.startsWith('asfi')) await execa('ip', ['link', 'del', names.hv], { reject: false });
  await execa('ip', ['route', 'del', `203.0.113.${slot * 16}/28`], { reject: false });
  await execa('ip', ['-6', 'route', 'del', `2001:db8:0:${slot.toString(16)}::/64`], { reject: false });
}

/** One of 16 slots, claimed by an atomic mkdir; its owner's pid and the names it makes are kept in it. */
export async function claimSlot(names: { netns: string; hv: string }): Promise<{ slot: number; release(): Promise<void> }> {
  await mkdir(slotRoot, { recursive: true, mode: 0o700 });
  const order = [...Array(16).keys()].sort(() => Math.random() - 0.5);
  for (const slot of order) {
    const dir = path.join(slotRoot, `slot-${slot}`);
    try {
      await mkdir(dir);
    } catch {
      // Taken: reclaim it only when its owner is gone.
      const owner = Number(await readFile(path.join(dir, 'pid'), 'utf8').catch(() => '0'));
      if (owner > 0 && (await execa('kill', ['-0', String(owner)], { reject: false })).exitCode === 0) continue;
      if (owner === 0) continue; // being claimed right now
      await clearStale(dir, slot);
      await rm(dir, { recursive: true, force: true });
      try {
        await mkdir(dir);
      } catch {
        continue;
      }
    }
    await writeFile(path.join(dir, 'names.json'), JSON.stringify(names));
    await writeFile(path.join(dir, 'pid'), String(process.pid));
    return { slot, release: () => rm(dir, { recursive: true, force: true }) };
  }
  throw new Error(`no free fake-internet slot under ${slotRoot} (16 in use)`);
}

/**
 * The slot's IPv6 /64 as RFC 5952 writes it: slot 0 is `2001:db8::`, never `2001:db8:0:0::`.
 * The broker logs addresses in that form, so a test comparing a host's address with a ledger
 * line must get it in that form too, whichever slot it was given.
 */
export const slotV6Net = (slot: number) => (slot === 0 ? '2001:db8::' : `2001:db8:0:${slot.toString(16)}::`);

const ip = (args: string[]) => execa('ip', args);
const inNs = (netns: string, args: string[]) => execa('ip', ['netns', 'exec', netns, ...args]);

export async function makeNetwork(
  netns: string,
  slot: number,
  hv: string,
  nv: string,
  hosts: Addresses[],
  hostSide: { v4: string; v6: string },
) {
  const base = slot * 16;
  const v6net = slotV6Net(slot);
  await ip(['netns', 'add', netns]);
  await ip(['link', 'add', hv, 'type', 'veth', 'peer', 'name', nv, 'netns', netns]);
  // No duplicate address detection: the addresses are usable at once, not after ~1 s.
  await execa('sysctl', ['-qw', `net.ipv6.conf.${hv}.accept_dad=0`]);
  await inNs(netns, ['sysctl', '-qw', `net.ipv6.conf.${nv}.accept_dad=0`]);
  await ip(['addr', 'add', `${hostSide.v4}/32`, 'dev', hv]);
  await ip(['-6', 'addr', 'add', `${hostSide.v6}/128`, 'dev', hv, 'nodad']);
  await ip(['link', 'set', hv, 'up']);
  await inNs(netns, ['ip', 'link', 'set', 'lo', 'up']);
  for (const h of hosts) {
    await inNs(netns, ['ip', 'addr', 'add', `${h.v4}/32`, 'dev', nv]);
    await inNs(netns, ['ip', '-6', 'addr', 'add', `${h.v6}/128`, 'dev', nv, 'nodad']);
  }
  await inNs(netns, ['ip', 'link', 'set', nv, 'up']);
  await ip(['route', 'add', `203.0.113.${base}/28`, 'dev', hv]);
  await ip(['-6', 'route', 'add', `${v6net}/64`, 'dev', hv]);
  await inNs(netns, ['ip', 'route', 'add', 'default', 'dev', nv]);
  await inNs(netns, ['ip', '-6', 'route', 'add', 'default', 'dev', nv]);
}

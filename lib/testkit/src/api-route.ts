/**
 * The API route, as a test that is not root finds it. A rootless session reaches its API only
 * through its broker, and the broker dials only what the system resolver gives and the address
 * rules allow (never an address of the host itself): so a scripted model server standing in for
 * api.openai.com must be one hop away, at an address the name resolves to. Making that needs
 * root (a network namespace, a veth pair, a name server), and so does joining it; a test as
 * uid 1000 can do neither. Root opens the route once (api-route-host.ts; the VM tier's guest
 * does it before the suites run) and writes what it made here; the test serves the API itself,
 * with its own certificate, on a unix socket in a directory that is its user's alone, and the
 * route's relay pipes every connection made to the API addresses there.
 */
import { existsSync, readFileSync } from 'node:fs';

/** Where root writes the route it opened (the VM tier's guest: vm/guest/run-in-guest.sh). */
export const apiRouteFile = '/run/agent-sandbox-api-route/route.json';

export interface ApiRoute {
  /** The names the route's name server answers for. */
  names: string[];
  /** The addresses they resolve to: one hop away, in the route's network namespace. */
  v4: string;
  v6: string;
  /** Whose route it is: the only user who can listen on `socket`. */
  uid: number;
  /** Where that user's model server listens; the relay pipes the API addresses' connections here. */
  socket: string;
  /** The name server (in resolv.conf when the port is 53). */
  dns: { address: string; port: number };
}

/** The route root opened for this process's uid, or undefined when there is none. */
export function findApiRoute(file = apiRouteFile): ApiRoute | undefined {
  if (!existsSync(file)) return undefined;
  const route = JSON.parse(readFileSync(file, 'utf8')) as ApiRoute;
  return route.uid === process.getuid?.() ? route : undefined;
}

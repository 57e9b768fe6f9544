/**
 * The session's relay as the container runs it: Debian's socat (in the image since the base
 * image lists it), listening on 127.0.0.1:<port> and forwarding each connection byte for byte to
 * the broker's unix socket, one forked socat per connection. It is started beside the agent's
 * command, not in front of it: a POSIX sh script (dash in the image) starts socat detached (its
 * parent becomes the container's PID 1, tini, which reaps it) and in a session of its own
 * (setsid: a terminal's Ctrl-C goes to the foreground process group, the agent's, and would end
 * socat, which takes SIGINT as its end; the node relay passed it on), waits until the kernel lists the
 * port as listening in /proc/net/tcp (so the command never races the listener, as with the node
 * relay), and execs the command, which stays the container's main process and gets its signals
 * from tini directly. Why socat and not our node relay: it listens in a few milliseconds where
 * node from its snapshot takes 60-80 (docs/performance.md, sections 11 and 12).
 *
 * What differs from the node relay (tools/egress-proxy/src/relay/relay.ts), the agent's view:
 * - each open connection is a process in the container, counted against --pids; socat forks at
 *   most `maxChildren` of them (the launcher gives half the session's --pids), and a connection
 *   past that waits in the listen queue until one ends, rather than a fork failing and the
 *   session ending as pids-limit (a flood through the node relay met the broker's own cap);
 * - with no broker on the socket the client's connection is closed, with a reset when the client
 *   had already sent bytes (they are unread when socat exits), else a plain close;
 * - socat's own messages go to /dev/null: the agent's stderr shows none (the node relay printed
 *   none either); a relay that cannot listen is said on stderr, exit 1, as before.
 * An image without socat or setsid (built before socat was added) gets the node relay in front of the
 * command, as before: `egress-relay --socket S --listen 127.0.0.1:PORT -- CMD`.
 */

/**
 * The script, run as `sh -c SCRIPT egress-relay SOCKET PORT MAXCHILDREN CMD ARGS...`. backlog=511
 * is node's (socat's own is 5: a burst of connections would wait for SYN retries). `-t 86400`: after one
 * side's end, socat keeps the other direction open (a half-close; node's allowHalfOpen) for a day
 * rather than its default half a second, which would cut a reply to a client that half-closed.
 * A port something already listens on is refused before socat starts (in a fresh container nothing
 * else binds it meanwhile), so the listener the wait then sees is socat's.
 * The wait polls without sleeping for its first 200 reads (socat binds in a millisecond or two),
 * then every 10 ms, and gives up when socat has exited, or after about 30 s of a socat that lives
 * and does not listen (the node relay waited as long as it took; 64 sessions starting at once on
 * two CPUs take seconds, section 7 of docs/performance.md).
 */
export const socatRelayScript = [
  'sock=$1 port=$2 children=$3',
  'shift 3',
  'if ! command -v socat >/dev/null 2>&1 || ! command -v setsid >/dev/null 2>&1; then exec egress-relay --socket "$sock" --listen "127.0.0.1:$port" -- "$@"; fi',
  'hex=$(printf \'0100007F:%04X\' "$port")',
  'listening() {',
  '  while read -r _ a _ st _; do',
  '    if [ "$a" = "$hex" ] && [ "$st" = 0A ]; then return 0; fi',
  '  done </proc/net/tcp',
  '  return 1',
  '}',
  'if listening; then',
  '  echo "egress-relay: cannot listen on 127.0.0.1:$port: another process does" >&2',
  '  exit 1',
  'fi',
  'pid=$(setsid socat -lf /dev/null -t 86400 "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,backlog=511,fork,max-children=$children" "UNIX-CONNECT:$sock" </dev/null >/dev/null 2>&1 & echo $!)',
  'n=0',
  'until listening; do',
  '  if ! kill -0 "$pid" 2>/dev/null || [ "$n" -ge 3200 ]; then',
  '    echo "egress-relay: cannot listen on 127.0.0.1:$port (socat)" >&2',
  '    exit 1',
  '  fi',
  '  n=$((n + 1))',
  '  if [ "$n" -gt 200 ]; then sleep 0.01; fi',
  'done',
  'exec "$@"',
].join('\n');

/** The container command's prefix: the relay listening on 127.0.0.1:`port`, then the command after it. */
export function socatRelayPrefix(socketPath: string, port: number, maxChildren: number): string[] {
  return ['/bin/sh', '-c', socatRelayScript, 'egress-relay', socketPath, String(port), String(Math.max(1, Math.floor(maxChildren)))];
}

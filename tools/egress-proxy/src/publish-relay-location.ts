/**
 * Where publish-relay's single-file bundle is on the host (egress-proxy's `bundle` script writes
 * it as one file in this package's dist, named below). The launcher mounts that file read-only into
 * a session run with --publish. Found from the running code's own place, never from the
 * environment: the code is in some tools/<tool>/dist (egress-proxy's own dist/*.js, or the
 * launcher's bundle in tools/agent-sandbox/dist), so <dist>/../../egress-proxy/dist covers both.
 */
import path from 'node:path';
import { codeDir } from '@agent-sandbox/shared/code-dir';

export function publishRelayPath(dist: string = codeDir(import.meta.url)): string {
  return path.resolve(dist, '..', '..', 'egress-proxy', 'dist', 'publish-relay.cjs');
}

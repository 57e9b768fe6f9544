/**
 * The entry of a container-side bundle (cred-stage, egress-relay): runs `main` now, or, while
 * node builds a V8 startup snapshot of the bundle (`node --snapshot-blob B --build-snapshot
 * bundle.js`, at image build: image/Containerfile), registers it to run when that snapshot is
 * deserialized. Debian's node 18 in the image is built without node's own startup snapshot and
 * code cache, so every start compiles node's bootstrap (about 60 ms of CPU); started from a blob
 * made of the bundle, node skips that and the bundle's own load too (docs/performance.md).
 *
 * What the blob holds is the heap after the bundle's top level ran: so that top level must not
 * read the environment, the arguments or the clock, and must not load the builtins node 18
 * cannot snapshot (child_process, net: load them in `main`, through a lazy require, as egress-proxy's snapshot-builtins.cts does). `main`
 * reads process.argv as a script would: the image's launcher script passes the bundle's path
 * where a script's path would be (`node --snapshot-blob B -- bundle.js ARGS...`).
 */
import { startupSnapshot } from 'node:v8';

export function runNowOrFromSnapshot(main: () => unknown): void {
  if (startupSnapshot?.isBuildingSnapshot()) startupSnapshot.setDeserializeMainFunction(() => void main());
  else void main();
}

#!/usr/bin/env node
// The demo's fake internet (lib/testkit's, built): a network namespace joined to the host by a
// veth pair, TEST-NET addresses, and in it the scripted model server speaking TLS on 443 for
// api.openai.com and api.anthropic.com under a certificate of a CA made for this run. Nothing
// here touches the host's /etc/hosts: it writes a hosts file the demo bind-mounts over
// /etc/hosts in a mount namespace of the launcher's own, so the session's broker finds the
// names there with the system resolver, as it would find the real ones.
//
// Usage: fake-api.mjs --dir DIR --script STEPS.json --token-sha256 HEX
// Prints one JSON line when ready: {"netns","caFile","hostsFile","record","v4","v6"}; runs until
// stdin closes or SIGTERM/SIGINT, then removes everything it made and says `fake-api: stopped`
// on stderr. Needs root.
import { readFileSync } from 'node:fs';
import { privateHosts, startApiModelServer, startFakeInternet } from '../../lib/testkit/dist/index.js';

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1 || !process.argv[i + 1]) throw new Error(`--${name} is required`);
  return process.argv[i + 1];
};
const names = ['api.openai.com', 'api.anthropic.com'];
const undo = [];
const t = { teardown: (fn) => undo.push(fn) };
let stopping;
const stop = () =>
  (stopping ??= (async () => {
    while (undo.length > 0) await Promise.resolve(undo.pop()()).catch((e) => process.stderr.write(`fake-api: cleanup: ${e}\n`));
    // The demo waits for this line before it removes the directory the servers used.
    process.stderr.write('fake-api: stopped\n');
  })());

async function main() {
  const dir = arg('dir');
  const fi = await startFakeInternet(t, { dir, extra: [names] });
  const host = fi.extra[0];
  const steps = JSON.parse(readFileSync(arg('script'), 'utf8'));
  await startApiModelServer(t, fi, host, { steps, expectedToken: '', expectedTokenSha256: arg('token-sha256'), dir });
  const prefix = await privateHosts(dir, [
    { address: host.v4, names },
    { address: host.v6, names },
  ]);
  const hostsFile = prefix[prefix.length - 1];
  process.stdout.write(
    `${JSON.stringify({ netns: fi.netns, caFile: fi.ca.certFile, hostsFile, record: `${dir}/model-requests.jsonl`, v4: host.v4, v6: host.v6 })}\n`,
  );
}

for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, () => void stop().then(() => process.exit(0)));
process.stdin.resume();
process.stdin.once('end', () => void stop().then(() => process.exit(0)));
main().catch(async (err) => {
  process.stderr.write(`fake-api: ${err instanceof Error ? err.message : String(err)}\n`);
  await stop();
  process.exit(1);
});

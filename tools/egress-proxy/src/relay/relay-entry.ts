// Entry for the single-file bundle installed in the image (image/build/bin/egress-relay): run as a
// script, or built into a V8 startup snapshot at image build (lib/shared/src/snapshot-entry.ts).
import { runNowOrFromSnapshot } from '@agent-sandbox/shared/snapshot-entry';
import { runRelayCli } from './relay-cli.js';

runNowOrFromSnapshot(() => runRelayCli());

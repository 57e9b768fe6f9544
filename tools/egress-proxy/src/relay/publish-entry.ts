// Entry for the single-file bundle of publish-relay (egress-proxy's `bundle` script; the launcher finds it with publishRelayPath): run as a script.
import { runPublishCli } from './publish-cli.js';

void runPublishCli();

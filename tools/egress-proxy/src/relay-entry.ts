// Entry for the single-file bundle installed in the image (image/build/bin/egress-relay).
import { runRelayCli } from './relay-cli.js';

void runRelayCli();

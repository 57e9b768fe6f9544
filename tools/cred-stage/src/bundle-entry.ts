// Entry for the single-file bundle installed in the image (image/build/bin/cred-stage).
import { runContainer } from './container-cli.js';

void runContainer();

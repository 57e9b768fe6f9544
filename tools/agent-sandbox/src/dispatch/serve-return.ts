/**
 * The forced command's second request kind, `{"kind":"return",...}`: sends the bundle of the
 * commits a session added (receive-work.ts, <root>/outgoing/<id>.bundle) on stdout, raw, and
 * nothing else. Only for the session the client names by its run id, and only while no other
 * session holds the workspace (92).
 */
import { createReadStream, readFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { ToolError } from '@agent-sandbox/shared';
import type { ReturnRequest } from '@agent-sandbox/shared/schemas/workspace';
import { guardPath } from '@agent-sandbox/path-guard';
import { layoutFor } from '../workspace/layout.js';
import { lockWorkspace } from '../workspace/lock.js';
import { outgoingFiles, type ReturnMeta } from './receive-work.js';

export async function serveReturn(request: ReturnRequest, root: string, stdout: NodeJS.WritableStream): Promise<number> {
  const realRoot = (await guardPath({ path: root, root, kind: 'directory' })).resolved;
  const layout = layoutFor(realRoot, request.workspaceId);
  const lock = lockWorkspace(layout.lockFile, layout.recordFile, layout.sessionId);
  try {
    const files = outgoingFiles(realRoot, layout.sessionId);
    let meta: ReturnMeta | undefined;
    try {
      meta = JSON.parse(readFileSync(files.meta, 'utf8')) as ReturnMeta;
    } catch {
      meta = undefined;
    }
    if (!meta || meta.runId !== request.runId) {
      throw new ToolError(
        'usage',
        'no-return-bundle',
        `no commits are waiting to be fetched for session ${request.runId} of workspace ${request.workspaceId} on this node`,
      );
    }
    await pipeline(createReadStream(files.bundle), stdout, { end: false });
    return 0;
  } finally {
    lock.release();
  }
}

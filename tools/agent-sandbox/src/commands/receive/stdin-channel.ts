/**
 * The receiver's end of the ssh connection, on the process's fd 0 (only the entry,
 * commands/index.ts, hands it out).
 */
import type { Channel } from '../../dispatch/receive-request.js';

/**
 * The receiver's channel on fd 0: the first line, then exactly the bytes asked for, then the
 * end of the connection. Chunks are kept as they come (the bundle is written out as it
 * arrives); a first line longer than 1 MiB is handed on as it is, for the parser to refuse.
 */
export function stdinChannel(): Channel {
  const closed = new AbortController();
  const chunks: Buffer[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const arrived = () => new Promise<void>((resolve) => (wake = resolve));
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  process.stdin.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    poke();
  });
  process.stdin.on('end', () => {
    ended = true;
    poke();
    closed.abort('abandoned');
  });
  process.stdin.on('error', () => {
    ended = true;
    poke();
    closed.abort('abandoned');
  });
  const firstLine = async () => {
    for (;;) {
      const all = Buffer.concat(chunks);
      const nl = all.indexOf(0x0a);
      if (nl >= 0 || ended || all.length > 1 << 20) {
        chunks.length = 0;
        if (nl >= 0 && nl + 1 < all.length) chunks.push(all.subarray(nl + 1));
        return all.subarray(0, nl >= 0 ? nl : all.length).toString('utf8');
      }
      await arrived();
    }
  };
  const readInto = async (n: number, write: (chunk: Buffer) => void) => {
    let got = 0;
    while (got < n) {
      const chunk = chunks.shift();
      if (!chunk) {
        if (ended) break;
        await arrived();
        continue;
      }
      const take = Math.min(chunk.length, n - got);
      write(chunk.subarray(0, take));
      if (take < chunk.length) chunks.unshift(chunk.subarray(take));
      got += take;
    }
    return got;
  };
  return { firstLine, readInto, closed: closed.signal, close: () => process.stdin.destroy() };
}

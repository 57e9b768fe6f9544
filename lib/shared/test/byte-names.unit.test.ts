// File names as bytes, carried in strings without loss (issue 29): a name that is not UTF-8
// must reach the audit's walk exactly as the kernel has it, or a nested repository or a ref
// named that way is never found. Checked against node's own UTF-8 codec and random bytes.
import t from 'tap';
import fc from 'fast-check';
import { bytesFromName, nameFromBytes } from '../dist/byte-names.js';

t.test('valid UTF-8 decodes as node decodes it', async (t) => {
  for (const text of [
    'plain',
    'café',
    '日本語',
    'emoji 😀',
    '\u{10080} (its low surrogate is DC80)',
    'n\x1b]0;t\x07',
    'c1 \u009b',
    'a real \ufffd',
  ]) {
    t.equal(nameFromBytes(Buffer.from(text)), text, text);
    t.same(bytesFromName(text), Buffer.from(text), `${text}: back to the same bytes`);
  }
});

t.test('each byte that is not UTF-8 becomes U+DC00+byte, and comes back as that byte', async (t) => {
  const rows: Array<[number[], string]> = [
    [[0x9b], '\udc9b'],
    [[0x72, 0x9b, 0x78], 'r\udc9bx'],
    [[0xff, 0xfe], '\udcff\udcfe'],
    [[0xc0, 0x80], '\udcc0\udc80'],
    [[0xed, 0xa0, 0x80], '\udced\udca0\udc80'],
    [[0xe2, 0x82], '\udce2\udc82'],
  ];
  for (const [bytes, name] of rows) {
    t.equal(nameFromBytes(Buffer.from(bytes)), name, Buffer.from(bytes).toString('hex'));
    t.same([...bytesFromName(name)], bytes, `${Buffer.from(bytes).toString('hex')} round trip`);
  }
});

t.test('property: any bytes make the round trip, and different bytes make different names', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 48 }), (b) => bytesFromName(nameFromBytes(b)).equals(Buffer.from(b))),
    { numRuns: 5000 },
  );
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 12 }),
      fc.uint8Array({ maxLength: 12 }),
      (a, b) => Buffer.from(a).equals(Buffer.from(b)) === (nameFromBytes(a) === nameFromBytes(b)),
    ),
    { numRuns: 5000 },
  );
  t.pass('10 000 random inputs');
});

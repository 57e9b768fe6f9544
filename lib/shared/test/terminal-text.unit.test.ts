// Nothing a session named reaches the user's terminal raw (issue 29): forTerminal escapes every
// C0 and C1 control, DEL, the bidirectional and line-separator controls, lone surrogates and
// every byte that is not UTF-8, doubles the backslash, and loses nothing: the test's own decoder
// (written from the escape rules, not from the code) gets the exact input back.
import t from 'tap';
import fc from 'fast-check';
import { forTerminal, refForTerminal } from '../dist/terminal-text.js';
import { bytesFromName, nameFromBytes } from '../dist/byte-names.js';

/** The escapes a reader sees, as the rules define them: the named C0 ones, the backslash. */
const namedEscapes: Record<string, number> = { a: 0x07, b: 0x08, t: 0x09, n: 0x0a, v: 0x0b, f: 0x0c, r: 0x0d, e: 0x1b, '\\': 0x5c };
const byName = Object.fromEntries(Object.entries(namedEscapes).map(([k, v]) => [v, `\\${k}`]));
const bidiAndSeparators = [0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069];

/** The expected escape of one control code point (string input). */
const expectedEscape = (cp: number) =>
  byName[cp] ?? (cp < 0x80 ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`);

/** True when a code point must never be printed raw. */
const isUnsafe = (cp: number) =>
  cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || bidiAndSeparators.includes(cp) || (cp >= 0xd800 && cp <= 0xdfff);

/** Every code point of the output is printable and none is a control. */
function printable(out: string): boolean {
  for (const ch of out) if (isUnsafe(ch.codePointAt(0)!)) return false;
  return true;
}

/** The test's decoder: the output back to bytes. */
function decode(out: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < out.length;) {
    if (out[i] !== '\\') {
      const ch = String.fromCodePoint(out.codePointAt(i)!);
      bytes.push(...Buffer.from(ch, 'utf8'));
      i += ch.length;
      continue;
    }
    const kind = out[i + 1]!;
    if (kind === 'x') {
      bytes.push(parseInt(out.slice(i + 2, i + 4), 16));
      i += 4;
    } else if (kind === 'u') {
      bytes.push(...Buffer.from(String.fromCodePoint(parseInt(out.slice(i + 2, i + 6), 16)), 'utf8'));
      i += 6;
    } else {
      if (namedEscapes[kind] === undefined) throw new Error(`unknown escape \\${kind} at ${i} in ${out}`);
      bytes.push(namedEscapes[kind]!);
      i += 2;
    }
  }
  return Buffer.from(bytes);
}

t.test('each C0 control, DEL and each C1 control is escaped, as a string and as bytes', async (t) => {
  const controls = [...Array.from({ length: 0x20 }, (_, i) => i), 0x7f, ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i)];
  let rows = 0;
  for (const cp of controls) {
    const ch = String.fromCodePoint(cp);
    const want = `a${expectedEscape(cp)}b`;
    t.equal(forTerminal(`a${ch}b`), want, `U+${cp.toString(16).padStart(4, '0')} as a string`);
    t.equal(forTerminal(Buffer.from(`a${ch}b`, 'utf8')), want, `U+${cp.toString(16).padStart(4, '0')} as UTF-8 bytes`);
    t.ok(printable(forTerminal(`a${ch}b`)));
    rows += 1;
  }
  t.equal(rows, 65, '32 C0 controls, DEL and 32 C1 controls');
});

t.test('a C1 byte alone (not UTF-8) is shown as \\xNN, told apart from the C1 code point', async (t) => {
  for (let b = 0x80; b <= 0x9f; b += 1) {
    const out = forTerminal(Buffer.from([0x61, b, 0x62]));
    t.equal(out, `a\\x${b.toString(16)}b`, `byte 0x${b.toString(16)}`);
  }
  t.not(forTerminal(Buffer.from([0x9b])), forTerminal(Buffer.from([0xc2, 0x9b])), 'CSI as one byte and as U+009B read differently');
});

t.test('every sequence that is not UTF-8 is shown byte by byte', async (t) => {
  const rows: Array<[string, number[]]> = [
    ['a lone continuation byte', [0x80]],
    ['another', [0xbf]],
    ['overlong NUL (C0 80)', [0xc0, 0x80]],
    ['overlong slash (C1 AF)', [0xc1, 0xaf]],
    ['overlong 3-byte (E0 80 80)', [0xe0, 0x80, 0x80]],
    ['overlong 4-byte (F0 80 80 80)', [0xf0, 0x80, 0x80, 0x80]],
    ['a UTF-16 surrogate (ED A0 80)', [0xed, 0xa0, 0x80]],
    ['past U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80]],
    ['F5', [0xf5, 0x80, 0x80, 0x80]],
    ['FE', [0xfe]],
    ['FF', [0xff]],
    ['a truncated sequence (E2 82)', [0xe2, 0x82]],
    ['a lead byte then ASCII (C3 41)', [0xc3, 0x41]],
  ];
  for (const [what, bytes] of rows) {
    const out = forTerminal(Buffer.from(bytes));
    t.ok(printable(out), `${what}: printable (${out})`);
    t.match(out, /^(\\x[0-9a-f]{2}|[ -~])+$/, `${what}: ASCII escapes only`);
    t.same([...decode(out)], bytes, `${what}: decodes back to its bytes`);
  }
});

t.test('a backslash is doubled, so an escape in the output always came from forTerminal', async (t) => {
  t.equal(forTerminal('a\\b'), 'a\\\\b');
  t.equal(forTerminal('\\e[2K'), '\\\\e[2K', 'the text "\\e[2K" is not an ESC');
  t.not(forTerminal('\\e'), forTerminal('\x1b'));
  t.equal(forTerminal(Buffer.from('x\\x1b')), 'x\\\\x1b');
});

t.test('bidirectional overrides, isolates and marks and the Unicode line separators are escaped', async (t) => {
  for (const cp of bidiAndSeparators) {
    const ch = String.fromCodePoint(cp);
    const want = `a\\u${cp.toString(16).padStart(4, '0')}b`;
    t.equal(forTerminal(`a${ch}b`), want, `U+${cp.toString(16)}`);
    t.equal(forTerminal(Buffer.from(`a${ch}b`)), want, `U+${cp.toString(16)} as bytes`);
  }
});

t.test('a lone surrogate in a string is escaped; printable text of any script passes unchanged', async (t) => {
  t.equal(forTerminal('a\ud800b'), 'a\\ud800b');
  t.equal(forTerminal('x\udfff'), 'x\\udfff');
  t.equal(forTerminal('x\udc9b'), 'x\\x9b', 'U+DC80..U+DCFF carry a byte that is not UTF-8 (byte-names): shown as that byte');
  t.equal(forTerminal(nameFromBytes(Buffer.from([0x61, 0x9b]))), forTerminal(Buffer.from([0x61, 0x9b])), 'the same as from the bytes');
  for (const text of ['plain ascii ~!@#$%^&*()', 'café', '日本語のブランチ', 'emoji 😀 pair', 'Ωmega']) {
    t.equal(forTerminal(text), text, text);
    t.equal(forTerminal(Buffer.from(text)), text, `${text} as bytes`);
  }
});

t.test("the issue's nested repository name prints as one inert line", async (t) => {
  const name = 'n\x1b]0;TITLE-SET-BY-AGENT\x07\x1b[2K\x1b[1Afake';
  const out = forTerminal(name);
  t.equal(out, 'n\\e]0;TITLE-SET-BY-AGENT\\a\\e[2K\\e[1Afake');
  t.notOk(/[\x00-\x1f\x7f-\x9f]/.test(out), 'no control left');
});

t.test('property: any bytes come out printable and decode back to exactly those bytes', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const out = forTerminal(Buffer.from(bytes));
      return printable(out) && decode(out).equals(Buffer.from(bytes));
    }),
    { numRuns: 5000 },
  );
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 32 }), (text) => {
      const out = forTerminal(text);
      return printable(out) && decode(out).equals(bytesFromName(text));
    }),
    { numRuns: 5000 },
  );
  t.pass('10 000 random inputs');
});

t.test('a ref name that passes for another: every code point past ASCII escaped, so mаin (Cyrillic а) does not read as main', async (t) => {
  t.equal(refForTerminal('refs/heads/m\u0430in'), 'refs/heads/m\\u0430in');
  t.equal(forTerminal('refs/heads/m\u0430in'), 'refs/heads/m\u0430in', 'control: forTerminal prints it as it is, which reads as main');
  t.equal(refForTerminal('refs/heads/main'), 'refs/heads/main', 'an ASCII name is unchanged');
  t.equal(refForTerminal('refs/heads/x\u001b[2J\udcff'), 'refs/heads/x\\e[2J\\xff', 'controls and bytes as forTerminal shows them');
});

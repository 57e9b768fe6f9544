// One list of error codes (lib/shared/src/error-codes.ts): each code is kebab-case with an exit
// from the exit table and a meaning, and ToolError takes only a code of the list with an exit
// the code has there (the @ts-expect-error lines fail `pnpm check` if that stops being so).
import t from 'tap';
import { ExitCode, ToolError, errorCodeRows, errorCodes, exitCodesHelp, exitTable, toErrorDocument } from '../dist/index.js';

t.test('every row has a kebab-case code, an exit of the exit table and a meaning', async (t) => {
  const rows = errorCodeRows();
  for (const row of rows) {
    t.match(row.code, /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/, row.code);
    t.ok(row.exit in exitTable, `${row.code}: ${row.exit}`);
    t.ok(row.meaning.length > 10, `${row.code}: a meaning`);
  }
  t.ok(rows.length >= Object.keys(errorCodes).length);
  t.ok(rows.length > 150, `${rows.length} rows`);
});

t.test('a ToolError carries its code and the exit it names', async (t) => {
  const err = new ToolError('unsafePath', 'not-found', 'no such path');
  t.equal(err.exitCode, 86);
  t.same(toErrorDocument(err), { document: { ok: false, error: { code: 'not-found', message: 'no such path' } }, exitCode: 86 });
  t.equal(new ToolError('credential', 'not-found', 'no credential').exitCode, ExitCode.credential, 'a code with two exits takes either');
});

t.test('a code outside the list, or an exit the code does not have, does not compile', async (t) => {
  // @ts-expect-error: bad-flag is a usage code (80), not a credential one
  t.equal(new ToolError('credential', 'bad-flag', 'x').code, 'bad-flag');
  // @ts-expect-error: no such code
  t.equal(new ToolError('usage', 'no-such-code', 'x').exitCode, 80);
});

t.test("--help's exit section names every exit of the table", async (t) => {
  const help = exitCodesHelp();
  for (const row of Object.values(exitTable)) t.match(help, `${row.exit} ${row.brief}`);
});

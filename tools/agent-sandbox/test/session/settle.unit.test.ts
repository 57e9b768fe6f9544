// The end of a session's start (src/session/settle.ts): what the launcher does once it is quiet
// runs once, the settle time after the later of the container's start and the first disk count,
// never after the session ended, and a failure in it is not the session's.
import t from 'tap';
import { settleAfterStart } from '../../dist/session/settle.js';

const settleMs = 40;
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test('it runs once, the settle time after the later of the start and the first count', async (t) => {
  const calls: number[] = [];
  const began = Date.now();
  const settle = settleAfterStart(() => calls.push(Date.now() - began), settleMs);
  settle.started();
  await wait(settleMs * 2);
  t.same(calls, [], 'not while the first count runs, however long the container has run');
  const countEnded = Date.now() - began;
  settle.counted();
  settle.started(); // a second start mark changes nothing
  await wait(settleMs * 3);
  t.equal(calls.length, 1, 'once');
  t.ok(calls[0]! >= countEnded + settleMs - 5, `the settle time after the count's end (${calls[0]} ms; the count ended at ${countEnded})`);
});

t.test('the count first, then the start: the settle time after the start', async (t) => {
  let called = 0;
  const settle = settleAfterStart(() => called++, settleMs);
  settle.counted();
  await wait(settleMs * 2);
  t.equal(called, 0, 'not before the container started');
  settle.started();
  await wait(settleMs / 2);
  t.equal(called, 0, 'not at once');
  await wait(settleMs * 2);
  t.equal(called, 1, 'then once');
});

t.test('a session that ended before its settle never runs it', async (t) => {
  let called = 0;
  const settle = settleAfterStart(() => called++, settleMs);
  settle.started();
  settle.counted();
  await wait(settleMs / 2);
  settle.ended();
  await wait(settleMs * 2);
  t.equal(called, 0, 'ended within the settle time: not run');
  let control = 0;
  const other = settleAfterStart(() => control++, settleMs);
  other.started();
  other.counted();
  await wait(settleMs * 2);
  t.equal(control, 1, 'control: the same without the end runs it');
});

t.test('a failure in what runs at the settle is not the session’s: nothing is thrown or rejected', async (t) => {
  const rejections: unknown[] = [];
  const onRejection = (e: unknown) => rejections.push(e);
  process.on('unhandledRejection', onRejection);
  t.teardown(() => process.off('unhandledRejection', onRejection));
  let ran = false;
  const settle = settleAfterStart(() => {
    ran = true;
    throw new Error('collector failed');
  }, settleMs);
  settle.started();
  settle.counted();
  await wait(settleMs * 3);
  t.ok(ran, 'it ran');
  t.same(rejections, [], 'no unhandled rejection');
});

// ps's figures from what a session keeps: the broker's attempt log counts an allowed line as
// one attempt and an aggregated refusal as its count (a half-written last line is skipped),
// and sizes read in a few characters.
import t from 'tap';
import { countAttempts } from '../../dist/workspace/session-now.js';
import { shortSize } from '../../dist/commands/ps.js';

t.test('attempts are counted from the log as the broker wrote them', async (t) => {
  const log = [
    { decision: 'allowed', host: 'api.openai.com' },
    { decision: 'denied', host: 'evil.example', count: 7 },
    { decision: 'failed', host: 'api.openai.com' },
    { event: 'log-capped' },
  ]
    .map((l) => JSON.stringify(l))
    .join('\n');
  t.same(countAttempts(`${log}\n{"decision":"allo`), { reached: 1, refused: 8 });
  t.same(countAttempts(''), { reached: 0, refused: 0 });
});

t.test('sizes read in a few characters', async (t) => {
  t.same([0, 512, 2048, 12_900_000, 4 * 2 ** 30].map(shortSize), ['0', '512', '2.0k', '12m', '4.0g']);
});

/**
 * The relays' command: run once the relay is ready, with the signals the relay gets passed on,
 * and its status as the relay's own (128+n when a signal ended it; 127 when it cannot start).
 */
import { constants } from 'node:os';
import { childProcess } from './snapshot-builtins.cjs';

const passedSignals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGWINCH'];

export function runChild(name: string, command: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = childProcess().spawn(command[0]!, command.slice(1), { stdio: 'inherit', env });
    const handlers = passedSignals.map((sig) => [sig, () => child.kill(sig)] as const);
    for (const [sig, fn] of handlers) process.on(sig, fn);
    const done = (status: number) => {
      for (const [sig, fn] of handlers) process.off(sig, fn);
      resolve(status);
    };
    child.once('error', (err) => {
      process.stderr.write(`${name}: cannot run ${command[0]}: ${err.message}\n`);
      done(127);
    });
    child.once('exit', (code, signal) => done(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
}

/**
 * The --help text, from the tool's own declarations: usage line, commands, options with their
 * types, examples, and (for the tool as a whole) the epilog and the exit-code table. The
 * sections and their order are the ones yargs printed before.
 */
import type { CommandSpec, ToolSpec } from './tool-spec.js';

const width = 100;

export const exitTable = `Exit codes: 0..255 the contained command's own status; 80 usage; 81 node unreachable;
82 image absent; 83 container failed to start; 84 user manager missing (loginctl enable-linger);
85 credential; 86 unsafe path; 87 git metadata not mountable; 88 limits not enforceable;
89 systemd-run failed; 90 refused by policy; 91 internal error; 92 workspace busy.`;

/** Words of `text` in lines of at most `room` characters (a longer word gets a line of its own). */
function wrap(text: string, room: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > room) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return line ? [...lines, line] : lines;
}

/**
 * Two columns: the left padded to the widest entry that fits in half the width, the right
 * wrapped beside it; a longer left entry (a long example) gets a line of its own, unwrapped so
 * it can be copied, and the right goes below it.
 */
function table(rows: [string, string][]): string[] {
  const fits = rows.map(([l]) => l.length).filter((n) => n <= width / 2);
  const left = Math.max(0, ...fits) + 2;
  const room = width - left - 2;
  return rows.flatMap(([l, r]) => {
    const right = wrap(r, room).map((text) => `  ${' '.repeat(left)}${text}`);
    if (l.length > width / 2) return [`  ${l}`.trimEnd(), ...right];
    return right.map((line, i) => (i === 0 ? `  ${l.padEnd(left)}${line.trimStart()}` : line));
  });
}

function paragraphs(text: string): string[] {
  return text.split('\n').flatMap((p) => wrap(p, width));
}

function signature(tool: ToolSpec, command: CommandSpec): string {
  const name = command.name === '$0' ? tool.name : `${tool.name} ${command.name}`;
  return command.takesCommand ? `${name} [command..]` : name;
}

function optionRows(command: CommandSpec | undefined): [string, string][] {
  const rows: [string, string][] = [['-h, --help', 'Show help [boolean]']];
  for (const f of command?.flags ?? []) rows.push([`    --${f.flag}`, `${f.describe} [${f.type === 'json' ? 'string' : f.type}]`]);
  for (const o of command?.options ?? []) {
    const fallback = o.default === undefined ? '' : ` [default: ${JSON.stringify(o.default)}]`;
    rows.push([`    --${o.flag}`, `${o.describe} [${o.type}]${fallback}`]);
  }
  return rows;
}

function section(title: string, lines: string[]): string[] {
  return lines.length > 0 ? ['', `${title}:`, ...lines] : [];
}

/** Help for one command (`tool cmd --help`), or for the tool (`tool --help`: command undefined). */
export function helpText(tool: ToolSpec, command: CommandSpec | undefined): string {
  const main = tool.commands.find((c) => c.name === '$0');
  const shown = command ?? main;
  const forTool = command === undefined || command === main;
  const named = tool.commands.filter((c) => c.name !== '$0');
  const commandRows: [string, string][] = [
    ...(main && named.length > 0 ? [[signature(tool, main), `${main.describe} [default]`] as [string, string]] : []),
    ...named.map((c): [string, string] => [signature(tool, c), c.describe]),
  ];
  const lines = [
    ...(forTool ? paragraphs(`${tool.name}: ${tool.summary}`) : [signature(tool, shown!), '', ...paragraphs(shown!.describe)]),
    ...section('Commands', forTool ? (commandRows.length > 0 ? table(commandRows) : []) : []),
    ...section('Options', table(optionRows(shown))),
    ...section('Examples', shown?.examples?.length ? table(shown.examples) : []),
    ...(forTool ? ['', ...[tool.epilog, exitTable].filter(Boolean).flatMap((p) => [...paragraphs(p!), ''])] : ['']),
  ];
  return `${lines.join('\n').trimEnd()}\n`;
}

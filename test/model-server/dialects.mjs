// What model-server.mjs answers, in each API's own stream of events: which step a request's
// conversation has reached, and the events that answer that step. Pure functions of the
// request body and the step; the server chooses the step and records the request.

// ---- OpenAI Responses (Codex CLI) ----
// Codex's exec_command returns after yield_time_ms with the command still running in the
// background ("Process running with session ID N"), and codex caps that first wait at 30 s
// whatever the model asks. A project's tests take longer under the VM tier's CPU emulation;
// answering the next step then would end the turn and kill the command. So, as a real model
// does, the server polls a running command with an empty write_stdin (codex lets a poll wait up
// to 5 min) until its output says it exited, and only an exited command counts as a step done.
const execYieldMs = 120_000;
const stillRunning = /Process running with session ID (\d+)/;

/** The text of a tool result item: a string, or a list of content parts. */
function toolOutputText(item) {
  const out = item.output;
  if (typeof out === 'string') return out;
  if (Array.isArray(out)) return out.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return typeof out?.content === 'string' ? out.content : '';
}

/** How far the conversation is: scripted steps done, and the command still running, if any. */
export function codexProgress(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  const outputs = input.filter((i) => i && (i.type === 'function_call_output' || i.type === 'custom_tool_call_output'));
  let done = 0;
  let runningSession = null;
  for (const output of outputs) {
    const running = stillRunning.exec(toolOutputText(output));
    runningSession = running ? Number(running[1]) : null;
    if (!running) done += 1;
  }
  return { step: done, runningSession, results: outputs.length };
}

/** The output item for a scripted step: a command (exec, or a write as a heredoc) or the final message. */
export function codexItem(step, n) {
  if (step.exec !== undefined) {
    return {
      type: 'function_call',
      id: `fc_${n}`,
      call_id: `call_${n}`,
      name: 'exec_command',
      arguments: JSON.stringify({ cmd: step.exec, yield_time_ms: execYieldMs }),
    };
  }
  if (step.write !== undefined) {
    const cmd = `mkdir -p "$(dirname '${step.write.path}')" && cat > '${step.write.path}' <<'AGENT_EOF'\n${step.write.content}\nAGENT_EOF`;
    return {
      type: 'function_call',
      id: `fc_${n}`,
      call_id: `call_${n}`,
      name: 'exec_command',
      arguments: JSON.stringify({ cmd, yield_time_ms: execYieldMs }),
    };
  }
  return {
    type: 'message',
    role: 'assistant',
    id: `msg_${n}`,
    content: [{ type: 'output_text', text: step.say ?? 'done', annotations: [] }],
  };
}

/** An empty write_stdin: wait for more output of the running command, up to execYieldMs. */
export function codexPoll(session, results) {
  return {
    type: 'function_call',
    id: `fc_poll_${results}`,
    call_id: `call_poll_${results}`,
    name: 'write_stdin',
    arguments: JSON.stringify({ session_id: session, chars: '', yield_time_ms: execYieldMs }),
  };
}

/** The Responses stream that answers with one output item. */
export function codexEvents(n, item) {
  const usage = {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 15,
  };
  return [
    ['response.created', { type: 'response.created', response: { id: `resp_${n}` } }],
    ['response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }],
    ['response.completed', { type: 'response.completed', response: { id: `resp_${n}`, usage } }],
  ];
}

// ---- Anthropic Messages (Claude Code) ----
/** The step a Claude Code request asks for: the tool results the conversation carries. */
export function claudeStepIndex(body) {
  let n = 0;
  for (const m of body.messages ?? []) {
    if (Array.isArray(m.content)) n += m.content.filter((c) => c && c.type === 'tool_result').length;
  }
  return n;
}

/** The Messages stream that answers step `n`: a tool call (Bash or Write) or the final text. */
export function claudeEvents(step, n, model) {
  const message = {
    id: `msg_${n}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1 },
  };
  const events = [['message_start', { type: 'message_start', message }]];
  let stop = 'end_turn';
  if (step.exec !== undefined || step.write !== undefined) {
    const [name, input] =
      step.exec !== undefined
        ? ['Bash', { command: step.exec, description: 'scripted step' }]
        : ['Write', { file_path: step.write.path, content: step.write.content }];
    events.push(
      [
        'content_block_start',
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: `toolu_${n}`, name, input: {} } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } },
      ],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    );
    stop = 'tool_use';
  } else {
    events.push(
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: step.say ?? 'done' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    );
  }
  events.push(
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ['message_stop', { type: 'message_stop' }],
  );
  return events;
}

import { z } from 'zod';
import { ModelServerError } from './servers';
import type { ToolCallRequest, ToolChatMessage, ToolChatOptions, ToolSpec } from './toolCalls';

/**
 * What both tool-chat clients share: the JSON reply protocol for servers that cannot take tools, and the
 * bounds every reply is read under (a whole-reply deadline, a cap on what the model may write).
 */

/**
 * Most characters of text and arguments one reply may carry per token asked for: the server is told
 * `maxTokens`, and a server that ignores it is cut here (a token is rarely more than 8 characters).
 */
const CHARS_PER_TOKEN_CAP = 8;

export function replyCharLimit(options: ToolChatOptions): number {
  return Math.max(1, options.maxTokens) * CHARS_PER_TOKEN_CAP;
}

/** The caller's cancel and the whole-reply deadline, as one signal; `timedOut` tells them apart afterwards. */
export function replyDeadline(options: ToolChatOptions): { signal: AbortSignal; timedOut: () => boolean; cut: () => void; wasCut: () => boolean } {
  const deadline = AbortSignal.timeout(Math.max(1, Math.round(options.timeoutMs)));
  const cutter = new AbortController();
  const signal = AbortSignal.any([deadline, cutter.signal, ...(options.signal ? [options.signal] : [])]);
  return { signal, timedOut: () => deadline.aborted, cut: () => cutter.abort(), wasCut: () => cutter.signal.aborted };
}

/** A stopped reply as a failure a writer can read: the deadline, or the caller's cancel. */
export function stoppedReply(server: string, options: ToolChatOptions, timedOut: boolean): ModelServerError {
  return timedOut
    ? new ModelServerError('timeout', `${server} did not finish its reply within ${Math.round(options.timeoutMs / 1000)} s; gave up`)
    : new ModelServerError('cancelled', 'cancelled');
}

/**
 * Most tool calls one reply may make. Research and proposals make a handful; a server past this is looping,
 * or sending something other than a model's reply.
 */
export const MAX_TOOL_CALLS_PER_REPLY = 64;

/**
 * Deepest nesting of a tool call's arguments (objects and arrays): a tool's arguments are a few levels deep,
 * and serialising a value nested tens of thousands deep overflows the stack.
 */
export const MAX_ARGUMENT_DEPTH = 64;

/** The failure for a reply past MAX_TOOL_CALLS_PER_REPLY, naming the limit. */
export function tooManyToolCalls(server: string): ModelServerError {
  return new ModelServerError('mid-stream', `${server} sent more than ${MAX_TOOL_CALLS_PER_REPLY} tool calls in one reply, the most one reply may make; stopped the reply`);
}

/** The arguments as sent, or a failure naming the limit when they nest deeper than MAX_ARGUMENT_DEPTH; measured without recursion. */
export function checkedArguments(server: string, name: string, value: unknown): unknown {
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > MAX_ARGUMENT_DEPTH) {
      throw new ModelServerError('mid-stream', `${server} sent a tool call (${JSON.stringify(name.slice(0, 40))}) whose arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels; stopped the reply`);
    }
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return value;
}

/** The server's refusal of a request with tools: asked again in the JSON protocol, or, with `nativeOnly`, the caller's to handle. */
export class ToolsRefusedError extends ModelServerError {
  constructor(
    server: string,
    model: string,
    /** The server's own words. */
    readonly detail: string,
  ) {
    super('refused', `'${model}' cannot use tools on ${server} (${detail})`);
    this.name = 'ToolsRefusedError';
  }
}

/** Whether an HTTP refusal is the server saying it cannot take tools (llama.cpp without --jinja, vLLM without a tool parser, Ollama's "does not support tools"). */
export function refusesTools(status: number | null, detail: string): boolean {
  return status === 400 && /\btools?\b|tool[_ ]choice|function/i.test(detail);
}

/** The arguments a model wrote, as an object to send back in the conversation; anything else as an empty one. */
export function argumentsObject(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Arguments as the model sent them, as text for the caller to validate (Ollama sends an object, OpenAI a string). */
export function argumentsText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? {});
}

// ── the JSON reply protocol ───────────────────────────────────────────────────────────────────────

/** The instruction that replaces native tools: the tools in words, and the one reply shape to use. */
export function jsonProtocolInstruction(tools: readonly ToolSpec[]): string {
  const listed = tools.map((t) => `- ${t.name}: ${t.description} Arguments (JSON Schema): ${JSON.stringify(t.parameters)}`).join('\n');
  return [
    'You can call these tools:',
    listed,
    'Reply with one JSON object and nothing else. To call tools: {"tool_calls": [{"name": "<tool>", "arguments": {…}}]}.',
    'To answer without a tool: {"content": "<your answer>"}. Results of your calls come back in the next message.',
  ].join('\n');
}

/** The conversation for a server without tools: tool calls and results written as text it can read. */
export function jsonProtocolMessages(messages: readonly ToolChatMessage[], tools: readonly ToolSpec[]): { role: 'system' | 'user' | 'assistant'; content: string }[] {
  const instruction = jsonProtocolInstruction(tools);
  const out: { role: 'system' | 'user' | 'assistant'; content: string }[] = [];
  for (const m of messages) {
    if (m.role === 'tool') out.push({ role: 'user', content: `Result of your call ${m.toolCallId} (${m.name}):\n${m.content}` });
    else if (m.role === 'assistant' && m.toolCalls?.length) {
      out.push({ role: 'assistant', content: JSON.stringify({ tool_calls: m.toolCalls.map((c) => ({ name: c.name, arguments: argumentsObject(c.argumentsText) })) }) });
    } else out.push({ role: m.role, content: m.content });
  }
  const system = out.findIndex((m) => m.role === 'system');
  if (system >= 0) out[system] = { role: 'system', content: `${out[system]!.content}\n\n${instruction}` };
  else out.unshift({ role: 'system', content: instruction });
  return out;
}

const JsonReply = z.object({
  content: z.string().optional(),
  tool_calls: z.array(z.object({ name: z.string().min(1), arguments: z.unknown().optional() })).optional(),
});

/**
 * A reply written in the JSON protocol: its first JSON object (models wrap it in a code fence or a
 * sentence). A reply with no such object is a failure, so the caller falls back to what needs no model.
 */
export function parseJsonProtocolReply(text: string, server: string): { content: string; toolCalls: ToolCallRequest[] } {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  let parsed: z.infer<typeof JsonReply> | undefined;
  if (start >= 0 && end > start) {
    try {
      const result = JsonReply.safeParse(JSON.parse(text.slice(start, end + 1)));
      if (result.success) parsed = result.data;
    } catch {
      parsed = undefined;
    }
  }
  if (!parsed) {
    const shown = text.length > 80 ? `${text.slice(0, 80)}…` : text;
    throw new ModelServerError('mid-stream', `the model on ${server} did not answer in the JSON reply protocol: ${JSON.stringify(shown)}`);
  }
  const calls = parsed.tool_calls ?? [];
  if (calls.length > MAX_TOOL_CALLS_PER_REPLY) throw tooManyToolCalls(server);
  return {
    content: parsed.content ?? '',
    toolCalls: calls.map((c, i) => ({ id: `call-${i + 1}`, name: c.name, argumentsText: argumentsText(checkedArguments(server, c.name, c.arguments)) })),
  };
}

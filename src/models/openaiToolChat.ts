import { z } from 'zod';
import { replyTooLargeIn } from './replyLimits';
import { describeBackend, type ModelBackend } from './backend';
import { classifyOpenAIError, describeServerFailure, openAIClient } from './openaiClient';
import { ModelServerError } from './servers';
import type { ToolCallRequest, ToolChatClient, ToolChatMessage, ToolChatOptions, ToolChatReply, ToolSpec } from './toolCalls';
import { SERVER_TOOL_TRAITS } from './modelCapabilities';
import { MAX_TOOL_CALLS_PER_REPLY, ToolsRefusedError, jsonProtocolMessages, parseJsonProtocolReply, refusesTools, replyCharLimit, replyDeadline, stoppedReply, tooManyToolCalls } from './toolReply';

/** A streamed chunk's choice: tool calls come in pieces, each piece naming the call it extends by `index`. */
const StreamChoice = z.object({
  delta: z
    .object({
      content: z.string().nullish(),
      tool_calls: z
        .array(z.object({ index: z.number().int().min(0), id: z.string().nullish(), function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish() }))
        .nullish(),
    })
    .nullish(),
  finish_reason: z.string().nullish(),
});

const WholeChoice = z.object({
  message: z.object({
    content: z.string().nullish(),
    tool_calls: z.array(z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }) })).nullish(),
  }),
  finish_reason: z.string().nullish(),
});

/**
 * `/chat/completions` with `tools` on any OpenAI-compatible server, through the official client: streamed
 * (tool-call deltas assembled by index, several calls in one reply) or whole. A server that answers 400
 * naming tools (llama.cpp without --jinja, vLLM without a tool parser) is asked again, and from then on,
 * in the JSON reply protocol. Every chunk is checked against the documented shape before it is used.
 */
export class OpenAIToolChat implements ToolChatClient {
  private readonly server: string;
  private readonly jsonOnly = new Set<string>();
  /** Models whose server answered 400 to `tool_choice`: asked without it from then on. */
  private readonly noToolChoice = new Set<string>();

  constructor(
    readonly backend: ModelBackend,
    private readonly options: { stream?: boolean } = {},
  ) {
    this.server = describeBackend(backend);
  }

  async chat(messages: ToolChatMessage[], tools: ToolSpec[], options: ToolChatOptions): Promise<ToolChatReply> {
    // Native only, the caller decides whether to ask (research on auto remembers a refusal, and can forget it).
    if (tools.length > 0 && (options.nativeOnly || !this.jsonOnly.has(options.model))) {
      try {
        return await this.exchange(messages, tools, options, true);
      } catch (error) {
        if (!(error instanceof ToolsRefusedError)) throw error;
        this.jsonOnly.add(options.model);
        if (options.nativeOnly) throw error;
      }
    }
    return this.exchange(messages, tools, options, false);
  }

  private async exchange(messages: ToolChatMessage[], tools: ToolSpec[], options: ToolChatOptions, native: boolean): Promise<ToolChatReply> {
    const required = native && options.requireToolCall === true && SERVER_TOOL_TRAITS[this.backend.provider].toolChoiceRequired && !this.noToolChoice.has(options.model);
    try {
      return await this.exchangeOnce(messages, tools, options, native, required);
    } catch (error) {
      // A server that does not take tool_choice is asked again without it; whether it takes tools is its answer then.
      if (!required || !(error instanceof ToolChoiceRefused)) throw error;
      this.noToolChoice.add(options.model);
      return this.exchangeOnce(messages, tools, options, native, false);
    }
  }

  private async exchangeOnce(messages: ToolChatMessage[], tools: ToolSpec[], options: ToolChatOptions, native: boolean, required: boolean): Promise<ToolChatReply> {
    const stream = this.options.stream ?? true;
    const deadline = replyDeadline(options);
    const limit = replyCharLimit(options);
    const request = {
      model: options.model,
      messages: native ? messages.map(toOpenAIMessage) : jsonProtocolMessages(messages, tools),
      ...(native ? { tools: tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })) } : {}),
      ...(required ? { tool_choice: 'required' as const } : {}),
      max_tokens: options.maxTokens,
    };
    let content = '';
    const calls = new Map<number, ToolCallRequest>();
    let finishReason: string | null = null;
    let written = 0;
    try {
      const client = await openAIClient(this.backend, Math.max(1, Math.round(options.timeoutMs)));
      if (!stream) {
        const reply = await client.chat.completions.create({ ...request, stream: false } as never, { signal: deadline.signal });
        const choice = WholeChoice.safeParse((reply as { choices?: unknown[] }).choices?.[0]);
        if (!choice.success) throw new ModelServerError('mid-stream', `${this.server} sent a reply that is not a chat completion`);
        content = choice.data.message.content ?? '';
        if ((choice.data.message.tool_calls?.length ?? 0) > MAX_TOOL_CALLS_PER_REPLY) throw tooManyToolCalls(this.server);
        for (const [i, call] of (choice.data.message.tool_calls ?? []).entries()) calls.set(i, { id: call.id, name: call.function.name, argumentsText: call.function.arguments });
        finishReason = choice.data.finish_reason ?? 'stop';
        written = content.length + [...calls.values()].reduce((n, c) => n + c.argumentsText.length, 0);
        if (written > limit) return this.reply(content.slice(0, limit), [], native, 'cut');
      } else {
        const chunks = await client.chat.completions.create({ ...request, stream: true } as never, { signal: deadline.signal });
        for await (const chunk of chunks as unknown as AsyncIterable<{ choices?: unknown[] }>) {
          const first = chunk.choices?.[0];
          if (first === undefined) continue;
          const parsed = StreamChoice.safeParse(first);
          if (!parsed.success) throw new ModelServerError('mid-stream', `${this.server} sent a chunk that is not a chat completion chunk`);
          const delta = parsed.data.delta;
          const piece = delta?.content ?? '';
          content += piece;
          written += piece.length;
          for (const part of delta?.tool_calls ?? []) {
            if (part.index >= MAX_TOOL_CALLS_PER_REPLY) throw tooManyToolCalls(this.server);
            const call = calls.get(part.index) ?? { id: '', name: '', argumentsText: '' };
            if (part.id) call.id = part.id;
            if (part.function?.name) call.name += part.function.name;
            const args = part.function?.arguments ?? '';
            call.argumentsText += args;
            written += args.length;
            calls.set(part.index, call);
          }
          if (parsed.data.finish_reason) finishReason = parsed.data.finish_reason;
          if (written > limit) {
            deadline.cut();
            return this.reply(content, [...calls.values()], native, 'cut');
          }
        }
        // The client ends the loop quietly when the request is aborted, so a stop is read here.
        if (deadline.signal.aborted) throw stoppedReply(this.server, options, deadline.timedOut());
        if (finishReason === null) throw new ModelServerError('mid-stream', `the reply from ${this.server} ended without a finish reason`);
      }
    } catch (error) {
      if (error instanceof ModelServerError) throw error;
      if (deadline.signal.aborted) throw stoppedReply(this.server, options, deadline.timedOut());
      const tooLarge = replyTooLargeIn(error);
      if (tooLarge) throw new ModelServerError('mid-stream', `${this.server}: ${tooLarge.message}`);
      const failure = classifyOpenAIError(error, this.backend);
      if (required && failure.status === 400 && /tool[_ ]choice/i.test(failure.detail)) throw new ToolChoiceRefused();
      if (native && refusesTools(failure.status, failure.detail)) throw new ToolsRefusedError(this.server, options.model, failure.detail);
      throw new ModelServerError(failure.kind, describeServerFailure(this.backend, failure));
    }
    return this.reply(content, [...calls.entries()].sort(([a], [b]) => a - b).map(([i, c]) => ({ ...c, id: c.id || `call-${i + 1}` })), native, finishReason);
  }

  private reply(content: string, calls: ToolCallRequest[], native: boolean, finishReason: string): ToolChatReply {
    if (native) return { content, toolCalls: calls, protocol: 'native', finishReason };
    return { ...parseJsonProtocolReply(content, this.server), protocol: 'json', finishReason };
  }
}

/** The server answered 400 naming tool_choice: asked again without it. */
class ToolChoiceRefused extends Error {}

function toOpenAIMessage(m: ToolChatMessage): Record<string, unknown> {
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  if (m.role === 'assistant' && m.toolCalls?.length) {
    return { role: 'assistant', content: m.content || null, tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.argumentsText } })) };
  }
  return { role: m.role, content: m.content };
}

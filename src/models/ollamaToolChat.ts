import { z } from 'zod';
import { cappedFetch, replyTooLargeIn } from './replyLimits';
import { describeBackend, type ModelBackend } from './backend';
import { ModelServerError } from './servers';
import type { ToolCallRequest, ToolChatClient, ToolChatMessage, ToolChatOptions, ToolChatReply, ToolSpec } from './toolCalls';
import { MAX_TOOL_CALLS_PER_REPLY, ToolsRefusedError, argumentsObject, argumentsText, checkedArguments, jsonProtocolMessages, parseJsonProtocolReply, refusesTools, replyCharLimit, replyDeadline, stoppedReply, tooManyToolCalls } from './toolReply';

const ShowReply = z.object({ capabilities: z.array(z.string()).optional() });

const ChatLine = z.object({
  message: z
    .object({
      content: z.string().optional(),
      tool_calls: z.array(z.object({ id: z.string().optional(), function: z.object({ name: z.string(), arguments: z.unknown().optional() }) })).optional(),
    })
    .optional(),
  done: z.boolean().optional(),
  done_reason: z.string().optional(),
  error: z.string().optional(),
});

const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * Ollama's `/api/chat` with `tools`: tool calls arrive whole in `message.tool_calls`, arguments as an
 * object. Whether the model can take tools is read from `/api/show`'s capabilities; a model that lacks
 * them (or a server that answers 400 "does not support tools") is spoken to in the JSON reply protocol.
 * Every line is checked against Ollama's documented shape before anything of it is used.
 */
export class OllamaToolChat implements ToolChatClient {
  private readonly server: string;
  private readonly fetch: typeof fetch;
  private readonly nativeTools = new Map<string, 'yes' | 'no' | 'unknown'>();

  constructor(
    readonly backend: ModelBackend,
    private readonly options: { stream?: boolean } = {},
  ) {
    this.server = describeBackend(backend);
    this.fetch = cappedFetch();
  }

  /** True when the server says the model takes tools (its capabilities list "tools"); an older server that lists none is not known to. */
  async canUseTools(model: string, signal?: AbortSignal): Promise<boolean> {
    return (await this.toolSupport(model, signal)) === 'yes';
  }

  /** What `/api/show` says of the model, read once: an older server lists no capabilities, and is tried natively. */
  private async toolSupport(model: string, signal?: AbortSignal): Promise<'yes' | 'no' | 'unknown'> {
    const known = this.nativeTools.get(model);
    if (known !== undefined) return known;
    const body = await this.post('/api/show', { model }, AbortSignal.any([AbortSignal.timeout(LOOKUP_TIMEOUT_MS), ...(signal ? [signal] : [])]));
    const parsed = ShowReply.safeParse(await body.json().catch(() => null));
    const support = !parsed.success || parsed.data.capabilities === undefined ? 'unknown' : parsed.data.capabilities.includes('tools') ? 'yes' : 'no';
    this.nativeTools.set(model, support);
    return support;
  }

  async chat(messages: ToolChatMessage[], tools: ToolSpec[], options: ToolChatOptions): Promise<ToolChatReply> {
    const native = tools.length > 0 && (await this.toolSupport(options.model, options.signal)) !== 'no';
    if (native) {
      try {
        return await this.exchange(messages, tools, options, true);
      } catch (error) {
        if (!(error instanceof ToolsRefusedError)) throw error;
        this.nativeTools.set(options.model, 'no');
        if (options.nativeOnly) throw error;
      }
    } else if (options.nativeOnly && tools.length > 0) {
      throw new ToolsRefusedError(this.server, options.model, 'its capabilities do not list tools');
    }
    return this.exchange(messages, tools, options, false);
  }

  private async exchange(messages: ToolChatMessage[], tools: ToolSpec[], options: ToolChatOptions, native: boolean): Promise<ToolChatReply> {
    const stream = this.options.stream ?? true;
    const deadline = replyDeadline(options);
    const limit = replyCharLimit(options);
    const body = {
      model: options.model,
      messages: native ? messages.map(toOllamaMessage) : jsonProtocolMessages(messages, tools),
      ...(native ? { tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) } : {}),
      stream,
      options: { num_predict: options.maxTokens, ...(options.contextWindow ? { num_ctx: options.contextWindow } : {}) },
    };
    let content = '';
    const calls: ToolCallRequest[] = [];
    let finishReason: string | null = null;
    let written = 0;
    const take = (line: z.infer<typeof ChatLine>): void => {
      if (line.error) throw new ModelServerError('mid-stream', `${this.server} reported an error during the reply: ${line.error}`);
      const piece = line.message?.content ?? '';
      content += piece;
      written += piece.length;
      for (const call of line.message?.tool_calls ?? []) {
        if (calls.length === MAX_TOOL_CALLS_PER_REPLY) throw tooManyToolCalls(this.server);
        const args = argumentsText(checkedArguments(this.server, call.function.name, call.function.arguments));
        written += args.length;
        calls.push({ id: call.id ?? `call-${calls.length + 1}`, name: call.function.name, argumentsText: args });
      }
      if (line.done) finishReason = line.done_reason ?? 'stop';
      if (written > limit) {
        finishReason = 'cut';
        deadline.cut();
      }
    };
    try {
      const response = await this.post('/api/chat', body, deadline.signal, native);
      if (!stream) take(parseLine(await response.text(), this.server));
      else await readLines(response, (text) => take(parseLine(text, this.server)), () => finishReason !== null);
    } catch (error) {
      if (error instanceof ToolsRefusedError || error instanceof ModelServerError) throw error;
      if (deadline.wasCut()) return this.reply(content, calls, native, 'cut');
      if (deadline.signal.aborted) throw stoppedReply(this.server, options, deadline.timedOut());
      throw this.failure(error);
    }
    if (finishReason === null) throw new ModelServerError('mid-stream', `the reply from ${this.server} ended without Ollama's final "done" message`);
    return this.reply(content, calls, native, finishReason);
  }

  private reply(content: string, calls: ToolCallRequest[], native: boolean, finishReason: string): ToolChatReply {
    if (native) return { content, toolCalls: calls, protocol: 'native', finishReason };
    const parsed = parseJsonProtocolReply(content, this.server);
    return { ...parsed, protocol: 'json', finishReason };
  }

  /** One request; an HTTP error becomes the server's own words (or ToolsRefused when it cannot take tools). */
  private async post(path: string, body: unknown, signal: AbortSignal, withTools = false): Promise<Response> {
    let response: Response;
    try {
      response = await this.fetch(`${this.backend.baseUrl}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal });
    } catch (error) {
      if (signal.aborted) throw error;
      throw this.failure(error);
    }
    if (response.ok) return response;
    const detail = await response
      .json()
      .then((j: unknown) => z.object({ error: z.string() }).safeParse(j).data?.error ?? `HTTP ${response.status}`)
      .catch(() => `HTTP ${response.status}`);
    if (withTools && refusesTools(response.status, detail)) throw new ToolsRefusedError(this.server, String((body as { model?: unknown }).model), detail);
    throw new ModelServerError(response.status === 404 ? 'not-found' : 'refused', `${this.server} refused the request (${response.status}): ${detail}`);
  }

  private failure(error: unknown): ModelServerError {
    const tooLarge = replyTooLargeIn(error);
    if (tooLarge) return new ModelServerError('mid-stream', `${this.server}: ${tooLarge.message}`);
    return new ModelServerError('unreachable', `cannot reach ${this.server} (${error instanceof Error ? (error.cause as Error | undefined)?.message ?? error.message : String(error)})`);
  }
}


function toOllamaMessage(m: ToolChatMessage): Record<string, unknown> {
  if (m.role === 'tool') return { role: 'tool', content: m.content, tool_name: m.name };
  if (m.role === 'assistant' && m.toolCalls?.length) {
    return { role: 'assistant', content: m.content, tool_calls: m.toolCalls.map((c) => ({ function: { name: c.name, arguments: argumentsObject(c.argumentsText) } })) };
  }
  return { role: m.role, content: m.content };
}

function parseLine(text: string, server: string): z.infer<typeof ChatLine> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ModelServerError('mid-stream', `${server} sent a line that is not JSON: ${JSON.stringify(text.slice(0, 80))}`);
  }
  const parsed = ChatLine.safeParse(json);
  if (!parsed.success) throw new ModelServerError('mid-stream', `${server} sent a line that is not Ollama's chat reply: ${JSON.stringify(text.slice(0, 80))}`);
  return parsed.data;
}

/** Reads NDJSON line by line until the stream ends or `done()` says the reply is whole. */
async function readLines(response: Response, onLine: (line: string) => void, done: () => boolean): Promise<void> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let pending = '';
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { value, done: ended } = await reader.read();
      pending += ended ? decoder.decode() : decoder.decode(value, { stream: true });
      const lines = pending.split('\n');
      pending = ended ? '' : lines.pop()!;
      for (const line of lines) {
        if (line.trim() !== '') onLine(line);
        if (done()) return;
      }
      if (ended) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

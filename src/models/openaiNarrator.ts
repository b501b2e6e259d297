import { z } from 'zod';
import { describeBackend, type ModelBackend } from './backend';
import { classifyOpenAIError, describeServerFailure, openAIClient } from './openaiClient';
import { listModels, ModelServerError } from './servers';
import { describeIssue, IdleDeadline, NarratorError, OllamaNarrator, type GenerateRequest, type GenerateResult, type Narrator } from './narrator';
import { DEFAULT_REPLY_DEADLINE_MS, DEFAULT_REPLY_TOKENS, describeBytes, MAX_REPLY_BYTES, replyTooLargeIn, TokenBound } from './replyLimits';

export interface OpenAICompatibleNarratorOptions {
  backend: ModelBackend;
  /** Longest wait for the next byte (first token included: a cold model load takes a while). */
  idleTimeoutMs?: number;
  /** Longest a whole reply may take (DEFAULT_REPLY_DEADLINE_MS). */
  replyTimeoutMs?: number;
  /** Most bytes one reply may take (MAX_REPLY_BYTES, as for Ollama). */
  maxReplyBytes?: number;
}

/** One streamed chunk, as much of it as the narrator reads: anything else in its place ends the reply with a reason. */
const StreamChunk = z.object({
  choices: z.array(z.object({ delta: z.object({ content: z.string().nullish() }).nullish(), finish_reason: z.string().nullish() })).default([]),
  usage: z.object({ prompt_tokens: z.number().optional(), completion_tokens: z.number().optional() }).nullish(),
});

/** A whole (non-streamed) chat completion. */
const WholeCompletion = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullish() }), finish_reason: z.string().nullish() })).min(1),
  usage: z.object({ prompt_tokens: z.number().optional(), completion_tokens: z.number().optional() }).nullish(),
});

/**
 * The narrator on any OpenAI-compatible server (llama.cpp, vLLM, LM Studio, KoboldCpp, hosted gateways)
 * through the official client: streamed `/v1/chat/completions`, with the same typed failures as the
 * Ollama narrator and the server's usage counts feeding the token calibration.
 */
export class OpenAICompatibleNarrator implements Narrator {
  readonly host: string;
  private readonly idleTimeoutMs: number;
  private readonly server: string;

  constructor(private readonly options: OpenAICompatibleNarratorOptions) {
    this.host = options.backend.baseUrl;
    this.server = describeBackend(options.backend);
    this.idleTimeoutMs = options.idleTimeoutMs ?? 120_000;
  }

  /** From `/v1/models` where the server reports it; a model the server does not list is named as missing. */
  async contextLength(model: string): Promise<number | null> {
    let models;
    try {
      models = await listModels(this.options.backend);
    } catch (error) {
      if (!(error instanceof ModelServerError)) throw error;
      // Some servers have no model list at all; generation will say whether the model exists.
      if (error.kind === 'not-found') return null;
      const kind = error.kind === 'unreachable' ? 'server-down' : error.kind === 'unauthorized' ? 'unauthorized' : error.kind === 'timeout' ? 'timeout' : 'server-error';
      throw new NarratorError(kind, error.message, '');
    }
    const found = models.find((m) => m.id === model);
    if (!found) throw new NarratorError('model-missing', this.missingModelMessage(model, models.map((m) => m.id)), '');
    return found.contextLength;
  }

  private missingModelMessage(model: string, offered: string[] | null): string {
    const list = offered === null ? '' : offered.length === 0 ? '; it lists no models' : `; it has ${offered.slice(0, 8).join(', ')}${offered.length > 8 ? ', …' : ''}`;
    return `${this.server} does not have the model '${model}'${list}. Choose one with "Select Narrator Model".`;
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    if (request.signal?.aborted) throw new NarratorError('cancelled', 'cancelled before the request was sent', '');
    const deadline = new IdleDeadline(this.idleTimeoutMs, request.signal, this.options.replyTimeoutMs ?? DEFAULT_REPLY_DEADLINE_MS);
    const bound = new TokenBound(request.maxTokens ?? DEFAULT_REPLY_TOKENS);
    let text = '';
    let finishReason: string | null = null;
    let usage: { prompt_tokens?: number; completion_tokens?: number } | null = null;
    try {
      const client = await openAIClient(this.options.backend, this.idleTimeoutMs, this.options.maxReplyBytes ?? MAX_REPLY_BYTES);
      const { data: stream, response } = await client.chat.completions
        .create(
        {
          model: request.model,
          messages: request.messages,
          stream: true,
          // The usage chunk is what calibrates token estimates for this model.
          stream_options: { include_usage: true },
          max_tokens: bound.maxTokens,
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        },
          { signal: deadline.signal },
        )
        .withResponse();
      const type = response.headers.get('content-type') ?? '';
      // A 200 that is not a stream: a whole completion (some servers ignore `stream`) is used; anything else is named.
      if (!/text\/event-stream/i.test(type)) return await this.wholeReply(response, type, bound, request);
      for await (const raw of stream) {
        deadline.arm();
        const parsed = StreamChunk.safeParse(raw);
        if (!parsed.success) throw new NarratorError('mid-stream', `${this.server} sent a piece of the reply that is not a chat completion chunk (${describeIssue(parsed.error)}); stopped the reply`, text);
        const chunk = parsed.data;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        const piece = choice?.delta?.content ?? '';
        if (piece) {
          if (!bound.take()) {
            deadline.cut();
            throw new NarratorError('too-large', bound.describe(this.server), text);
          }
          text += piece;
          request.onChunk?.(piece);
        }
        if (choice?.finish_reason) finishReason = choice.finish_reason;
      }
      // The client ends the loop quietly when the request is aborted, so a stop or a timeout is read here.
      if (deadline.signal.aborted) throw this.stopped(text, deadline);
      // finish_reason is the server's word that the reply is whole; a stream that ends without it was cut.
      if (finishReason === null) throw new NarratorError('no-done', `the reply stream from ${this.server} ended without a finish reason; the reply may be cut off`, text);
      return { text, promptEvalCount: usage?.prompt_tokens ?? null, evalCount: usage?.completion_tokens ?? null, doneReason: finishReason };
    } catch (error) {
      if (error instanceof NarratorError) throw error;
      if (deadline.signal.aborted) throw this.stopped(text, deadline);
      const tooLarge = replyTooLargeIn(error);
      if (tooLarge) {
        throw new NarratorError('too-large', `${this.server} sent more than ${describeBytes(tooLarge.limitBytes)} for one reply, the most one reply may take; stopped reading it (is the model repeating itself?)`, text);
      }
      throw this.classify(error, text, request.model);
    } finally {
      deadline.dispose();
    }
  }

  /** A non-streamed answer to a streamed request: a whole JSON completion is the reply; anything else (a proxy's HTML page) is named. */
  private async wholeReply(response: Response, type: string, bound: TokenBound, request: GenerateRequest): Promise<GenerateResult> {
    const body = await response.text();
    let completion: z.infer<typeof WholeCompletion> | undefined;
    try {
      completion = WholeCompletion.parse(JSON.parse(body));
    } catch {
      const what = /html/i.test(type) || /^\s*<(!doctype|html)/i.test(body) ? 'an HTML page' : type ? `'${type.split(';')[0]}'` : 'a body with no content type';
      throw new NarratorError('server-error', `${this.server} answered HTTP ${response.status} with ${what}, not a streamed reply; check the base URL (an OpenAI-compatible one usually ends in /v1)`, '');
    }
    const choice = completion.choices[0];
    const text = choice?.message.content ?? '';
    if (text) {
      if (!bound.take()) throw new NarratorError('too-large', bound.describe(this.server), '');
      request.onChunk?.(text);
    }
    return { text, promptEvalCount: completion.usage?.prompt_tokens ?? null, evalCount: completion.usage?.completion_tokens ?? null, doneReason: choice?.finish_reason ?? 'stop' };
  }

  private stopped(partial: string, deadline?: IdleDeadline): NarratorError {
    const limit = deadline?.describe(this.server);
    if (limit) return new NarratorError('timeout', limit, partial);
    return new NarratorError('cancelled', partial ? 'cancelled while the reply was streaming' : 'cancelled before any text arrived', partial);
  }

  private classify(error: unknown, partial: string, model: string): NarratorError {
    const failure = classifyOpenAIError(error, this.options.backend);
    switch (failure.kind) {
      case 'unreachable':
        return partial === ''
          ? new NarratorError('server-down', describeServerFailure(this.options.backend, failure), partial)
          : new NarratorError('mid-stream', `the connection to ${this.server} broke during the reply (${failure.detail})`, partial);
      case 'unauthorized':
        return new NarratorError('unauthorized', describeServerFailure(this.options.backend, failure), partial);
      case 'not-found':
        return new NarratorError('model-missing', `${this.missingModelMessage(model, null)} (${failure.detail})`, partial);
      case 'timeout':
        return new NarratorError('timeout', `${this.server} sent nothing for ${Math.round(this.idleTimeoutMs / 1000)} s; gave up`, partial);
      case 'cancelled':
        return this.stopped(partial);
      case 'rate-limited':
        return new NarratorError('server-error', describeServerFailure(this.options.backend, failure), partial);
      case 'mid-stream':
        return new NarratorError('mid-stream', `${this.server} reported an error during the reply: ${failure.detail}`, partial);
      default:
        return new NarratorError('server-error', `${this.server} refused the request (${failure.status}): ${failure.detail}`, partial);
    }
  }
}

/** The narrator on whichever kind of server the backend names. */
export function narratorFor(backend: ModelBackend, options: { idleTimeoutMs?: number } = {}): Narrator {
  return backend.provider === 'ollama' ? new OllamaNarrator({ host: backend.baseUrl, ...options }) : new OpenAICompatibleNarrator({ backend, ...options });
}

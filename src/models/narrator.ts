import { Ollama } from 'ollama';
import { z } from 'zod';
import { resolveOllamaHost } from './ollamaHost';
import { causeOf, RedirectRefusedError } from './origin';
import { cappedFetch, DEFAULT_REPLY_DEADLINE_MS, DEFAULT_REPLY_TOKENS, describeBytes, MAX_REPLY_BYTES, ReplyTooLargeError, TokenBound } from './replyLimits';

export type NarratorErrorKind =
  | 'server-down' // nothing answers at the host
  | 'model-missing' // the server does not have the model
  | 'server-error' // the server refused the request before streaming
  | 'mid-stream' // an error line arrived after the reply began
  | 'no-done' // the stream ended without Ollama's final done chunk
  | 'timeout' // no byte for too long
  | 'unauthorized' // the server wants an API key, or refused the one it got
  | 'not-ollama' // the answer is not Ollama's JSON: another kind of server, or a broken line
  | 'too-large' // the reply passed the most one reply may take
  | 'cancelled'; // the writer stopped it

/** A generation failure a writer can act on, with whatever text had already arrived. */
export class NarratorError extends Error {
  constructor(
    readonly kind: NarratorErrorKind,
    message: string,
    readonly partial: string,
  ) {
    super(message);
    this.name = 'NarratorError';
  }
}

/** One message of a chat with a model. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface GenerateRequest {
  model: string;
  messages: ChatMessage[];
  /** Context window to ask Ollama for, so the budget we planned is the one it uses. */
  numCtx?: number;
  temperature?: number;
  /** Most tokens the reply may have: sent to the server and enforced as it streams (DEFAULT_REPLY_TOKENS when unset). */
  maxTokens?: number;
  onChunk?: (text: string) => void;
  signal?: AbortSignal;
}

export interface GenerateResult {
  text: string;
  promptEvalCount: number | null;
  evalCount: number | null;
  doneReason: string | null;
}

/** Generation, behind a port so the engine can be previewed with no model at all. */
export interface Narrator {
  readonly host: string;
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** The model's trained context length, or null when the server cannot say. */
  contextLength(model: string): Promise<number | null>;
}

export interface OllamaNarratorOptions {
  /** Host from settings; empty falls back to OLLAMA_HOST, then the local default. */
  host?: string;
  env?: NodeJS.ProcessEnv;
  /** Longest wait for the next byte (first token included: a cold model load takes a while). */
  idleTimeoutMs?: number;
  /** Longest a whole reply may take (DEFAULT_REPLY_DEADLINE_MS). */
  replyTimeoutMs?: number;
  /** Longest wait for the model lookup (`/api/show`). */
  lookupTimeoutMs?: number;
  /** Most bytes read of one reply. */
  maxReplyBytes?: number;
}

/** One streamed line of `/api/chat`, as much of it as the narrator reads: anything else in its place ends the reply with a reason. */
const OllamaPiece = z.object({
  message: z.object({ content: z.string().optional() }).optional(),
  done: z.boolean().optional(),
  done_reason: z.string().nullish(),
  prompt_eval_count: z.number().optional(),
  eval_count: z.number().optional(),
});

/** The first thing wrong with a piece, as "message.content: expected string, received object". */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0]!;
  return `${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
}

/** Ollama answers in JSON (`application/json`, or `application/x-ndjson` when streaming). */
class NotOllamaError extends Error {}

/**
 * Ollama streams one JSON object per line. The client skips a line that is not JSON without a word, so a
 * reply with a broken line would look complete: here such a line ends the reply with a reason instead.
 * Only whole, checked lines are passed on.
 */
function requireJsonLines(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  // Passes on the lines before a broken one, so the text the writer saw is the partial text kept.
  const pass = (lines: string[], controller: TransformStreamDefaultController<Uint8Array>): void => {
    const good: string[] = [];
    for (const line of lines) {
      if (line.trim() !== '') {
        try {
          JSON.parse(line);
        } catch {
          controller.enqueue(encoder.encode(good.join('')));
          const shown = line.length > 80 ? `${line.slice(0, 80)}…` : line;
          return controller.error(new NotOllamaError(`a line of the reply is not JSON: ${JSON.stringify(shown)}`));
        }
      }
      good.push(`${line}\n`);
    }
    controller.enqueue(encoder.encode(good.join('')));
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const text = decoder.decode(chunk, { stream: true });
        if (!text.includes('\n')) {
          pending += text;
          return;
        }
        const lines = (pending + text).split('\n');
        pending = lines.pop()!;
        pass(lines, controller);
      },
      flush(controller) {
        pass([pending + decoder.decode()], controller);
      },
    }),
  );
}

/** Requests that follow our signal, replies cut at the size cap, refused when they are not Ollama's JSON. */
function ollamaFetch(signal: AbortSignal, maxReplyBytes: number): typeof fetch {
  const capped = cappedFetch(maxReplyBytes, (input, init) => fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal }));
  return async (input, init) => {
    const response = await capped(input, init);
    const type = response.headers.get('content-type') ?? '';
    // An error status keeps Ollama's own reason; a success must be Ollama's JSON.
    if (response.ok && !/json/i.test(type)) {
      await response.body?.cancel();
      throw new NotOllamaError(`it answered with ${type ? `'${type.split(';')[0]}'` : 'no content type'} instead of Ollama's JSON (HTTP ${response.status})`);
    }
    if (!response.body || !/ndjson/i.test(type)) return response;
    return new Response(requireJsonLines(response.body), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ECONNRESET', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_SOCKET']);

function connectionCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let i = 0; i < 4 && current instanceof Error; i++) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return code;
    current = (current as Error & { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Stops a streamed request when the caller cancels, the server stays silent for `idleMs`, or the whole
 * reply takes longer than `totalMs`: `arm()` again on every piece that arrives; `timedOut` (silent) and
 * `overran` (too long) say which stopped it. Starts armed.
 */
export class IdleDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly total: NodeJS.Timeout | undefined;
  private readonly onCancel = () => this.controller.abort();
  timedOut = false;
  overran = false;

  constructor(
    private readonly idleMs: number,
    private readonly cancel?: AbortSignal,
    readonly totalMs?: number,
  ) {
    cancel?.addEventListener('abort', this.onCancel, { once: true });
    if (totalMs !== undefined) {
      this.total = setTimeout(() => {
        this.overran = true;
        this.controller.abort();
      }, totalMs);
    }
    this.arm();
  }

  /** Why a stopped reply stopped, when a limit stopped it, naming the server. */
  describe(server: string): string | undefined {
    if (this.overran) {
      const took = this.totalMs! >= 120_000 ? `${Math.round(this.totalMs! / 60_000)} min` : `${Math.round(this.totalMs! / 1000)} s`;
      return `${server} was still replying after ${took}, the longest one reply may take; stopped it`;
    }
    if (this.timedOut) return `${server} sent nothing for ${Math.round(this.idleMs / 1000)} s; gave up`;
    return undefined;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.idleMs);
  }

  /** Ends the request for a reason of our own (the reply passed its bound): no limit is blamed. */
  cut(): void {
    this.controller.abort();
  }

  dispose(): void {
    clearTimeout(this.timer);
    clearTimeout(this.total);
    this.cancel?.removeEventListener('abort', this.onCancel);
  }
}

export class OllamaNarrator implements Narrator {
  readonly host: string;
  private readonly idleTimeoutMs: number;
  private readonly lookupTimeoutMs: number;
  private readonly replyTimeoutMs: number;
  private readonly maxReplyBytes: number;
  private readonly contextLengths = new Map<string, number | null>();

  constructor(options: OllamaNarratorOptions = {}) {
    this.host = resolveOllamaHost(options.host, options.env);
    this.idleTimeoutMs = options.idleTimeoutMs ?? 120_000;
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? 10_000;
    this.replyTimeoutMs = options.replyTimeoutMs ?? DEFAULT_REPLY_DEADLINE_MS;
    this.maxReplyBytes = options.maxReplyBytes ?? MAX_REPLY_BYTES;
  }

  /** A client whose every request also obeys our signal, so cancel and timeout work before the first byte. */
  private client(signal: AbortSignal): Ollama {
    return new Ollama({ host: this.host, fetch: ollamaFetch(signal, this.maxReplyBytes) });
  }

  async contextLength(model: string): Promise<number | null> {
    if (this.contextLengths.has(model)) return this.contextLengths.get(model)!;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.lookupTimeoutMs);
    try {
      const info = await this.client(controller.signal).show({ model });
      const entry = Object.entries(info.model_info ?? {}).find(([key]) => key.endsWith('.context_length'));
      const length = typeof entry?.[1] === 'number' ? entry[1] : null;
      this.contextLengths.set(model, length);
      return length;
    } catch (error) {
      if (timedOut) {
        throw new NarratorError('timeout', `Ollama at ${this.host} did not answer the lookup of the model '${model}' within ${this.lookupTimeoutMs / 1000} s; gave up`, '');
      }
      throw this.classify(error, '', model, controller.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    if (request.signal?.aborted) throw new NarratorError('cancelled', 'cancelled before the request was sent', '');
    const deadline = new IdleDeadline(this.idleTimeoutMs, request.signal, this.replyTimeoutMs);
    const bound = new TokenBound(request.maxTokens ?? DEFAULT_REPLY_TOKENS);
    let text = '';
    try {
      const stream = await this.client(deadline.signal).chat({
        model: request.model,
        messages: request.messages,
        stream: true,
        options: {
          ...(request.numCtx ? { num_ctx: request.numCtx } : {}),
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
          num_predict: bound.maxTokens,
        },
      });
      for await (const raw of stream) {
        deadline.arm();
        const parsed = OllamaPiece.safeParse(raw);
        if (!parsed.success) {
          stream.abort();
          throw new NarratorError('mid-stream', `Ollama at ${this.host} sent a piece of the reply that is not a chat message (${describeIssue(parsed.error)}); stopped the reply`, text);
        }
        const part = parsed.data;
        const piece = part.message?.content ?? '';
        if (piece) {
          if (!bound.take()) {
            stream.abort();
            throw new NarratorError('too-large', bound.describe(`Ollama at ${this.host}`), text);
          }
          text += piece;
          request.onChunk?.(piece);
        }
        if (part.done) {
          return { text, promptEvalCount: part.prompt_eval_count ?? null, evalCount: part.eval_count ?? null, doneReason: part.done_reason ?? null };
        }
      }
      throw new NarratorError('no-done', 'the reply stream ended without Ollama\'s final "done" message; the reply may be cut off', text);
    } catch (error) {
      if (error instanceof NarratorError) throw error;
      const limit = deadline.describe(`Ollama at ${this.host}`);
      if (limit) throw new NarratorError('timeout', limit, text);
      throw this.classify(error, text, request.model, deadline.signal);
    } finally {
      deadline.dispose();
    }
  }

  private classify(error: unknown, partial: string, model: string, signal: AbortSignal): NarratorError {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof ReplyTooLargeError) {
      return new NarratorError('too-large', `Ollama at ${this.host} sent more than ${describeBytes(error.limitBytes)} for one reply, the most one reply may take; stopped reading it (is the model repeating itself?)`, partial);
    }
    const redirect = causeOf(error, RedirectRefusedError);
    if (redirect) return new NarratorError('server-error', `Ollama at ${this.host} ${redirect.message}`, partial);
    if (error instanceof NotOllamaError) {
      return new NarratorError('not-ollama', `the server at ${this.host} is not answering as Ollama does: ${message}. Check the Ollama host in settings or OLLAMA_HOST.`, partial);
    }
    if (signal.aborted) return new NarratorError('cancelled', partial ? 'cancelled while the reply was streaming' : 'cancelled before any text arrived', partial);
    const status = (error as { status_code?: unknown }).status_code;
    if ((error as Error).name === 'ResponseError' && typeof status === 'number') {
      if (status === 404 && /not found/i.test(message)) {
        return new NarratorError('model-missing', `Ollama at ${this.host} does not have the model '${model}'. Run \`ollama pull ${model}\` on that machine, or choose another model.`, partial);
      }
      return new NarratorError('server-error', `Ollama at ${this.host} refused the request (${status}): ${message}`, partial);
    }
    const code = connectionCode(error);
    if (code && partial === '') {
      return new NarratorError('server-down', `cannot reach Ollama at ${this.host} (${code}). Start it with \`ollama serve\`, or set the host in settings or OLLAMA_HOST.`, partial);
    }
    if (/did not receive done/i.test(message)) {
      return new NarratorError('no-done', 'the reply stream ended without Ollama\'s final "done" message; the reply may be cut off', partial);
    }
    return new NarratorError('mid-stream', `Ollama reported an error during the reply: ${message}`, partial);
  }
}

import { causeOf, sameOriginFetch } from './origin';

/**
 * Most bytes read of one model reply, on every backend. A narration turn is a few kilobytes and a model
 * lookup less; a server that streams without end (a looping model, something that is not a model server)
 * would otherwise take the process's memory with it.
 */
export const MAX_REPLY_BYTES = 4 * 1024 * 1024;

/** Most tokens one reply may have when the caller names none: what the context report keeps free "for the reply". */
export const DEFAULT_REPLY_TOKENS = 1024;

/** Longest one whole reply may take, however steadily it streams (the idle limit stops only a silent server). */
export const DEFAULT_REPLY_DEADLINE_MS = 10 * 60_000;

/**
 * A streamed reply counted against its token bound, which is also sent to the server (`max_tokens`,
 * `num_predict`). Servers stream a token a piece, so one that ignores the bound is cut here at the same
 * length; pieces bigger than tokens come are held by the byte cap (MAX_REPLY_BYTES).
 */
export class TokenBound {
  private pieces = 0;

  constructor(readonly maxTokens: number) {}

  /** Counts a piece; false once the reply has gone past its bound (that piece is not to be kept). */
  take(): boolean {
    return ++this.pieces <= this.maxTokens;
  }

  /** Why the reply was stopped, naming the server. */
  describe(server: string): string {
    return `cut at the response length: ${server} went on past ${this.maxTokens.toLocaleString('en')} tokens, the most one reply may take (the Max Reply Tokens setting; --max-tokens in the CLI)`;
  }
}

export class ReplyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`the reply passed ${describeBytes(limitBytes)}, the most one reply may take; stopped reading it`);
    this.name = 'ReplyTooLargeError';
  }
}

/** The ReplyTooLargeError behind a client's error, however deeply the client wrapped it. */
export function replyTooLargeIn(error: unknown): ReplyTooLargeError | undefined {
  return causeOf(error, ReplyTooLargeError);
}

/**
 * Most bytes read of one embedding reply: room for every text of the batch to come back as an
 * 8192-dimensional vector written at full double precision (about 24 bytes a number), the largest real
 * embedding replies, plus the envelope. A batch can pass MAX_REPLY_BYTES; a server streaming without end cannot.
 */
export function embeddingReplyLimit(texts: number): number {
  return 64 * 1024 + texts * 8192 * 24;
}

/** What a writer is told when an embedding server sent more than any batch of vectors can take. */
export function describeEmbeddingTooLarge(server: string, error: ReplyTooLargeError, texts: number): string {
  return `${server} sent more than ${describeBytes(error.limitBytes)} embedding ${texts} ${texts === 1 ? 'text' : 'texts'}, more than the vectors can take; stopped reading it (is it an embedding server?)`;
}

export function describeBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / (1024 * 1024))} MB` : `${Math.round(bytes / 1024)} KB`;
}

/**
 * A fetch for a model client (the `ollama` and `openai` clients both take one) whose response bodies end
 * in `ReplyTooLargeError` once they pass `maxBytes`; the connection is dropped there. A redirect to
 * another origin is refused (`RedirectRefusedError`).
 */
export function cappedFetch(maxBytes = MAX_REPLY_BYTES, base: typeof fetch = fetch): typeof fetch {
  const guarded = sameOriginFetch(base);
  return async (input, init) => {
    const response = await guarded(input, init);
    if (!response.body) return response;
    let received = 0;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          received += chunk.byteLength;
          if (received > maxBytes) controller.error(new ReplyTooLargeError(maxBytes));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

import { Ollama } from 'ollama';
import { causeOf, RedirectRefusedError } from './origin';
import { cappedFetch, describeEmbeddingTooLarge, embeddingReplyLimit, replyTooLargeIn } from './replyLimits';

/** Anything that turns texts into vectors, one per text, in order. */
export interface Embedder {
  readonly model: string;
  /** Where it runs, for messages ("http://127.0.0.1:11434"). */
  readonly host: string;
  embed(texts: string[]): Promise<number[][]>;
}

export const DEFAULT_EMBED_TIMEOUT_MS = 10_000;

/** Embeddings from an Ollama server through the `ollama` client; every failure becomes a readable Error. */
export class OllamaEmbedder implements Embedder {
  constructor(
    readonly host: string,
    readonly model: string,
    private readonly timeoutMs = DEFAULT_EMBED_TIMEOUT_MS,
  ) {}

  async embed(texts: string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    // The client cannot abort a non-streamed call itself, so the timeout rides on fetch; the reply is capped for this batch's size.
    const timed: typeof fetch = (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
    const client = new Ollama({ host: this.host, fetch: cappedFetch(embeddingReplyLimit(texts.length), timed) });
    try {
      const response = await client.embed({ model: this.model, input: texts });
      if (response.embeddings.length !== texts.length) {
        throw new Error(`Ollama at ${this.host} returned ${response.embeddings.length} vectors for ${texts.length} texts`);
      }
      return response.embeddings;
    } catch (error) {
      const tooLarge = replyTooLargeIn(error);
      if (tooLarge) throw new Error(describeEmbeddingTooLarge(`Ollama at ${this.host}`, tooLarge, texts.length), { cause: error });
      throw new Error(describeOllamaError(error, this.host, this.model, this.timeoutMs), { cause: error });
    }
  }
}

function describeOllamaError(error: unknown, host: string, model: string, timeoutMs: number): string {
  const redirect = causeOf(error, RedirectRefusedError);
  if (redirect) return `Ollama at ${host} ${redirect.message}`;
  const e = error as { name?: string; message?: string; status_code?: number; cause?: { code?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `Ollama at ${host} did not answer within ${timeoutMs} ms`;
  if (e.name === 'ResponseError') {
    if (e.status_code === 404) return `Ollama at ${host} has no model '${model}' (pull it with: ollama pull ${model})`;
    return `Ollama at ${host} failed to embed with '${model}' (HTTP ${e.status_code}): ${e.message}`;
  }
  if (e.cause?.code === 'ECONNREFUSED' || /fetch failed/i.test(e.message ?? '')) return `cannot reach Ollama at ${host} (is it running?)`;
  return `embedding with '${model}' at ${host} failed: ${e.message ?? String(error)}`;
}

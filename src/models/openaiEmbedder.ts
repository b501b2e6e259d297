import { DEFAULT_EMBED_TIMEOUT_MS, OllamaEmbedder, type Embedder } from './embedder';
import { describeEmbeddingTooLarge, embeddingReplyLimit, replyTooLargeIn } from './replyLimits';
import { describeBackend, type ModelBackend } from './backend';
import { classifyOpenAIError, describeServerFailure, openAIClient } from './openaiClient';

/** Embeddings from an OpenAI-compatible server (`/v1/embeddings`); every failure becomes a readable Error. */
export class OpenAICompatibleEmbedder implements Embedder {
  readonly host: string;

  constructor(
    private readonly backend: ModelBackend,
    readonly model: string,
    private readonly timeoutMs = DEFAULT_EMBED_TIMEOUT_MS,
  ) {
    this.host = backend.baseUrl;
  }

  async embed(texts: string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    let data: { index: number; embedding: number[] }[];
    try {
      // Floats, not the client's default base64: not every compatible server speaks base64.
      const client = await openAIClient(this.backend, this.timeoutMs, embeddingReplyLimit(texts.length));
      ({ data } = await client.embeddings.create({ model: this.model, input: texts, encoding_format: 'float' }));
    } catch (error) {
      const tooLarge = replyTooLargeIn(error);
      if (tooLarge) throw new Error(describeEmbeddingTooLarge(describeBackend(this.backend), tooLarge, texts.length), { cause: error });
      const failure = classifyOpenAIError(error, this.backend);
      const message =
        failure.kind === 'not-found'
          ? `${this.host} has no embedding model '${this.model}' (${failure.detail})`
          : `embedding with '${this.model}' failed: ${describeServerFailure(this.backend, failure)}`;
      throw new Error(message, { cause: error });
    }
    if (data.length !== texts.length) throw new Error(`${this.host} returned ${data.length} vectors for ${texts.length} texts`);
    // Servers may answer out of order; `index` says which text each vector belongs to.
    return [...data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
  }
}

/** The embedder for a model on either kind of server. */
export function embedderFor(backend: ModelBackend, model: string, timeoutMs = DEFAULT_EMBED_TIMEOUT_MS): Embedder {
  return backend.provider === 'ollama' ? new OllamaEmbedder(backend.baseUrl, model, timeoutMs) : new OpenAICompatibleEmbedder(backend, model, timeoutMs);
}

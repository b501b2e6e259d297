import { Ollama } from 'ollama';
import type { ChatMessage } from './narrator';
import { cappedFetch, MAX_REPLY_BYTES } from './replyLimits';

/** Longest one structured reply may take. */
const JSON_REPLY_DEADLINE_MS = 120_000;

/**
 * Non-streamed chats whose replies must follow a JSON Schema (Ollama's `format`), at temperature 0: the
 * consistency check asks one per pair of passages. Each reply is bounded three ways: its tokens
 * (`num_predict`), the bytes every model reply may take, and a whole-reply deadline; an abort of `signal`
 * stops the call in flight. The reply is the model's text, for the caller to parse.
 */
export class OllamaJsonChat {
  private readonly client: Ollama;
  private readonly abort = () => this.client.abort();

  constructor(
    readonly host: string,
    private readonly signal?: AbortSignal,
  ) {
    const timed: typeof fetch = (input, init) => fetch(input, { ...init, signal: AbortSignal.any([AbortSignal.timeout(JSON_REPLY_DEADLINE_MS), ...(init?.signal ? [init.signal] : [])]) });
    this.client = new Ollama({ host, fetch: cappedFetch(MAX_REPLY_BYTES, timed) });
    signal?.addEventListener('abort', this.abort);
  }

  async ask(model: string, messages: ChatMessage[], format: Record<string, unknown>, maxTokens: number): Promise<string> {
    const response = await this.client.chat({ model, messages, stream: false, format, options: { temperature: 0, num_predict: maxTokens } });
    return response.message.content;
  }

  close(): void {
    this.signal?.removeEventListener('abort', this.abort);
  }
}

import { Ollama } from 'ollama';
import type { ChatMessage } from './narrator';
import { cappedFetch } from './replyLimits';

/**
 * Non-streamed chats whose replies must follow a JSON Schema (Ollama's `format`), at temperature 0: the
 * consistency check asks one per pair of passages. Each reply is read up to the cap every model reply
 * shares; an abort of `signal` stops the call in flight. The reply is the model's text, for the caller to parse.
 */
export class OllamaJsonChat {
  private readonly client: Ollama;
  private readonly abort = () => this.client.abort();

  constructor(
    readonly host: string,
    private readonly signal?: AbortSignal,
  ) {
    this.client = new Ollama({ host, fetch: cappedFetch() });
    signal?.addEventListener('abort', this.abort);
  }

  async ask(model: string, messages: ChatMessage[], format: Record<string, unknown>): Promise<string> {
    const response = await this.client.chat({ model, messages, stream: false, format, options: { temperature: 0 } });
    return response.message.content;
  }

  close(): void {
    this.signal?.removeEventListener('abort', this.abort);
  }
}

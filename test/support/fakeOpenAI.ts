import http from 'node:http';
import { closeLoopback, listenOnLoopback, readBody } from './loopback';
import { bagOfWordsEmbedding } from './fakeOllama';

/**
 * A loopback HTTP server that speaks the OpenAI-compatible API as llama.cpp's server, vLLM and hosted
 * gateways do, closely enough for the official `openai` client: `/v1/chat/completions` streamed as SSE
 * `data:` chunks ending with a usage chunk and `data: [DONE]`, `/v1/embeddings`, `/v1/models` (with
 * vLLM's `max_model_len`), and `{"error": {message, type, code}}` bodies with real status codes. Tests
 * script what it says and read what it was asked, headers included.
 */

export interface CompletionScript {
  chunks?: string[];
  promptTokens?: number;
  completionTokens?: number;
  /** Sent as the last content chunk's finish_reason. */
  finishReason?: string;
  chunkDelayMs?: number;
  /** Delay before the first byte (for timeouts). */
  delayMs?: number;
  /** After this many chunks, send an SSE `data: {"error": …}` event, as vLLM does when generation fails. */
  errorAfterChunks?: { after: number; message: string };
  /** The connection ends after the content: no finish_reason, no usage, no `[DONE]` (a dropped stream). */
  cutAfterContent?: boolean;
  /** Everything but the final `data: [DONE]` line. */
  omitDone?: boolean;
  /** Fail before any byte with this status and an OpenAI error body. */
  status?: number;
  error?: string;
}

export interface RecordedOpenAIRequest {
  method: string;
  path: string;
  body: unknown;
  authorization: string | undefined;
}

export interface FakeOpenAIOptions {
  /** Chat models the server serves, with the context length it reports (null: it does not say). */
  chatModels?: Record<string, number | null>;
  /** Embedding models and their dimensions. */
  embedModels?: Record<string, number>;
  /** When set, every request must carry `Authorization: Bearer <apiKey>` or gets 401. */
  apiKey?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class FakeOpenAI {
  readonly requests: RecordedOpenAIRequest[] = [];
  /** Replies for /v1/chat/completions, used in order; when empty, `defaultReply` answers. */
  readonly replies: CompletionScript[] = [];
  defaultReply: CompletionScript = { chunks: ['The lamps ', 'gutter.'] };
  /** Fail every embeddings request with this status and message. */
  embedFailure: { status: number; message: string } | undefined;
  /** When set, answers every embeddings request itself, given the texts asked for (a server that is not, quite, what it claims). */
  embedRespond: ((res: http.ServerResponse, texts: string[]) => void) | undefined;
  readonly chatModels: Map<string, number | null>;
  readonly embedModels: Map<string, number>;
  apiKey: string | undefined;

  private constructor(
    private readonly server: http.Server,
    /** The API root as a writer configures it, ending in /v1. */
    readonly baseUrl: string,
    options: FakeOpenAIOptions,
  ) {
    this.chatModels = new Map(Object.entries(options.chatModels ?? { 'qwen2.5-7b-instruct': 32768 }));
    this.embedModels = new Map(Object.entries(options.embedModels ?? { 'bge-small': 48 }));
    this.apiKey = options.apiKey;
  }

  static async start(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
    const { server, port } = await listenOnLoopback();
    const fake = new FakeOpenAI(server, `http://127.0.0.1:${port}/v1`, options);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void fake.handle(req, res));
    return fake;
  }

  queue(...scripts: CompletionScript[]): void {
    this.replies.push(...scripts);
  }

  requestsTo(path: string): RecordedOpenAIRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Stops listening: afterwards the URL refuses connections, which is how "server down" looks. */
  close(): Promise<void> {
    return closeLoopback(this.server);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let body: Record<string, unknown> = {};
    if (raw) {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch (error) {
        return this.fail(res, 400, String(error), 'invalid_request_error');
      }
    }
    const path = (req.url ?? '/').split('?')[0]!;
    this.requests.push({ method: req.method ?? 'GET', path, body, authorization: req.headers.authorization });
    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      // As some servers do, the rejected key is echoed back in full.
      const given = req.headers.authorization?.replace(/^Bearer /, '');
      return this.fail(res, 401, given ? `Incorrect API key provided: ${given}.` : "You didn't provide an API key.", 'invalid_request_error', 'invalid_api_key');
    }
    const model = typeof body.model === 'string' ? body.model : '';
    switch (path) {
      case '/v1/models':
        return this.json(res, 200, {
          object: 'list',
          data: [...this.chatModels].map(([id, length]) => ({ id, object: 'model', created: 0, owned_by: 'fake', ...(length === null ? {} : { max_model_len: length }) })).concat(
            [...this.embedModels.keys()].map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })),
          ),
        });
      case '/v1/embeddings':
        return this.handleEmbeddings(res, model, body);
      case '/v1/chat/completions':
        return this.handleCompletion(res, model, body);
      default:
        return this.fail(res, 404, `Not Found: ${path}`, 'not_found_error');
    }
  }

  private handleEmbeddings(res: http.ServerResponse, model: string, body: Record<string, unknown>): void {
    if (this.embedFailure) return this.fail(res, this.embedFailure.status, this.embedFailure.message, 'server_error');
    const dims = this.embedModels.get(model);
    if (dims === undefined) return this.fail(res, 404, `The model \`${model}\` does not exist.`, 'invalid_request_error', 'model_not_found');
    const input = body.input;
    const texts = typeof input === 'string' ? [input] : Array.isArray(input) ? input : null;
    if (!texts || texts.some((t) => typeof t !== 'string')) return this.fail(res, 400, "'input' must be a string or an array of strings", 'invalid_request_error');
    if (this.embedRespond) return this.embedRespond(res, texts as string[]);
    return this.json(res, 200, {
      object: 'list',
      model,
      data: (texts as string[]).map((t, index) => ({ object: 'embedding', index, embedding: bagOfWordsEmbedding(t, dims) })),
      usage: { prompt_tokens: texts.length, total_tokens: texts.length },
    });
  }

  private async handleCompletion(res: http.ServerResponse, model: string, body: Record<string, unknown>): Promise<void> {
    const script = this.replies.shift() ?? this.defaultReply;
    if (script.delayMs) await sleep(script.delayMs);
    if (res.destroyed) return;
    if (script.status) return this.fail(res, script.status, script.error ?? 'The server had an error while processing your request.', 'server_error');
    if (!this.chatModels.has(model)) return this.fail(res, 404, `The model \`${model}\` does not exist.`, 'invalid_request_error', 'model_not_found');
    const chunks = script.chunks ?? [];
    const usage = { prompt_tokens: script.promptTokens ?? 100, completion_tokens: script.completionTokens ?? chunks.length, total_tokens: (script.promptTokens ?? 100) + (script.completionTokens ?? chunks.length) };
    const frame = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 0, model, choices, ...extra })}\n\n`;
    if (body.stream !== true) {
      return this.json(res, 200, {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 0,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: chunks.join('') }, finish_reason: script.finishReason ?? 'stop' }],
        usage,
      });
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.write(frame([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
    for (let i = 0; i < chunks.length; i++) {
      if (script.errorAfterChunks?.after === i) {
        res.end(`data: ${JSON.stringify({ error: { message: script.errorAfterChunks.message, type: 'server_error', code: null } })}\n\n`);
        return;
      }
      if (res.destroyed) return;
      res.write(frame([{ index: 0, delta: { content: chunks[i] }, finish_reason: null }]));
      if (script.chunkDelayMs) await sleep(script.chunkDelayMs);
    }
    if (script.errorAfterChunks && script.errorAfterChunks.after >= chunks.length) {
      res.end(`data: ${JSON.stringify({ error: { message: script.errorAfterChunks.message, type: 'server_error', code: null } })}\n\n`);
      return;
    }
    if (script.cutAfterContent) {
      res.end();
      return;
    }
    res.write(frame([{ index: 0, delta: {}, finish_reason: script.finishReason ?? 'stop' }]));
    const options = body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage) res.write(frame([], { usage }));
    res.end(script.omitDone ? '' : 'data: [DONE]\n\n');
  }

  private json(res: http.ServerResponse, status: number, data: unknown): void {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(data));
  }

  private fail(res: http.ServerResponse, status: number, message: string, type: string, code: string | null = null): void {
    this.json(res, status, { error: { message, type, param: null, code } });
  }
}

import type http from 'node:http';
import { bagOfWordsEmbedding } from './fakeOllama';
import { FakeModelServer, sleep, type RecordedRequest } from './fakeModelServer';

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
  /**
   * Tool calls after the content. Streamed, each call's arguments arrive in pieces of `argumentPiece`
   * characters, every delta naming its call by `index`; the id and name come with the first piece only.
   */
  toolCalls?: { id?: string; name: string; arguments: string }[];
  argumentPiece?: number;
}

export interface RecordedOpenAIRequest extends RecordedRequest {
  authorization: string | undefined;
}

export interface FakeOpenAIOptions {
  /** Chat models the server serves, with the context length it reports (null: it does not say). */
  chatModels?: Record<string, number | null>;
  /** Embedding models and their dimensions. */
  embedModels?: Record<string, number>;
  /** When set, every request must carry `Authorization: Bearer <apiKey>` or gets 401. */
  apiKey?: string;
  /** When set, a request with `tools` gets 400 with this message, as llama.cpp without --jinja or vLLM without a tool parser answer. */
  refuseTools?: string;
  /** When set, a request with `tool_choice` gets 400 with this message, as a server that does not take it answers. */
  refuseToolChoice?: string;
}

/** Scripts in `replies` answer /v1/chat/completions. */
export class FakeOpenAI extends FakeModelServer<CompletionScript, RecordedOpenAIRequest> {
  defaultReply: CompletionScript = { chunks: ['The lamps ', 'gutter.'] };
  protected readonly jsonType = 'application/json';
  /** Fail every embeddings request with this status and message. */
  embedFailure: { status: number; message: string } | undefined;
  /** When set, answers every embeddings request itself, given the texts asked for (a server that is not, quite, what it claims). */
  embedRespond: ((res: http.ServerResponse, texts: string[]) => void) | undefined;
  readonly chatModels: Map<string, number | null>;
  readonly embedModels: Map<string, number>;
  apiKey: string | undefined;
  refuseTools: string | undefined;
  refuseToolChoice: string | undefined;

  private constructor(
    server: http.Server,
    /** The API root as a writer configures it, ending in /v1. */
    readonly baseUrl: string,
    options: FakeOpenAIOptions,
  ) {
    super(server);
    this.chatModels = new Map(Object.entries(options.chatModels ?? { 'qwen2.5-7b-instruct': 32768 }));
    this.embedModels = new Map(Object.entries(options.embedModels ?? { 'bge-small': 48 }));
    this.apiKey = options.apiKey;
    this.refuseTools = options.refuseTools;
    this.refuseToolChoice = options.refuseToolChoice;
  }

  static start(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
    return FakeModelServer.listen((server, origin) => new FakeOpenAI(server, `${origin}/v1`, options));
  }

  protected override record(req: http.IncomingMessage, path: string, body: Record<string, unknown>): RecordedOpenAIRequest {
    return { ...super.record(req, path, body), authorization: req.headers.authorization };
  }

  protected badRequest(res: http.ServerResponse, message: string): void {
    this.fail(res, 400, message, 'invalid_request_error');
  }

  protected route(req: http.IncomingMessage, res: http.ServerResponse, path: string, body: Record<string, unknown>): void | Promise<void> {
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
    // Refused before generation: the reply scripted for this turn answers the next request.
    if (this.refuseTools && Array.isArray(body.tools)) return this.fail(res, 400, this.refuseTools, 'invalid_request_error');
    if (this.refuseToolChoice && body.tool_choice !== undefined) return this.fail(res, 400, this.refuseToolChoice, 'invalid_request_error');
    const script = this.nextReply();
    if (script.delayMs) await sleep(script.delayMs);
    if (res.destroyed) return;
    if (script.status) return this.fail(res, script.status, script.error ?? 'The server had an error while processing your request.', 'server_error');
    if (!this.chatModels.has(model)) return this.fail(res, 404, `The model \`${model}\` does not exist.`, 'invalid_request_error', 'model_not_found');
    const chunks = script.chunks ?? [];
    const calls = (script.toolCalls ?? []).map((c, i) => ({ id: c.id ?? `call_${i}`, name: c.name, arguments: c.arguments }));
    const finish = script.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
    const usage = { prompt_tokens: script.promptTokens ?? 100, completion_tokens: script.completionTokens ?? chunks.length, total_tokens: (script.promptTokens ?? 100) + (script.completionTokens ?? chunks.length) };
    const frame = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 0, model, choices, ...extra })}\n\n`;
    if (body.stream !== true) {
      return this.json(res, 200, {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 0,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: chunks.length > 0 ? chunks.join('') : calls.length > 0 ? null : '',
              ...(calls.length > 0 ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
            },
            finish_reason: finish,
          },
        ],
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
    const piece = script.argumentPiece ?? 8;
    for (const [index, call] of calls.entries()) {
      for (let at = 0; at === 0 || at < call.arguments.length; at += piece) {
        if (res.destroyed) return;
        const fn = at === 0 ? { name: call.name, arguments: call.arguments.slice(0, piece) } : { arguments: call.arguments.slice(at, at + piece) };
        res.write(frame([{ index: 0, delta: { tool_calls: [{ index, ...(at === 0 ? { id: call.id, type: 'function' } : {}), function: fn }] }, finish_reason: null }]));
        if (script.chunkDelayMs) await sleep(script.chunkDelayMs);
      }
    }
    res.write(frame([{ index: 0, delta: {}, finish_reason: finish }]));
    const options = body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage) res.write(frame([], { usage }));
    res.end(script.omitDone ? '' : 'data: [DONE]\n\n');
  }

  private fail(res: http.ServerResponse, status: number, message: string, type: string, code: string | null = null): void {
    this.json(res, status, { error: { message, type, param: null, code } });
  }
}

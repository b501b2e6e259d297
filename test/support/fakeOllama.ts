import type http from 'node:http';
import { FakeModelServer, sleep } from './fakeModelServer';

/**
 * A loopback HTTP server that speaks Ollama's documented API (../shared/reference/ollama-api.md) closely
 * enough for the real `ollama` client: NDJSON streaming with a final `done` chunk carrying counts,
 * `{"error": …}` bodies with real status codes, 404 for an unknown model, an error line after streaming
 * began. Tests script what it says and read what it was asked.
 */

export interface ChatScript {
  /** Content pieces, streamed one NDJSON line each (or joined when the request is not streaming). */
  chunks?: string[];
  promptEvalCount?: number;
  evalCount?: number;
  /** Delay between streamed chunks. */
  chunkDelayMs?: number;
  /** Delay before the first byte (for timeouts). */
  delayMs?: number;
  /** After this many chunks, write `{"error": message}` with status 200, as Ollama does mid-stream. */
  errorAfterChunks?: { after: number; message: string };
  /** Before streaming chunk `after`, waits until `until` settles: a reply paused mid-stream for as long as a test needs. */
  holdAfterChunks?: { after: number; until: Promise<unknown> };
  /** Close the stream without the final done chunk. */
  endWithoutDone?: boolean;
  /** Fail before any byte with this status and `{"error": error}`. */
  status?: number;
  error?: string;
  /** Answers the request itself, as a server that is not (quite) Ollama would. */
  respond?: (res: http.ServerResponse) => void | Promise<void>;
  /** Tool calls in `message.tool_calls`, arguments as objects, on one line after the content, as Ollama sends them. */
  toolCalls?: { name: string; arguments: unknown }[];
}

export interface EmbedBehaviour {
  /** Fail every embed request with this status and error text. */
  fail?: { status: number; error: string };
  /** Return vectors of this many dimensions instead of the model's own. */
  dimensionsOverride?: number;
  delayMs?: number;
  /** Another model under the same name: other vectors of the same size. */
  variant?: number;
  /** Answers every embed request itself, given the texts asked for, as a server that is not (quite) Ollama would. */
  respond?: (res: http.ServerResponse, texts: string[]) => void;
}

export interface FakeOllamaOptions {
  /** Chat/generate models the server "has pulled". */
  chatModels?: string[];
  /** Embedding models and their dimensions. */
  embedModels?: Record<string, number>;
  contextLength?: number;
  /** What `/api/show` lists as the models' capabilities; absent: it lists none (an older server). A request with tools to a model without "tools" gets Ollama's 400. */
  capabilities?: string[];
  /** Models `/api/pull` can fetch: chat models (no dimensions) or embedding models with their dimensions. */
  pullable?: Record<string, { dimensions?: number }>;
}

export interface PullBehaviour {
  /** Layers the model is made of, each downloaded with its own digest and total (1 by default). */
  layers?: number;
  /** Progress lines per layer download, and the delay between them (for cancel). */
  steps?: number;
  stepDelayMs?: number;
}

const STOP_WORDS = new Set(
  'a an and are as at be by for from has have he her his i in is it its of on or she that the their them they this to was were will with you your'.split(
    ' ',
  ),
);

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * A deterministic embedding with meaning: texts that share content words point the same way. A constant
 * component gives unrelated texts a positive baseline similarity, as real embedding models do, so a
 * fixed floor of 0 would be wrong and calibration has something to measure. Another `variant` stands for
 * another model: its words land on other dimensions.
 */
export function bagOfWordsEmbedding(text: string, dimensions: number, variant = 0): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  const words = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 2 && !STOP_WORDS.has(w))
    .map((w) => w.replace(/(ing|ed|es|s)$/, ''));
  for (const word of words) {
    const h = fnv1a(variant ? `${variant}:${word}` : word);
    vector[1 + (h % (dimensions - 1))]! += (h & 0x100) === 0 ? 1 : -1;
  }
  const norm = Math.hypot(...vector) || 1;
  const baseline = 0.75;
  vector[0] = baseline;
  const scaled = vector.map((v, i) => (i === 0 ? v : v / norm));
  const total = Math.hypot(...scaled);
  return scaled.map((v) => v / total);
}

/** Scripts in `replies` answer /api/chat and /api/generate. */
export class FakeOllama extends FakeModelServer<ChatScript> {
  defaultReply: ChatScript = { chunks: ['The fog ', 'thickens.'] };
  protected readonly jsonType = 'application/json; charset=utf-8';
  embed: EmbedBehaviour = {};
  pull: PullBehaviour = {};
  /** When set, /api/show is answered by this instead (a server that hangs, or is not Ollama). */
  showResponse?: (res: http.ServerResponse) => void | Promise<void>;
  readonly chatModels: Set<string>;
  readonly embedModels: Map<string, number>;
  readonly pullable: Map<string, { dimensions?: number }>;
  capabilities: string[] | undefined;

  private constructor(
    server: http.Server,
    readonly url: string,
    options: FakeOllamaOptions,
    private readonly contextLength: number,
  ) {
    super(server);
    this.chatModels = new Set(options.chatModels ?? ['llama3.2']);
    this.embedModels = new Map(Object.entries(options.embedModels ?? { 'nomic-embed-text': 64 }));
    this.pullable = new Map(Object.entries(options.pullable ?? {}));
    this.capabilities = options.capabilities;
  }

  static start(options: FakeOllamaOptions = {}): Promise<FakeOllama> {
    return FakeModelServer.listen((server, origin) => new FakeOllama(server, origin, options, options.contextLength ?? 8192));
  }

  /** The messages the nth /api/chat request carried, as the server received them. */
  chatMessages(request: number): { role: string; content: string }[] {
    return (this.requestsTo('/api/chat')[request]!.body as { messages: { role: string; content: string }[] }).messages;
  }

  /** What the model heard back from its tool calls: the tool messages of the nth /api/chat request. */
  toolAnswers(request: number): string[] {
    return this.chatMessages(request)
      .filter((m) => m.role === 'tool')
      .map((m) => m.content);
  }

  protected badRequest(res: http.ServerResponse, message: string): void {
    this.fail(res, 400, message);
  }

  protected route(_req: http.IncomingMessage, res: http.ServerResponse, path: string, body: Record<string, unknown>): void | Promise<void> {
    const model = typeof body.model === 'string' ? body.model : '';
    switch (path) {
      case '/api/version':
        return this.json(res, 200, { version: '0.12.0' });
      case '/api/tags':
        return this.json(res, 200, {
          models: [...this.chatModels, ...this.embedModels.keys()].map((name) => ({ name, model: name, size: 1, digest: 'fake' })),
        });
      case '/api/show':
        if (this.showResponse) return this.showResponse(res);
        if (!this.chatModels.has(model) && !this.embedModels.has(model)) return this.fail(res, 404, `model '${model}' not found`);
        return this.json(res, 200, {
          details: { family: 'fake' },
          model_info: { 'general.architecture': 'fake', 'fake.context_length': this.contextLength },
          ...(this.capabilities ? { capabilities: this.capabilities } : {}),
        });
      case '/api/embed':
        return this.handleEmbed(res, model, body);
      case '/api/chat':
      case '/api/generate':
        return this.handleGeneration(res, path, model, body);
      case '/api/pull':
        // The server takes `model`, and `name` as older clients (ollama-js included) still send it.
        return this.handlePull(res, model || (typeof body.name === 'string' ? body.name : ''));
      default:
        return this.fail(res, 404, '404 page not found');
    }
  }

  private async handleEmbed(res: http.ServerResponse, model: string, body: Record<string, unknown>): Promise<void> {
    if (this.embed.delayMs) await sleep(this.embed.delayMs);
    if (this.embed.fail) return this.fail(res, this.embed.fail.status, this.embed.fail.error);
    const dims = this.embedModels.get(model);
    if (dims === undefined) return this.fail(res, 404, `model '${model}' not found`);
    const input = body.input;
    const texts = typeof input === 'string' ? [input] : Array.isArray(input) ? input : null;
    if (!texts || texts.some((t) => typeof t !== 'string')) return this.fail(res, 400, 'invalid input type');
    if (this.embed.respond) return this.embed.respond(res, texts as string[]);
    const size = this.embed.dimensionsOverride ?? dims;
    return this.json(res, 200, { model, embeddings: (texts as string[]).map((t) => bagOfWordsEmbedding(t, size, this.embed.variant)), prompt_eval_count: texts.length });
  }

  private async handleGeneration(res: http.ServerResponse, path: string, model: string, body: Record<string, unknown>): Promise<void> {
    // Refused before generation: the reply scripted for this turn answers the next request.
    if (Array.isArray(body.tools) && body.tools.length > 0 && this.capabilities && !this.capabilities.includes('tools')) {
      return this.fail(res, 400, `registry.ollama.ai/library/${model}:latest does not support tools`);
    }
    const script = this.nextReply();
    if (script.delayMs) await sleep(script.delayMs);
    if (res.destroyed) return;
    if (script.status) return this.fail(res, script.status, script.error ?? 'the model failed to generate a response');
    if (script.respond) return script.respond(res);
    if (!this.chatModels.has(model)) return this.fail(res, 404, `model '${model}' not found`);
    const chunks = script.chunks ?? [];
    const calls = script.toolCalls?.length ? { message: { role: 'assistant', content: '', tool_calls: script.toolCalls.map((c) => ({ function: { name: c.name, arguments: c.arguments } })) } } : null;
    const field = (content: string) =>
      path === '/api/chat' ? { message: { role: 'assistant', content } } : { response: content };
    const done = {
      model,
      created_at: new Date().toISOString(),
      ...field(''),
      done: true,
      done_reason: 'stop',
      prompt_eval_count: script.promptEvalCount ?? 100,
      eval_count: script.evalCount ?? chunks.length,
      total_duration: 1,
    };
    if (body.stream === false) {
      return this.json(res, 200, { ...done, ...field(chunks.join('')), ...(calls ? { message: { ...calls.message, content: chunks.join('') } } : {}) });
    }
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
    for (let i = 0; i < chunks.length; i++) {
      if (script.errorAfterChunks && i === script.errorAfterChunks.after) {
        res.end(`${JSON.stringify({ error: script.errorAfterChunks.message })}\n`);
        return;
      }
      if (script.holdAfterChunks?.after === i) await script.holdAfterChunks.until;
      if (res.destroyed) return;
      res.write(`${JSON.stringify({ model, created_at: new Date().toISOString(), ...field(chunks[i]!), done: false })}\n`);
      if (script.chunkDelayMs) await sleep(script.chunkDelayMs);
    }
    if (script.errorAfterChunks && script.errorAfterChunks.after >= chunks.length) {
      res.end(`${JSON.stringify({ error: script.errorAfterChunks.message })}\n`);
      return;
    }
    if (calls) res.write(`${JSON.stringify({ model, created_at: new Date().toISOString(), ...calls, done: false })}\n`);
    res.end(script.endWithoutDone ? '' : `${JSON.stringify(done)}\n`);
  }

  /**
   * Streams pull progress as Ollama does (manifest, one layer with total/completed, verify, write, success)
   * and then has the model. An unknown name fails after the stream began, as the real registry lookup does.
   */
  private async handlePull(res: http.ServerResponse, model: string): Promise<void> {
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
    const line = (data: unknown) => res.write(`${JSON.stringify(data)}\n`);
    line({ status: 'pulling manifest' });
    const target = this.pullable.get(model);
    if (!target) {
      res.end(`${JSON.stringify({ error: 'pull model manifest: file does not exist' })}\n`);
      return;
    }
    const steps = this.pull.steps ?? 4;
    const total = 1000 * steps;
    for (let layer = 0; layer < (this.pull.layers ?? 1); layer++) {
      const digest = (0x6a0746a1ec1a + layer).toString(16);
      for (let step = 0; step <= steps; step++) {
        if (res.destroyed) return;
        line({ status: `pulling ${digest}`, digest: `sha256:${digest}`, total, completed: step * 1000 });
        if (this.pull.stepDelayMs) await sleep(this.pull.stepDelayMs);
      }
    }
    if (res.destroyed) return;
    line({ status: 'verifying sha256 digest' });
    line({ status: 'writing manifest' });
    if (target.dimensions === undefined) this.chatModels.add(model);
    else this.embedModels.set(model, target.dimensions);
    res.end(`${JSON.stringify({ status: 'success' })}\n`);
  }

  private fail(res: http.ServerResponse, status: number, error: string): void {
    this.json(res, status, { error });
  }
}

/** A loopback URL nothing listens on. */
export async function unusedLoopbackUrl(): Promise<string> {
  const fake = await FakeOllama.start();
  const { url } = fake;
  await fake.close();
  return url;
}

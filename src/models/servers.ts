import { Ollama } from 'ollama';
import { describeBackend, type ModelBackend } from './backend';
import { causeOf, RedirectRefusedError, sameOriginFetch } from './origin';
import { classifyOpenAIError, describeServerFailure, openAIClient, type ServerFailureKind } from './openaiClient';

/** A model a server offers, with its context length when the server says it. */
export interface ServerModel {
  id: string;
  contextLength: number | null;
}

/** A server that could not list its models, with a sentence saying why. */
export class ModelServerError extends Error {
  constructor(
    readonly kind: ServerFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'ModelServerError';
  }
}

const LIST_TIMEOUT_MS = 5000;

/** An Ollama client whose every call gives up after `timeoutMs` (the client cannot abort a plain call itself). */
export function ollamaClient(host: string, timeoutMs: number, signal?: AbortSignal): Ollama {
  return new Ollama({
    host,
    fetch: sameOriginFetch((input, init) => {
      const signals = [AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : []), ...(init?.signal ? [init.signal] : [])];
      return fetch(input, { ...init, signal: AbortSignal.any(signals) });
    }),
  });
}

function ollamaFailure(host: string, error: unknown): ModelServerError {
  const redirect = causeOf(error, RedirectRefusedError);
  if (redirect) return new ModelServerError('refused', `Ollama at ${host} ${redirect.message}`);
  const e = error as { name?: string; message?: string; status_code?: number };
  if (e.name === 'TimeoutError') return new ModelServerError('timeout', `Ollama at ${host} did not answer in time`);
  if (e.name === 'AbortError') return new ModelServerError('cancelled', 'cancelled');
  if (e.name === 'ResponseError') return new ModelServerError(e.status_code === 404 ? 'not-found' : 'refused', `Ollama at ${host} refused (${e.status_code}): ${e.message}`);
  return new ModelServerError('unreachable', `cannot reach Ollama at ${host}; start it with \`ollama serve\`, or set the host in settings or OLLAMA_HOST`);
}

/** The context length Ollama reports for a model (`/api/show`), or null when it does not say. */
export async function ollamaContextLength(host: string, model: string, timeoutMs = LIST_TIMEOUT_MS): Promise<number | null> {
  const info = await ollamaClient(host, timeoutMs).show({ model });
  const entry = Object.entries(info.model_info ?? {}).find(([key]) => key.endsWith('.context_length'));
  return typeof entry?.[1] === 'number' ? entry[1] : null;
}

/** Reads the context length fields servers add to `/v1/models` entries: vLLM's, OpenRouter's, llama.cpp's. */
function reportedContextLength(entry: Record<string, unknown>): number | null {
  const meta = entry.meta as Record<string, unknown> | undefined;
  for (const value of [entry.max_model_len, entry.context_length, meta?.n_ctx_train]) {
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  }
  return null;
}

/** Every model the server offers (`/api/tags` + `/api/show`, or `/v1/models`), sorted by name. */
export async function listModels(backend: ModelBackend, timeoutMs = LIST_TIMEOUT_MS): Promise<ServerModel[]> {
  if (backend.provider === 'ollama') {
    let names: string[];
    try {
      names = (await ollamaClient(backend.baseUrl, timeoutMs).list()).models.map((m) => m.name);
    } catch (error) {
      throw ollamaFailure(backend.baseUrl, error);
    }
    const models = await Promise.all(names.map(async (id) => ({ id, contextLength: await ollamaContextLength(backend.baseUrl, id, timeoutMs).catch(() => null) })));
    return models.sort((a, b) => a.id.localeCompare(b.id));
  }
  try {
    const models: ServerModel[] = [];
    const client = await openAIClient(backend, timeoutMs);
    for await (const entry of client.models.list()) {
      models.push({ id: entry.id, contextLength: reportedContextLength(entry as unknown as Record<string, unknown>) });
    }
    return models.sort((a, b) => a.id.localeCompare(b.id));
  } catch (error) {
    const failure = classifyOpenAIError(error, backend);
    throw new ModelServerError(failure.kind, describeServerFailure(backend, failure));
  }
}

/** What the preflight found: ready, or the one problem a writer should fix first, with its fix. */
export type ServerCheck =
  | { kind: 'ready'; models: ServerModel[]; contextLength: number | null }
  | { kind: 'no-server'; failure: ServerFailureKind; message: string }
  | { kind: 'model-missing'; models: ServerModel[]; message: string };

/**
 * The check before the first turn: does the server answer, and does it have the narrator model? Cheap
 * enough to run at start-up and whenever settings change.
 */
export async function checkServer(backend: ModelBackend, model: string, timeoutMs = LIST_TIMEOUT_MS): Promise<ServerCheck> {
  let models: ServerModel[];
  try {
    models = await listModels(backend, timeoutMs);
  } catch (error) {
    if (!(error instanceof ModelServerError)) throw error;
    return { kind: 'no-server', failure: error.kind, message: error.message };
  }
  const found = models.find((m) => m.id === model || (backend.provider === 'ollama' && m.id === `${model}:latest`));
  if (!found) {
    const offered = models.length === 0 ? 'it has no models yet' : `it has ${models.map((m) => m.id).slice(0, 8).join(', ')}${models.length > 8 ? ', …' : ''}`;
    return { kind: 'model-missing', models, message: `${describeBackend(backend)} does not have the model '${model}'; ${offered}` };
  }
  return { kind: 'ready', models, contextLength: found.contextLength };
}

export interface PullProgress {
  status: string;
  /** 0–1 across the layers seen so far, on lines about a download; null on the others (manifest, verify, write). */
  fraction: number | null;
}

/**
 * Pulls a model onto an Ollama server (`/api/pull`, streamed), reporting each progress line. Resolves
 * when the server says success; a cancel stops the download on the server's side too.
 */
export async function pullOllamaModel(host: string, model: string, onProgress: (progress: PullProgress) => void, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw new ModelServerError('cancelled', `pulling '${model}' was cancelled`);
  // Downloads take long; only connecting is bounded (a stalled connection is for the writer to cancel).
  const client = new Ollama({ host, fetch: sameOriginFetch() });
  let stream;
  try {
    stream = await client.pull({ model, stream: true });
  } catch (error) {
    throw ollamaFailure(host, error);
  }
  const onAbort = () => stream.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  // A model is several layers, each reported with its own total: the fraction is of every layer seen so far.
  const layers = new Map<string, { completed: number; total: number }>();
  try {
    for await (const part of stream) {
      if (part.digest && part.total > 0) layers.set(part.digest, { completed: Math.min(part.completed ?? 0, part.total), total: part.total });
      const sums = [...layers.values()].reduce((sum, layer) => ({ completed: sum.completed + layer.completed, total: sum.total + layer.total }), { completed: 0, total: 0 });
      onProgress({ status: part.status, fraction: part.digest && sums.total > 0 ? sums.completed / sums.total : null });
      if (part.status === 'success') return;
    }
  } catch (error) {
    if (signal?.aborted) throw new ModelServerError('cancelled', `pulling '${model}' was cancelled`);
    throw new ModelServerError('refused', `Ollama at ${host} could not pull '${model}': ${(error as Error).message}`);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (signal?.aborted) throw new ModelServerError('cancelled', `pulling '${model}' was cancelled`);
}

import type OpenAI from 'openai';
import { cappedFetch, MAX_REPLY_BYTES } from './replyLimits';
import { describeBackend, type ModelBackend } from './backend';
import { causeOf, RedirectRefusedError } from './origin';

/**
 * The official client pointed at one server. Retries are off (a retried generation would be paid and
 * streamed twice; a failure is shown at once instead), and nothing is taken from the OPENAI_* environment:
 * a key meant for api.openai.com must never be sent to another server. With no key the Authorization
 * header is left out altogether, as local servers expect. Every reply is capped at `maxReplyBytes`, as
 * Ollama's are.
 */
export async function openAIClient(backend: ModelBackend, timeoutMs: number, maxReplyBytes = MAX_REPLY_BYTES): Promise<OpenAI> {
  const { default: Client } = await openAILibrary();
  return new Client({
    fetch: cappedFetch(maxReplyBytes),
    baseURL: backend.baseUrl,
    // The client insists on some credential; the header it would make is removed below when there is none.
    apiKey: backend.apiKey || 'no-key',
    adminAPIKey: null,
    organization: null,
    project: null,
    maxRetries: 0,
    // The library writes its own lines to the console on a malformed event; the error we raise is the only word.
    logLevel: 'off',
    timeout: timeoutMs,
    ...(backend.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
  });
}

/** The client library, loaded on first use: indexing, search and most CLI commands never talk to a server (it costs ~100 ms to load). */
let library: typeof import('openai') | undefined;

async function openAILibrary(): Promise<typeof import('openai')> {
  library ??= await import('openai');
  return library;
}

export type ServerFailureKind =
  | 'unreachable' // nothing answers at the URL
  | 'unauthorized' // 401/403: the key is missing or wrong
  | 'not-found' // 404: the model (or the API path) is not there
  | 'rate-limited' // 429
  | 'refused' // any other HTTP error
  | 'timeout'
  | 'cancelled'
  | 'mid-stream'; // an error event or a broken connection after the reply began

/** A failure of an OpenAI-compatible server, sorted by what the writer can do about it. */
export interface ServerFailure {
  kind: ServerFailureKind;
  status: number | null;
  /** The server's own words (its error message), or the transport's. */
  detail: string;
}

/**
 * Sorts a client error by what the writer can do about it. The server's words are kept, with the key the
 * request carried cut out: a server that echoes a rejected key must not put it in a message or a log.
 */
export function classifyOpenAIError(error: unknown, backend: ModelBackend): ServerFailure {
  const failure = classify(error);
  return backend.apiKey ? { ...failure, detail: failure.detail.split(backend.apiKey).join('***') } : failure;
}

function classify(error: unknown): ServerFailure {
  const redirect = causeOf(error, RedirectRefusedError);
  if (redirect) return { kind: 'refused', status: redirect.status, detail: redirect.message };
  // The client's own error kinds exist only once a client was made, so before that no error is one of them.
  if (!library) return { kind: 'mid-stream', status: null, detail: error instanceof Error ? error.message : String(error) };
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = library;
  if (error instanceof APIUserAbortError) return { kind: 'cancelled', status: null, detail: 'cancelled' };
  if (error instanceof APIConnectionTimeoutError) return { kind: 'timeout', status: null, detail: error.message };
  if (error instanceof APIConnectionError) {
    const cause = error.cause as (Error & { code?: string; cause?: { code?: string } }) | undefined;
    const code = cause?.code ?? cause?.cause?.code;
    return { kind: 'unreachable', status: null, detail: code ?? cause?.message ?? error.message };
  }
  if (error instanceof APIError) {
    const body = error.error as { message?: unknown } | undefined;
    const detail = typeof body?.message === 'string' ? body.message : error.message;
    if (error.status === undefined) return { kind: 'mid-stream', status: null, detail };
    const kind: ServerFailureKind = error.status === 401 || error.status === 403 ? 'unauthorized' : error.status === 404 ? 'not-found' : error.status === 429 ? 'rate-limited' : 'refused';
    return { kind, status: error.status, detail };
  }
  return { kind: 'mid-stream', status: null, detail: error instanceof Error ? error.message : String(error) };
}

/** One sentence a writer can act on, for any failure not about a particular model. */
export function describeServerFailure(backend: ModelBackend, failure: ServerFailure): string {
  const server = describeBackend(backend);
  switch (failure.kind) {
    case 'unreachable':
      return `cannot reach ${server} (${failure.detail}); is it running, and is the base URL right?`;
    case 'unauthorized':
      return backend.apiKey
        ? `${server} refused the API key (${failure.status}: ${failure.detail}); set the right one with "Set API Key"`
        : `${server} wants an API key (${failure.status}: ${failure.detail}); set one with "Set API Key" (CLI: the STORYTELLER_API_KEY variable)`;
    case 'not-found':
      return `${server} answered 404 (${failure.detail}); an OpenAI-compatible base URL usually ends in /v1`;
    case 'rate-limited':
      return `${server} is rate-limiting requests (429: ${failure.detail}); wait a moment and try again`;
    case 'timeout':
      return `${server} did not answer in time`;
    case 'cancelled':
      return 'cancelled';
    default:
      return `${server} failed (${failure.status ?? 'no status'}): ${failure.detail}`;
  }
}

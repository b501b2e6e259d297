import { resolveOllamaHost } from './ollamaHost';

export const MODEL_PROVIDERS = ['ollama', 'openai-compatible'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

/** The environment variable the CLI reads the OpenAI-compatible API key from (the extension keeps it in SecretStorage). */
export const API_KEY_ENV = 'STORYTELLER_API_KEY';

/**
 * A model server and how to reach it. The API key travels with it to the client and nowhere else: it is
 * never part of a message, a log line, a setting or an export.
 */
export interface ModelBackend {
  provider: ModelProvider;
  /** Ollama: the host (`http://127.0.0.1:11434`). OpenAI-compatible: the API root, usually ending in `/v1`. */
  baseUrl: string;
  apiKey?: string | undefined;
}

/** How a writer would name the server: "Ollama at http://…" or "the OpenAI-compatible server at http://…/v1". */
export function describeBackend(backend: Pick<ModelBackend, 'provider' | 'baseUrl'>): string {
  return backend.provider === 'ollama' ? `Ollama at ${backend.baseUrl}` : `the OpenAI-compatible server at ${backend.baseUrl}`;
}

export class BackendConfigError extends Error {}

/**
 * A server URL that carries a user name or password (`http://alice:secret@host/v1`) is refused, and named
 * without them: a URL is printed, logged and stored in settings and turn errors, so a secret in it would
 * leak everywhere. A key goes through "Set API Key" (CLI: STORYTELLER_API_KEY) instead.
 */
export function refuseCredentials(url: string | undefined): void {
  // Read from the text itself: a scheme-less Ollama host (`alice:secret@gpu-box:11434`) is no URL to parse.
  const userInfo = /^([a-z][a-z0-9+.-]*:\/\/)?[^/?#@]*@/i.exec(url?.trim() ?? '');
  if (!userInfo) return;
  const shown = `${userInfo[1] ?? ''}${url!.trim().slice(userInfo[0].length)}`;
  throw new BackendConfigError(
    `the server URL ${shown} was given with a user name or password in it (user:password@host); it is not used, so they are never sent, shown or stored. Write it without them, and set an API key with "Set API Key" (CLI: the ${API_KEY_ENV} variable)`,
  );
}

/**
 * A backend from what a writer gave (settings or CLI flags): Ollama's host resolves like the Ollama CLI;
 * an OpenAI-compatible server has no default and must be named, since guessing would send prompts
 * (and a key) to a server the writer never chose.
 */
export function resolveBackend(provider: string | undefined, baseUrl: string | undefined, apiKey?: string, env: NodeJS.ProcessEnv = process.env): ModelBackend {
  const chosen = provider?.trim() || 'ollama';
  if (chosen === 'ollama') {
    refuseCredentials(baseUrl?.trim() || env.OLLAMA_HOST);
    return { provider: 'ollama', baseUrl: resolveOllamaHost(baseUrl, env) };
  }
  if (chosen !== 'openai-compatible') throw new BackendConfigError(`unknown provider '${chosen}': use ${MODEL_PROVIDERS.join(' or ')}`);
  refuseCredentials(baseUrl);
  const url = baseUrl?.trim().replace(/\/+$/, '') ?? '';
  if (!url) throw new BackendConfigError('the openai-compatible provider needs a base URL, e.g. http://127.0.0.1:8080/v1 (llama.cpp) or http://gpu-box:8000/v1 (vLLM)');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new BackendConfigError(`base URL '${url}' is not a URL; write it as http://host:port/v1`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new BackendConfigError(`base URL '${url}' must start with http:// or https://`);
  return { provider: 'openai-compatible', baseUrl: url, ...(apiKey ? { apiKey } : {}) };
}

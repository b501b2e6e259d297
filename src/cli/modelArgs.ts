import { API_KEY_ENV, BackendConfigError, resolveBackend, type ModelBackend } from '../models';
import { UsageError, stringOption, type CliIo, type ParsedArgs } from './command';

/** Options of every command that talks to a model server. */
export const MODEL_SERVER_OPTIONS = {
  provider: { type: 'string' },
  'base-url': { type: 'string' },
  'ollama-host': { type: 'string' },
} as const;

export const MODEL_SERVER_USAGE = '[--provider ollama|openai-compatible] [--base-url URL]';

/**
 * The server named by --provider and --base-url (`--ollama-host` and play's `--host` still name an Ollama
 * host). An OpenAI-compatible server's key comes from STORYTELLER_API_KEY, never from a flag, so it stays
 * out of shell history and process lists.
 */
export function backendFromArgs(args: ParsedArgs, io: CliIo): ModelBackend {
  const provider = stringOption(args, 'provider');
  const baseUrl = stringOption(args, 'base-url') ?? stringOption(args, 'ollama-host') ?? stringOption(args, 'host');
  const env = io.env ?? process.env;
  try {
    return resolveBackend(provider, baseUrl, env[API_KEY_ENV]?.trim() || undefined, env);
  } catch (error) {
    if (error instanceof BackendConfigError) throw new UsageError(`${error.message} (--provider, --base-url)`);
    throw error;
  }
}

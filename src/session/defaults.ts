import { DEFAULT_SIZE_CAP_BYTES } from '../knowledge/campaign';
import { BackendConfigError, refuseCredentials, resolveBackend, resolveOllamaHost, type ModelBackend, type ModelProvider } from '../models';
import { DEFAULT_KNOWLEDGE_BUDGETS, type KnowledgeBudgets } from '../knowledge/retrieval';
import { DEFAULT_SETTINGS, type ResearchMode } from '../story/engine';

/**
 * What a campaign session needs beyond its campaign.yaml. The CLI builds it from these defaults and its
 * flags, the extension from the `storyteller.*` settings, whose contributed defaults in package.json must
 * equal these (a unit test holds them together).
 */
export interface StorytellerSettings {
  /** Resolved like the Ollama CLI: the setting, else OLLAMA_HOST, else the local server. */
  ollamaHost: string;
  /** The narrator's server (with its API key, if any), or null when the settings cannot name one (see `backendProblem`). */
  narratorBackend: ModelBackend | null;
  /** The embedding model's server: the narrator's unless the embedding provider names another. */
  embeddingBackend: ModelBackend | null;
  /** Why a server could not be named, e.g. an OpenAI-compatible provider with no base URL. */
  backendProblem: string | null;
  narratorModel: string;
  /** Empty: no embeddings; search and context are lexical only. */
  embeddingModel: string;
  contextLength: number;
  budgets: Omit<KnowledgeBudgets, 'total'>;
  /** Larger files are not indexed; a campaign.yaml `size_cap_bytes` wins. */
  sizeCapBytes: number;
  /** Turns between memory summaries. */
  memoryCadence: number;
  /** Most tokens one narrator reply may have: story's reply reserve, sent to the server and held by the client. */
  maxReplyTokens: number;
  /** Research before narration: auto (when the model can use tools), on, or off. */
  research: ResearchMode;
  /** The researching model's context window in tokens, for servers that do not report it (0: what the server reports, capped by contextLength). */
  researchContextWindow: number;
}

export type EmbeddingProvider = 'narrator' | ModelProvider;

/** The defaults as written, before the Ollama host is resolved and the servers named. */
export const DEFAULTS = Object.freeze({
  provider: 'ollama' as ModelProvider,
  ollamaHost: '',
  openaiCompatibleBaseUrl: '',
  embeddingProvider: 'narrator' as EmbeddingProvider,
  narratorModel: 'llama3.1:8b',
  embeddingModel: '',
  contextLength: DEFAULT_SETTINGS.contextLength,
  budgets: Object.freeze({
    alwaysInclude: DEFAULT_KNOWLEDGE_BUDGETS.alwaysInclude,
    canon: DEFAULT_KNOWLEDGE_BUDGETS.canon,
    reference: DEFAULT_KNOWLEDGE_BUDGETS.reference,
    inspiration: DEFAULT_KNOWLEDGE_BUDGETS.inspiration,
  }),
  sizeCapBytes: DEFAULT_SIZE_CAP_BYTES,
  memoryCadence: DEFAULT_SETTINGS.memoryEvery,
  maxReplyTokens: DEFAULT_SETTINGS.replyReserve,
  research: 'auto' as ResearchMode,
  researchContextWindow: 0,
});

export interface ServerChoice {
  provider: ModelProvider;
  /** Resolved already. */
  ollamaHost: string;
  openaiCompatibleBaseUrl: string;
  embeddingProvider: EmbeddingProvider;
  /** API keys by base URL (the extension's SecretStorage; the CLI's STORYTELLER_API_KEY). */
  apiKeys: ReadonlyMap<string, string>;
}

/** The narrator's and the embedder's servers from what the writer chose; a server that cannot be named is a problem, not a throw. */
export function resolveServers(choice: ServerChoice): Pick<StorytellerSettings, 'narratorBackend' | 'embeddingBackend' | 'backendProblem'> {
  let backendProblem: string | null = null;
  const backend = (provider: ModelProvider): ModelBackend | null => {
    try {
      if (provider === 'ollama') {
        refuseCredentials(choice.ollamaHost);
        return { provider, baseUrl: choice.ollamaHost };
      }
      const resolved = resolveBackend(provider, choice.openaiCompatibleBaseUrl);
      return { ...resolved, apiKey: choice.apiKeys.get(resolved.baseUrl) };
    } catch (error) {
      if (!(error instanceof BackendConfigError)) throw error;
      backendProblem = error.message;
      return null;
    }
  };
  const narratorBackend = backend(choice.provider);
  const embeddingBackend = backend(choice.embeddingProvider === 'narrator' ? choice.provider : choice.embeddingProvider);
  return { narratorBackend, embeddingBackend, backendProblem };
}

/**
 * The defaults with `overrides` applied, the Ollama host resolved (an empty host means OLLAMA_HOST, else
 * local) and the servers named: Ollama's unless the overrides name another.
 */
export function defaultSettings(overrides: Partial<StorytellerSettings> = {}, env: NodeJS.ProcessEnv = process.env): StorytellerSettings {
  const { provider, openaiCompatibleBaseUrl, embeddingProvider, ...values } = DEFAULTS;
  const merged = { ...values, budgets: { ...values.budgets }, ...overrides };
  const ollamaHost = resolveOllamaHost(merged.ollamaHost, env);
  const servers = resolveServers({ provider, ollamaHost, openaiCompatibleBaseUrl, embeddingProvider, apiKeys: new Map() });
  return { ...servers, ...merged, ollamaHost };
}

import { DEFAULT_SIZE_CAP_BYTES } from '../knowledge/campaign';
import { resolveOllamaHost } from '../knowledge/models';
import { DEFAULT_KNOWLEDGE_BUDGETS, type KnowledgeBudgets } from '../knowledge/retrieval';

/**
 * What a campaign session needs beyond its campaign.yaml. The CLI builds it from these defaults and its
 * flags, the extension from the `storyteller.*` settings, whose contributed defaults in package.json must
 * equal these (a unit test holds them together).
 */
export interface StorytellerSettings {
  /** Resolved like the Ollama CLI: the setting, else OLLAMA_HOST, else the local server. */
  ollamaHost: string;
  narratorModel: string;
  /** Empty: no embeddings; search and context are lexical only. */
  embeddingModel: string;
  contextLength: number;
  budgets: Omit<KnowledgeBudgets, 'total'>;
  /** Larger files are not indexed; a campaign.yaml `size_cap_bytes` wins. */
  sizeCapBytes: number;
  /** Turns between memory summaries. */
  memoryCadence: number;
}

/** The defaults as written, before the Ollama host is resolved. */
export const DEFAULTS = Object.freeze({
  ollamaHost: '',
  narratorModel: 'llama3.1:8b',
  embeddingModel: '',
  contextLength: 8192,
  budgets: Object.freeze({
    alwaysInclude: DEFAULT_KNOWLEDGE_BUDGETS.alwaysInclude,
    canon: DEFAULT_KNOWLEDGE_BUDGETS.canon,
    reference: DEFAULT_KNOWLEDGE_BUDGETS.reference,
    inspiration: DEFAULT_KNOWLEDGE_BUDGETS.inspiration,
  }),
  sizeCapBytes: DEFAULT_SIZE_CAP_BYTES,
  memoryCadence: 8,
});

/** The defaults with `overrides` applied and the Ollama host resolved (an empty host means OLLAMA_HOST, else local). */
export function defaultSettings(overrides: Partial<StorytellerSettings> = {}, env: NodeJS.ProcessEnv = process.env): StorytellerSettings {
  const merged = { ...DEFAULTS, budgets: { ...DEFAULTS.budgets }, ...overrides };
  return { ...merged, ollamaHost: resolveOllamaHost(merged.ollamaHost, env) };
}

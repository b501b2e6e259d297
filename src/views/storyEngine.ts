import { StoreCanonFacts } from '../knowledge/conflicts';
import { DEFAULT_EMBED_TIMEOUT_MS, OllamaEmbedder, type Embedder } from '../knowledge/retrieval';
import type { KnowledgeStore } from '../knowledge/indexing';
import { StoryEngine, type EngineSettings } from '../story/engine';
import { indexKnowledge } from '../story/indexKnowledge';
import { OllamaNarrator, type GenerateRequest, type Narrator } from '../story/narrator';
import type { PlayStore } from '../story/playStore';
import { noKnowledge, type KnowledgePort } from '../story/ports';
import type { CampaignIndex } from './campaignIndex';
import type { Settings, StorytellerSettings } from './settings';

/** The embedder the settings name, or undefined when no embedding model is set (lexical only). */
export function embedderFor(current: StorytellerSettings): Embedder | undefined {
  return current.embeddingModel ? new OllamaEmbedder(current.ollamaHost, current.embeddingModel, DEFAULT_EMBED_TIMEOUT_MS) : undefined;
}

/**
 * Campaign knowledge for play and previews, read through the writer's current settings at each call:
 * semantic when an embedding model is set (retrieval itself skips an uncalibrated model and says why),
 * and honestly empty while the index is not open yet.
 */
export function campaignKnowledge(index: CampaignIndex, settings: Settings): KnowledgePort {
  const fallback = noKnowledge(index.campaign.id, 'the knowledge index is still being built');
  // Kept across turns so canon facts are extracted again only when their source changes.
  let canon: { store: KnowledgeStore; facts: StoreCanonFacts } | undefined;
  const port = (): KnowledgePort => {
    if (!index.store) return fallback;
    if (canon?.store !== index.store) canon = { store: index.store, facts: new StoreCanonFacts(index.store) };
    const embedder = embedderFor(settings.current);
    return indexKnowledge(index.store, embedder ? { embedder } : null, canon.facts);
  };
  return { retrieve: (query) => port().retrieve(query), cast: () => port().cast() };
}

/** The story engine's settings from the extension's. */
export function engineSettings(current: StorytellerSettings): Partial<EngineSettings> & { model: string } {
  return { model: current.narratorModel, contextLength: current.contextLength, memoryEvery: current.memoryCadence, knowledgeCaps: current.budgets };
}

/** The narrator at the host the settings name now: a changed host is used from the next request. */
function settingsNarrator(settings: Settings): Narrator {
  let narrator = new OllamaNarrator({ host: settings.current.ollamaHost });
  const current = (): OllamaNarrator => {
    if (narrator.host !== settings.current.ollamaHost) narrator = new OllamaNarrator({ host: settings.current.ollamaHost });
    return narrator;
  };
  return {
    get host() {
      return current().host;
    },
    generate: (request: GenerateRequest) => current().generate(request),
    contextLength: (model: string) => current().contextLength(model),
  };
}

/**
 * One story engine over a play store, following the settings as they change: a new narrator model,
 * context length or budget applies from the next turn, without reopening the panel.
 */
export function storyEngine(store: PlayStore, index: CampaignIndex, settings: Settings): { engine: StoryEngine; dispose(): void } {
  const engine = new StoryEngine(store, campaignKnowledge(index, settings), settingsNarrator(settings), engineSettings(settings.current));
  const subscription = settings.onDidChange((current) => Object.assign(engine.settings, engineSettings(current)));
  return { engine, dispose: () => subscription.dispose() };
}

import { StoreCanonFacts } from '../knowledge/conflicts';
import type { Embedder } from '../knowledge/retrieval';
import { embedderFor as backendEmbedder, type ModelBackend } from '../knowledge/models';
import type { KnowledgeStore } from '../knowledge/indexing';
import { StoryEngine, type EngineSettings } from '../story/engine';
import { indexKnowledge } from '../story/indexKnowledge';
import type { GenerateRequest, Narrator } from '../story/narrator';
import { narratorFor } from '../story/openaiNarrator';
import type { PlayStore } from '../story/playStore';
import { noKnowledge, type KnowledgePort } from '../story/ports';
import type { CampaignIndex } from './campaignIndex';
import type { Settings, StorytellerSettings } from './settings';

/** The embedder the settings name, or undefined when no embedding model (or no usable server) is set: lexical only. */
export function embedderFor(current: StorytellerSettings): Embedder | undefined {
  return current.embeddingModel && current.embeddingBackend ? backendEmbedder(current.embeddingBackend, current.embeddingModel) : undefined;
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

/**
 * The narrator on the server the settings name now: a changed provider, URL or key is used from the next
 * request, and settings that name no usable server fail the turn with the reason.
 */
function settingsNarrator(settings: Settings): Narrator {
  let made: { backend: ModelBackend; narrator: Narrator } | undefined;
  const current = async (): Promise<Narrator> => {
    await settings.keysLoaded;
    const backend = settings.current.narratorBackend;
    if (!backend) throw new Error(settings.current.backendProblem ?? 'no model server is configured');
    if (!made || JSON.stringify(made.backend) !== JSON.stringify(backend)) made = { backend, narrator: narratorFor(backend) };
    return made.narrator;
  };
  return {
    get host() {
      return settings.current.narratorBackend?.baseUrl ?? '';
    },
    generate: async (request: GenerateRequest) => (await current()).generate(request),
    contextLength: async (model: string) => (await current()).contextLength(model),
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

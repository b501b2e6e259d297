import type { SemanticSearchOptions } from '../knowledge/embeddings';
import { retrieveKnowledge } from '../knowledge/retrieval';
import type { KnowledgeStore } from '../knowledge/store';
import { castFromKnowledgeStore } from './cast';
import type { KnowledgePort } from './ports';

/** Campaign knowledge for the story engine, from the campaign's index: retrieval and the cast it names. */
export function indexKnowledge(index: KnowledgeStore, semantic: SemanticSearchOptions | null = null): KnowledgePort {
  return {
    retrieve: (query) => retrieveKnowledge(index, query, { semantic }),
    cast: () => Promise.resolve(castFromKnowledgeStore(index)),
  };
}

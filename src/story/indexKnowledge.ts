import { StoreCanonFacts } from '../knowledge/conflicts';
import { supersedeRetrievedCanon } from '../knowledge/conflicts';
import type { SemanticSearchOptions } from '../knowledge/retrieval';
import { eligiblePassages, retrieveKnowledge, searchKnowledge } from '../knowledge/retrieval';
import type { KnowledgeStore } from '../knowledge/indexing';
import { splitFrontMatter } from '../knowledge/campaign';
import { castFromKnowledgeStore } from './cast';
import type { KnowledgePort } from './ports';

/**
 * Campaign knowledge for the story engine, from the campaign's index: retrieval and the cast it names.
 * Retrieved canon that the current state contradicts, or newer canon supersedes, is sent as superseded.
 * Pass the same `canon` reader to every port over one index so facts are extracted once per source
 * change, not once per turn.
 */
export function indexKnowledge(index: KnowledgeStore, semantic: SemanticSearchOptions | null = null, canon = new StoreCanonFacts(index)): KnowledgePort {
  return {
    retrieve: async (query) => supersedeRetrievedCanon(await retrieveKnowledge(index, query, { semantic }), query.currentState ?? [], canon, query.measure),
    research: {
      search: async (text, stage, limit) => {
        const { hits, record } = await searchKnowledge(index, text, { semantic, stage, limit });
        return { hits, decisions: record.candidates };
      },
      passages: (passageIds, stage) => eligiblePassages(index, passageIds, stage),
      supersede: (result, query) => supersedeRetrievedCanon(result, query.currentState ?? [], canon, query.measure),
    },
    cast: () => Promise.resolve(castFromKnowledgeStore(index)),
    character: (sourceId) => {
      const content = index.getSourceContent(sourceId);
      return content === undefined ? undefined : splitFrontMatter(content).meta.character;
    },
  };
}

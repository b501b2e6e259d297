import type { CandidateDecision, RetrievalQuery, RetrievalResult, RetrievalStage, SelectedPassage } from '../knowledge/retrieval';

/** A person, place or thing the campaign defines, for the summarizer's cast brief. */
export interface CastEntry {
  name: string;
  aliases: string[];
  /** A fixed description from canon: never live stats, so the same block is always framed the same way. */
  description: string;
  kind: 'character' | 'place' | 'other';
  /** Narrator-only canon: the brief names it but keeps its description out of memories the player reads. */
  hidden: boolean;
}

/** What the story engine needs from campaign knowledge. The retrieval module implements it over the index. */
export interface KnowledgePort {
  retrieve(query: RetrievalQuery): Promise<RetrievalResult>;
  cast(): Promise<CastEntry[]>;
  /** Who `{{char}}` is in a source's text: its front matter's `character:` (a card import writes the card's). */
  character(sourceId: string): string | undefined;
  /** What research may reach: absent where there is no index to search. */
  research?: ResearchKnowledge;
}

/**
 * The campaign as a researching model reaches it, every call through today's eligibility: a search finds
 * only what the stage may see, a passage is given by id only while it is eligible now.
 */
export interface ResearchKnowledge {
  search(text: string, stage: RetrievalStage, limit: number): Promise<{ hits: SelectedPassage[]; decisions: CandidateDecision[] }>;
  /** Each id's passage while it is eligible now, or why not; one call for many ids. */
  passages(passageIds: readonly string[], stage: RetrievalStage): Map<string, { passage: SelectedPassage; decision: CandidateDecision } | { refused: string }>;
  /** Canon that play or newer canon supersedes, rewritten in the chosen passages as retrieval does. */
  supersede(result: RetrievalResult, query: RetrievalQuery): RetrievalResult;
}

/**
 * Knowledge for a campaign with no index yet: retrieval honestly returns nothing and says why, so play
 * still works and the provenance view explains the empty sections.
 */
export function noKnowledge(campaignId: string, reason = 'no knowledge index for this campaign yet'): KnowledgePort {
  return {
    retrieve(query: RetrievalQuery): Promise<RetrievalResult> {
      return Promise.resolve({
        sections: { alwaysInclude: [], canon: [], reference: [], inspiration: [] },
        record: {
          createdAt: new Date().toISOString(),
          campaignId,
          stage: query.stage satisfies RetrievalStage,
          queryText: query.input,
          terms: [],
          semantic: { used: false, model: null, reason },
          budgets: query.budgets,
          candidates: [],
          conflicts: [],
        },
      });
    },
    cast: () => Promise.resolve([]),
    character: () => undefined,
  };
}

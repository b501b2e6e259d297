// Retrieval: lexical and semantic search over the index, and the bounded, class-ordered knowledge sections of a turn.
export { describeSemanticIndex, indexSemantic } from './calibration';
export type { SemanticIndexReport } from './calibration';
export { DEFAULT_EMBED_TIMEOUT_MS, OllamaEmbedder, calibratedModels } from './embeddings';
export type { Embedder, SemanticSearchOptions } from './embeddings';
export { DEFAULT_KNOWLEDGE_BUDGETS, eligiblePassage, retrieveKnowledge, searchKnowledge, whyNot } from './retrieval';
export { OUTCOME_WORDS, decisionLine, excerpt, excerptAround, locate } from './retrievalFormat';
export { isMeaningfulWord, tokenize } from './retrievalTerms';
export type { CandidateDecision, KnowledgeBudgets, KnowledgeSection, RetrievalQuery, RetrievalRecord, RetrievalResult, RetrievalStage, SelectedPassage, SupersededCanonLine, TokenMeasure } from './retrievalTypes';

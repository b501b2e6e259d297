// Retrieval: lexical and semantic search over the index, and the bounded, class-ordered knowledge sections of a turn.
export { isEverydayWordAsWritten } from './backgroundEnglish';
export { describeSemanticIndex, indexSemantic } from './calibration';
export type { SemanticIndexReport } from './calibration';
export { calibratedModels } from './embeddings';
export type { SemanticSearchOptions } from './embeddings';
export { DEFAULT_KNOWLEDGE_BUDGETS, eligiblePassages, retrieveKnowledge, searchKnowledge, whyNot } from './retrieval';
export { OUTCOME_WORDS, decisionLine, excerpt, excerptAround, locate, worldInfoItems, worldInfoLines, worldInfoPlace, worldInfoRole } from './retrievalFormat';
export { rowSelected } from './retrievalRows';
export { isMeaningfulWord, tokenize } from './retrievalTerms';
export { indexVersion } from './retrievalScore';
export { wordRuns } from './shingles';
export type { CandidateDecision, KnowledgeBudgets, KnowledgeSection, RetrievalQuery, RetrievalRecord, RetrievalResult, RetrievalStage, SelectedPassage, SupersededCanonLine, TokenMeasure, WorldFact, WorldInfoQuery, WorldInfoRecord } from './retrievalTypes';
export { DEFAULT_NAMES, NO_TIMED_EFFECTS, activateWorldInfo, insertionOrder, scannedMessage, seedFromText, worldInfoBudget } from './worldInfo';
export { hasLorebookMacro, substituteLorebookMacros } from './lorebookMacros';
export { defaultWorldInfoQuery } from './worldInfoEntries';
export type { ActivationEntry, ChatNames, EntryVerdict, TimedState } from './worldInfo';

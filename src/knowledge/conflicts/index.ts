// Conflicts: canon facts extracted from passages, contradictions between them, the writer's decisions, and play state superseding canon.
export { FactCache, isOpenConflict, keepDecision } from './conflicts';
export type { CanonConflict, ConflictAnalysis, ConflictDecision } from './conflicts';
export { clearConflictDecision, keepStatement, loadConflictDecisions, recordConflictDecision } from './conflictsDecisions';
export { supersedesEdit } from './conflictsEdit';
export { StoreCanonFacts, analyzeStoreConflicts, canonConsistencyPassages } from './conflictsIndex';
export { checkCanonConsistency, pairPassagesByEntity } from './conflictsModel';
export type { ConsistencyPassage, SuggestedConflict, SuggestedQuote } from './conflictsModel';
export { describeWorldFact, supersedeRetrievedCanon, supersededByState, worldFactsFromState } from './conflictsState';
export type { FactStatement } from './facts';
export { attributeKey } from './factsNormalize';

// The story engine's public surface, for the VS Code panel and the CLI.
export { PlayStore, INTERRUPTED_MESSAGE, type NewAdventure, type AdventurePatch } from './playStore';
export { StoryEngine, TurnInProgressError, DEFAULT_SETTINGS, type EngineSettings, type TurnHandlers, type TurnOutcome } from './engine';
export { noKnowledge, type KnowledgePort, type CastEntry } from './ports';
export { castFromKnowledgeStore, castFromSchema } from './cast';
export { TokenEstimator } from './tokenEstimator';
export { buildMemoryPrompt, buildCastBrief, MEMORY_MAX_WORDS } from './memory';
export { parseStatSchema, renderStateSection, hasWorldState, StatSchemaError, type StatSchema, type WorldState } from './worldState';
export { transcriptMarkdown } from './transcript';
export type * from './types';
export { PROPOSAL_LIMITS, ProposalWriteError, clearSettledConflicts, diskReader, isApplied, listDiscarded, proposalDiff, recordDiscarded, restoreDiscarded, settleAnswer, writeProposals } from './proposals';
export type { CanonProposal, DiscardedProposal, ProposalDraft, ProposalOrigin, ProposalTurn, RefusedProposal } from './proposals';
export { PROPOSE_EDIT_TOOL, proposeCanonUpdates, type ProposalSet, type ProposeOptions } from './proposalDrafting';

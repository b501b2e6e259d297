import type { RetrievalRecord } from '../knowledge/retrieval';
import type { ResearchRecord } from './research';
import type { StatSchema, WorldState } from './worldState';

// The story engine's vocabulary, shared by the store, the engine, the CLI and the VS Code panel.

export const ACTION_KINDS = ['do', 'say', 'story', 'continue', 'start'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

/**
 * pending: the action is stored, nothing sent yet. streaming: the prompt snapshot is written and the model
 * is answering. complete: the reply ended with Ollama's done chunk. incomplete: the reply stopped part way
 * (error, cancel, crash) and keeps what arrived. error: nothing arrived; the action is still kept.
 */
export type TurnStatus = 'pending' | 'streaming' | 'complete' | 'incomplete' | 'error';

export interface PlayerAction {
  kind: ActionKind;
  text: string;
}

/** The protagonist. Only the writer edits it: no model output ever reaches these fields. */
export interface Persona {
  name: string;
  pronouns: string;
  description: string;
}

export interface Adventure {
  id: string;
  campaignId: string;
  title: string;
  persona: Persona;
  plotEssentials: string;
  authorsNote: string;
  statSchema: StatSchema;
  headTurnId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Turn {
  id: string;
  adventureId: string;
  parentId: string | null;
  depth: number;
  action: PlayerAction;
  /** The reply as shown to the writer, without the fenced state block. */
  narration: string;
  status: TurnStatus;
  error: string | null;
  model: string | null;
  /** The state block the model proposed, as parsed (null when it proposed none). */
  stateDelta: Record<string, unknown> | null;
  stateAfter: WorldState;
  /** Why parts of the proposed delta were not applied; shown to the model on the next turn. */
  refusals: string[];
  promptEvalCount: number | null;
  evalCount: number | null;
  createdAt: string;
  updatedAt: string;
}

export interface Memory {
  id: string;
  adventureId: string;
  /** The last turn of the summarized block. Only lineages through it see the memory. */
  anchorTurnId: string | null;
  /** Depth range summarized; null for a memory the writer typed. */
  sourceStart: number | null;
  sourceEnd: number | null;
  text: string;
  pinned: boolean;
  retrievedCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface StorySummary {
  adventureId: string;
  anchorTurnId: string;
  text: string;
  createdAt: string;
}

export type SectionId =
  | 'narrator'
  | 'knowledge-rule'
  | 'state-guide'
  | 'persona'
  | 'always-include'
  | 'plot-essentials'
  | 'canon'
  | 'reference'
  | 'inspiration'
  | 'memories'
  | 'story-summary'
  | 'world-state'
  | 'refusals'
  | 'history'
  | 'authors-note'
  | 'action';

/** One rendered part of the prompt, exactly as sent, with what it cost and what did not fit. */
export interface ContextSection {
  id: SectionId;
  title: string;
  /** In the stable, cacheable prefix (system message) rather than the live part. */
  stable: boolean;
  text: string;
  tokens: number;
  /** Tokens this section was allowed; null when it is required whatever it costs. */
  budget: number | null;
  /** Passage or memory ids rendered in this section. */
  itemIds: string[];
  /** Items that were eligible but left out, and why. */
  leftOut: { id: string; reason: string }[];
  /** Canon lines of its passages replaced because play moved on (passage id, why); absent when none. */
  superseded?: { id: string; reason: string }[];
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ContextBudget {
  contextLength: number;
  replyReserve: number;
  total: number;
  used: number;
}

export interface AssembledContext {
  sections: ContextSection[];
  messages: ChatMessage[];
  retrieval: RetrievalRecord;
  budget: ContextBudget;
  /** Budget conflicts a writer should see (pinned items over budget, always-include overflow). */
  warnings: string[];
  /** What research did before this context was packed; absent when research was off. */
  research?: ResearchRecord;
}

/** What a turn was given, frozen before generation. */
export interface PromptSnapshot {
  turnId: string;
  sections: ContextSection[];
  messages: ChatMessage[];
  retrieval: RetrievalRecord;
  totalTokens: number;
  model: string | null;
  createdAt: string;
  /** The turn's research, as it ran; absent when research was off (and for turns played before it existed). */
  research?: ResearchRecord;
}

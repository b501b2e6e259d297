import type { StatDef, StatSchema } from '../knowledge/campaign';
import type { RetrievalRecord, TimedState } from '../knowledge/retrieval';
import type { ChatMessage } from '../models';
import type { RetrievalResult } from '../knowledge/retrieval';

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

export type { ChatMessage };

/** An adventure's stat schema (campaign.yaml's `stats:`) is read with the campaign's files. */
export type { StatDef, StatSchema };
export type StateValue = number | string | boolean;
/** Flat map from path to value. */
export type WorldState = Record<string, StateValue>;

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

/** SillyTavern World Info as a turn leaves it: the seed its rolls used, and the timed effects after it. */
export interface TurnWorldInfo {
  seed: number;
  /** Messages the chat held when it was scanned. */
  chatLength: number;
  state: TimedState;
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
  | 'action'
  // SillyTavern World Info where its position puts it (the history section carries those at a depth).
  | 'world-info-before'
  | 'world-info-after'
  | 'world-info-an-top'
  | 'world-info-an-bottom'
  | 'world-info-depth-0';

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
  /** SillyTavern World Info passages it carries and where: "@D (at a depth) 2 as system, order 100: before the last 2 messages"; absent when none. */
  worldInfo?: { id: string; where: string }[];
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

/** A source's character name when the source is a character card's, for framing its passages. */
export type CharacterOf = (sourceId: string) => string | undefined;

/** How research ran: with native tool calls, in the JSON reply protocol, or not at all (today's lexical selection). */
export type ResearchRan = 'native' | 'json' | 'lexical';

/** One tool call as the model wrote it and as the runtime answered it. */
export interface ResearchStep {
  round: number;
  tool: string;
  /** The arguments as written (cut to a readable length). */
  arguments: string;
  outcome: 'answered' | 'refused';
  /** What the runtime answered, in one line: the results' count, or why it refused. */
  said: string;
  /** Passage ids the answer showed the model. */
  shown: string[];
}

/** What research did for a turn: saved with the turn's snapshot, shown in Turn Provenance, the context report and the CLI. */
export interface ResearchRecord {
  ran: ResearchRan;
  /** Why it ran that way, or why it fell back: one sentence a writer can read. */
  reason: string;
  model: string;
  steps: ResearchStep[];
  /** Passages it kept that reached the prompt's selection, with the model's reason. */
  kept: { id: string; reason: string }[];
  /** Ids it asked to keep that the runtime refused, and why. */
  refused: { id: string; reason: string }[];
  /** Limits it reached ("4 rounds"), in plain words. */
  limits: string[];
  rounds: number;
  /** Tokens of tool results and catalogue sent to the model. */
  resultTokens: number;
  /** Milliseconds waiting on the model, and the runtime's own. */
  modelMs: number;
  runtimeMs: number;
  /** Each passage shown to the model by the name a writer reads (title › headings), by id; absent in older records. */
  names?: Record<string, string>;
  /** The model's context window research fitted its prompt to; absent when unknown, and in older records. */
  contextWindow?: number;
  /** False when the model kept what it found without calling finish (it ended in prose); absent where it fell back, and in older records. */
  finished?: boolean;
  /** What this turn learned of the model's tools and research on auto will remember (said once, on this turn). */
  learned?: string;
}

/** What the model is told of the moment it researches for, each part already one prompt-safe text. */
export interface ResearchTask {
  action: string;
  persona: string;
  worldState: string;
  recent: string[];
  personaName: string;
  characterOf: CharacterOf;
}

export interface ResearchOutcome {
  result: RetrievalResult;
  record: ResearchRecord;
  /** What the reply showed of the model's tool use: it called them natively, the server refused them, or it answered in prose when first offered them. */
  tools?: 'used' | 'refused' | 'ignored';
  /** The server's words when it refused tools. */
  refusal?: string;
}

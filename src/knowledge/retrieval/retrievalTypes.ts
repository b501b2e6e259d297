import type { KnowledgeClass } from '../campaign';
import type { ChatNames, EntryVerdict, TimedState, WorldInfoSettings } from './worldInfo';

/**
 * The contract between retrieval (src/knowledge/retrieval*.ts) and every consumer: the story engine's
 * context builder, the CLI's `search`/`context`, the provenance tree. Changing it changes all of them.
 */

/** Who will read what retrieval returns. Hidden (narrator-only) canon never reaches `player`. */
export type RetrievalStage = 'narrator' | 'player';

/** In the unit of the query's `measure`: every count a budget is compared with is measured the same way. */
export interface KnowledgeBudgets {
  /** Tokens for always_include canon; overflowing it is a reported conflict, never a silent drop. */
  alwaysInclude: number;
  canon: number;
  reference: number;
  inspiration: number;
  /**
   * Optional ceiling on all four together. Under it, inspiration goes first, then the lowest-ranked
   * reference, then lower-priority canon; always-include canon is never removed by it.
   */
  total?: number;
}

/** One fact of the current world state, about a named entity: what supersedes canon that play moved past. */
export interface WorldFact {
  entity: string;
  /** Absent: the entity's condition as a whole (`bridge = destroyed`). */
  attribute?: string;
  value: string;
  /** Where it came from, for the reason shown to the writer (`world.bridge`). */
  statePath?: string;
}

export interface RetrievalQuery {
  /** The writer's action or search text. */
  input: string;
  /** Recent story text (last narration/actions), newest last. */
  recent?: string[];
  scene?: string;
  /** Entity names standing in the current state (characters present, location). */
  entities?: string[];
  persona?: string;
  /** Facts already in current world state, so retrieval can suppress passages that only repeat them. */
  stateFacts?: string[];
  /**
   * The current world state as facts about entities: retrieved canon lines it contradicts are sent as
   * superseded, never as current truth. Relevance and budgets ignore it.
   */
  currentState?: WorldFact[];
  stage: RetrievalStage;
  budgets: KnowledgeBudgets;
  /** What knowledge costs where it is sent; absent: each passage's stored estimate, and no framing. */
  measure?: TokenMeasure;
  /**
   * The chat as SillyTavern's World Info reads it, for a prompt: sources carrying SillyTavern behaviour
   * (`sillytavern.entry` in front matter) then enter by its activation alone. Absent: the input and `recent`
   * are the chat, with no timed effects and seed 0.
   */
  worldInfo?: WorldInfoQuery;
}

export interface WorldInfoQuery {
  /** The chat's messages, oldest first, the action being played last (each action and each narration one message). */
  messages: string[];
  /** Messages the chat holds, which delay and timed effects count. */
  chatLength: number;
  /** The branch's timed effects after the turn this one follows. */
  state: TimedState;
  /** Rolls probability and group weights; recorded with the turn. */
  seed: number;
  settings: WorldInfoSettings;
  /** Tokens the entries may take together, by the query's measure. */
  budget: number;
  /** Relevance may admit these entries too, beside SillyTavern's activation (off for imported books by default). */
  searchAdmits: boolean;
  /** Who `{{user}}` and `{{char}}` are in keys and entries; absent: the player character and the narrator. */
  names?: ChatNames;
}

/** What SillyTavern's activation decided for one prompt. */
export interface WorldInfoRecord {
  seed: number;
  chatLength: number;
  budget: number;
  used: number;
  /** The timed effects after this turn: the next turn on this branch starts from them. */
  state: TimedState;
  /** Every entry with SillyTavern behaviour, fired or not, and why. */
  verdicts: (EntryVerdict & { sourcePath: string })[];
}

/**
 * Tokens in the unit the budgets are in (a prompt's: calibrated to its model, framing included). One measure
 * prices selection, the record and the prompt's sections, so a section's count is the sum of what its
 * passages were charged and can never read over a budget each of them fitted.
 */
export interface TokenMeasure {
  /** A passage as it is sent, with its frame. */
  passage(passage: SelectedPassage): number;
  /** A section's own heading and use line, charged once, with the first passage placed in it. */
  section(section: KnowledgeSection): number;
  /** Plain text as sent, no frame (a World Info entry's content, as SillyTavern prices it); absent: the stored estimate's rule. */
  text?(text: string): number;
}

export type CandidateOutcome =
  | 'selected'
  | 'not-relevant' // failed admission: relevance alone, before any comparison
  | 'over-budget'
  | 'duplicate'
  | 'in-state' // repeats a fact already in current state
  | 'disabled'
  | 'hidden-for-stage'
  | 'not-ready';

export type KnowledgeSection = 'alwaysInclude' | 'canon' | 'reference' | 'inspiration';

/** Which passage, named the way a writer finds it: both a decision and a selected passage carry it. */
export interface PassageIdentity {
  passageId: string;
  sourceId: string;
  sourcePath: string;
  sourceTitle: string;
  class: KnowledgeClass;
  headingPath: string[];
  /** What the passage costs, by the query's measure. */
  tokenCount: number;
}

export interface CandidateDecision extends PassageIdentity {
  /**
   * The file lines it is written on: they tell apart the passages under one heading. Absent from the
   * decisions of turns played before they were recorded (play.db and bundles keep records as written).
   */
  startLine?: number;
  endLine?: number;
  /** Why relevance admitted (or refused) it: matched terms, similarity against the model's floor. */
  admitted: boolean;
  matchedTerms: string[];
  lexicalScore: number | null;
  similarity: number | null;
  semanticFloor: number | null;
  /** Hybrid relevance × class weight × boosts; null when not admitted. */
  score: number | null;
  boosts: { name: string; factor: number }[];
  outcome: CandidateOutcome;
  /** One sentence a writer can read: "matched 'abbey', 'crypt'; over the reference budget (412/400 tokens)". */
  reason: string;
  /** Where it was placed or, admitted but left out, the section it competed for; null when not admitted. */
  section: KnowledgeSection | null;
  duplicateOf: string | null;
}

export interface SelectedPassage extends PassageIdentity {
  text: string;
  /** Narrator-only: must be framed as secret and never rendered to the player. */
  hidden: boolean;
  score: number | null;
  reason: string;
  startLine: number;
  endLine: number;
  /**
   * The writer's rule that placed it in a prompt's sections: a fired World Info entry, or a `keys:` entry
   * the turn mentions. Absent: relevance placed it (or it is a pin, which its section says).
   */
  placedBy?: 'world-info' | 'keys';
}

export interface BudgetConflict {
  kind: 'always-include-overflow';
  message: string;
  budget: number;
  needed: number;
  passageIds: string[];
}

/** A retrieved canon line the current world state contradicts, or newer canon supersedes, replaced in the passage text sent. */
export interface SupersededCanonLine {
  passageId: string;
  sourcePath: string;
  /** 1-based line in the source file. */
  line: number;
  entity: string;
  attribute: string;
  /** What canon says, and the line as written. */
  canonValue: string;
  quote: string;
  currentValue: string;
  /** The world-state path that says so (`world.bridge`); null when newer canon supersedes the line. */
  statePath: string | null;
  /** One sentence a writer can read: `The Bridge — Status: canon "standing" (places/bridge.md:6) superseded in play: world.bridge = destroyed`. */
  reason: string;
}

export interface SemanticStatus {
  used: boolean;
  model: string | null;
  /** Why semantic retrieval did or did not run ("no calibrated floor for model x", "server down"). */
  reason: string;
}

export interface RetrievalRecord {
  createdAt: string;
  campaignId: string;
  stage: RetrievalStage;
  /** The query text actually searched, and the terms extracted from it. */
  queryText: string;
  terms: string[];
  semantic: SemanticStatus;
  budgets: KnowledgeBudgets;
  candidates: CandidateDecision[];
  conflicts: BudgetConflict[];
  /**
   * When nothing was admitted by relevance or a trigger, why, naming what was missing ("this campaign never
   * mentions 'router', 'password'"); null when something was. Absent in records made before this existed.
   */
  abstention?: string | null;
  /** Canon lines replaced because play moved on; absent in records made before this existed. */
  superseded?: SupersededCanonLine[];
  /** SillyTavern's World Info activation for this prompt; absent for a search, a campaign without such entries, and older records. */
  worldInfo?: WorldInfoRecord;
}

export interface RetrievalResult {
  sections: Record<KnowledgeSection, SelectedPassage[]>;
  record: RetrievalRecord;
}

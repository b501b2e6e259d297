import { randomInt } from 'node:crypto';
import { assembleContext, chatNames, DEFAULT_SHARES, worldInfoMessages, type BudgetShares } from './contextBuilder';
import { latestLeaf } from './branches';
import { castFromSchema } from './cast';
import { blockText, buildMemoryPrompt, buildSummaryPrompt, cleanMemoryText, MEMORY_REPLY_TOKENS, rankMemories, SUMMARY_REPLY_TOKENS } from './memory';
import { DEFAULT_REPLY_TOKENS, NarratorError, type Narrator } from '../models';
import { NO_TIMED_EFFECTS, seedFromText, type KnowledgeBudgets } from '../knowledge/retrieval';
import { WORLD_INFO_DEFAULTS, type Campaign } from '../knowledge/campaign';
import { ProcessToolSupport, toolSupportKey, toolSupportName, type ToolChatClient, type ToolSupportMemory } from '../models';
import type { RetrievalQuery, RetrievalResult } from '../knowledge/retrieval';
import type { KnowledgePort } from './ports';
import type { DeletedPlay, PlayStore } from './playStore';
import { research, type ResearchLimits } from './research';
import type { ResearchOutcome, ResearchTask } from './types';
import { TokenEstimator } from './tokenEstimator';
import type { Adventure, AssembledContext, ChatMessage, Memory, PlayerAction, Turn } from './types';
import { applyDelta, extractStateBlock, NarrationStream, initialState, normalizeState, parseStateBlock, type StateValue, type WorldState } from './worldState';

export interface EngineSettings {
  model: string;
  /** Most context to use; the model's own length caps it when the server reports one. */
  contextLength: number;
  /** Tokens kept free for the reply. */
  replyReserve: number;
  /** A memory is written for every block of this many actions. */
  memoryEvery: number;
  /** Unpinned memories offered to each turn. */
  memoryTopK: number;
  shares: BudgetShares;
  /** Most tokens each knowledge section may take (the writer's budgets); none: its share decides alone. */
  knowledgeCaps?: KnowledgeBudgets;
  /** Write due memories (and the summary) right after a turn completes. */
  autoMemories: boolean;
  /** How entries with SillyTavern behaviour activate (campaign.yaml's `world_info:`). */
  worldInfo: Campaign['worldInfo'];
  temperature?: number;
  /** Research before narration: always (in the JSON protocol where tools are refused), never, or when the model can use tools. */
  research: ResearchMode;
  researchLimits?: Partial<ResearchLimits>;
  /** The researching model's context window where its server does not report one; research's prompt fits the smallest known. */
  researchContextWindow?: number;
}

export const RESEARCH_MODES = ['auto', 'on', 'off'] as const;
export type ResearchMode = (typeof RESEARCH_MODES)[number];

/** Story's own defaults; the session passes the writer's settings down over them (its DEFAULTS start from these). */
export const DEFAULT_SETTINGS: Omit<EngineSettings, 'model'> = {
  contextLength: 8192,
  replyReserve: DEFAULT_REPLY_TOKENS,
  memoryEvery: 8,
  memoryTopK: 5,
  shares: DEFAULT_SHARES,
  autoMemories: true,
  worldInfo: { ...WORLD_INFO_DEFAULTS, searchAdmits: false },
  // An engine made without settings never asks a model more than it was told to; the writer's default is the session's.
  research: 'off',
};

export interface TurnHandlers {
  /** Narration as it streams, with the fenced state block held back. */
  onChunk?: (text: string) => void;
  /** Called as soon as the action is stored as a turn: from here on it cannot be lost. */
  onAccepted?: (turn: Turn) => void;
  /** Called once the action is stored and the snapshot written, just before the model is asked. */
  onStarted?: (turn: Turn, context: AssembledContext) => void;
  /** Cancels the turn, as `stop` does. */
  signal?: AbortSignal;
}

export interface TurnOutcome {
  turn: Turn;
  /** Null when the turn failed before its context could be assembled. */
  context: AssembledContext | null;
  /** What went wrong, when the turn is not complete. The action is stored either way. */
  error: Error | null;
  applied: Record<string, StateValue>;
  memories: Memory[];
  /** Memory writing failed; the turn itself is unaffected. */
  memoryError: string | null;
  /** Failed attempts at the same action that this success replaced, deleted (restore puts them back). */
  replacedFailures: DeletedPlay[];
}

export class TurnInProgressError extends Error {
  constructor(title: string) {
    super(`a turn of '${title}' is still being generated; wait for it or stop it first`);
  }
}

/** Research on auto stops offering tools to a model that answered in prose this many first rounds in a row. */
const IGNORED_TOOLS_LIMIT = 2;

/** How often a streaming reply is flushed to disk, so a crash keeps nearly all of it. */
const FLUSH_INTERVAL_MS = 250;
/** Memories written per pass at most, so catching up never stalls play. */
const MAX_MEMORIES_PER_PASS = 2;

/**
 * The story loop over one play store: actions become turns in a tree, each turn gets a bounded,
 * authority-ordered context, a frozen snapshot, a streamed reply and its own world state.
 */
export class StoryEngine {
  readonly settings: EngineSettings;
  private readonly estimators = new Map<string, TokenEstimator>();
  /** What the narrator's server said of the model, by server and model: one name on two servers may be two models. */
  private readonly knownContextLengths = new Map<string, number | null>();
  /**
   * Adventures with a turn in flight, and what stops it: one at a time each, or two replies would race
   * for the head (and an undo or fork would move the head under the reply being written).
   */
  private readonly inFlight = new Map<string, AbortController>();
  /** Research on auto answered in prose when first offered tools, by server and model, times in a row. */
  private readonly proseInARow = new Map<string, number>();

  constructor(
    private readonly store: PlayStore,
    private readonly knowledge: KnowledgePort,
    private readonly narrator: Narrator | null,
    settings: Partial<EngineSettings> & { model: string },
    /** The same server's model in a conversation with tools, for research; null: no research. */
    private readonly toolChat: ToolChatClient | null = null,
    /** What research on auto has learned of each model's tools, kept where the surface keeps it. */
    private readonly toolSupport: ToolSupportMemory = new ProcessToolSupport(),
  ) {
    this.settings = { ...DEFAULT_SETTINGS, ...settings };
  }

  estimator(model = this.settings.model): TokenEstimator {
    let estimator = this.estimators.get(model);
    if (!estimator) {
      estimator = new TokenEstimator(model, this.store);
      this.estimators.set(model, estimator);
    }
    return estimator;
  }

  /** The context the action would get, assembled exactly as a turn would, with no model call and no write. */
  async previewContext(adventureId: string, action: PlayerAction, afterTurnId?: string | null, options: { research?: boolean; signal?: AbortSignal } = {}): Promise<AssembledContext> {
    const adventure = this.store.adventure(adventureId);
    const parentId = afterTurnId === undefined ? this.parentForNewAction(adventure) : afterTurnId;
    return this.assemble(adventure, parentId, action, this.knownContextLengths.get(this.contextLengthKey()) ?? null, false, options.research ? (options.signal ?? null) : undefined);
  }

  /** Plays an action after the head turn (or replaces a head that failed with nothing to show). */
  async takeTurn(adventureId: string, action: PlayerAction, handlers: TurnHandlers = {}): Promise<TurnOutcome> {
    const adventure = this.store.adventure(adventureId);
    return this.run(adventure, this.parentForNewAction(adventure), action, handlers);
  }

  /** Asks again: a sibling of the turn with the same action. The old reply stays in the tree. */
  async retry(adventureId: string, turnId?: string, handlers: TurnHandlers = {}): Promise<TurnOutcome> {
    const adventure = this.store.adventure(adventureId);
    const target = this.turnOf(adventure, turnId ?? this.requireHead(adventure));
    return this.run(adventure, target.parentId, target.action, handlers);
  }

  /** Rewrites a turn's action and plays it: a new sibling, so the original action and reply are not lost. */
  async editAction(adventureId: string, turnId: string, text: string, handlers: TurnHandlers = {}): Promise<TurnOutcome> {
    const adventure = this.store.adventure(adventureId);
    const target = this.turnOf(adventure, turnId);
    // The same action again would only duplicate the branch beside it; asking again is Retry's job.
    if (text.trim() === target.action.text.trim()) throw new Error('the action is unchanged, so there is nothing new to play; Retry asks for another reply');
    return this.run(adventure, target.parentId, { kind: target.action.kind, text }, handlers);
  }

  /** Stops the adventure's turn in flight, keeping what arrived; false when none is running. */
  stop(adventureId: string): boolean {
    const running = this.inFlight.get(adventureId);
    running?.abort();
    return running !== undefined;
  }

  /** Steps the head back one turn; the undone turn stays in the tree and can be forked to again. */
  undo(adventureId: string): Turn | null {
    const adventure = this.store.adventure(adventureId);
    this.refuseWhileInFlight(adventure);
    const head = this.requireHead(adventure);
    const parentId = this.store.turn(head).parentId;
    this.store.setHead(adventureId, parentId);
    return parentId === null ? null : this.store.turn(parentId);
  }

  /** Takes an undo back: the head returns to the turn undone, if the story has not moved on from where it left it. */
  redo(adventureId: string, turnId: string): Turn {
    const adventure = this.store.adventure(adventureId);
    this.refuseWhileInFlight(adventure);
    const turn = this.turnOf(adventure, turnId);
    if (turn.parentId !== adventure.headTurnId) throw new Error(`turn ${turn.depth + 1} cannot be redone: the story has moved since it was undone (the Adventures view and the map still reach it)`);
    this.store.setHead(adventureId, turnId);
    return turn;
  }

  /** Continues from any turn: the next action becomes its child, on a branch that sees only its lineage. */
  fork(adventureId: string, turnId: string): Turn {
    const adventure = this.store.adventure(adventureId);
    this.refuseWhileInFlight(adventure);
    const turn = this.turnOf(adventure, turnId);
    this.store.setHead(adventureId, turnId);
    return turn;
  }

  /** Shows another reply to the same moment (a swipe): the head moves to the newest story told after it. */
  switchTo(adventureId: string, turnId: string): Turn {
    const adventure = this.store.adventure(adventureId);
    this.refuseWhileInFlight(adventure);
    this.turnOf(adventure, turnId);
    const leaf = latestLeaf(this.store.allTurns(adventureId), turnId);
    this.store.setHead(adventureId, leaf.id);
    return leaf;
  }

  private refuseWhileInFlight(adventure: Adventure): void {
    if (this.inFlight.has(adventure.id)) throw new TurnInProgressError(adventure.title);
  }

  /** The world state after a turn (the head by default; null: before the first), in line with today's schema. */
  stateAfter(adventureId: string, turnId?: string | null): WorldState {
    const adventure = this.store.adventure(adventureId);
    const id = turnId === undefined ? adventure.headTurnId : turnId;
    return this.stateAt(adventure, id === null ? null : this.turnOf(adventure, id));
  }

  /** A turn of this adventure: an id from another one must not seed a branch here. */
  private turnOf(adventure: Adventure, turnId: string): Turn {
    const turn = this.store.turn(turnId);
    if (turn.adventureId !== adventure.id) throw new Error(`turn ${turnId} belongs to another adventure`);
    return turn;
  }

  private requireHead(adventure: Adventure): string {
    if (!adventure.headTurnId) throw new Error('the adventure has no turns yet');
    return adventure.headTurnId;
  }

  /** A head that failed before any text arrived is replaced by the next action rather than continued. */
  private parentForNewAction(adventure: Adventure): string | null {
    if (!adventure.headTurnId) return null;
    const head = this.store.turn(adventure.headTurnId);
    return head.status === 'error' && head.narration === '' ? head.parentId : head.id;
  }

  private stateAt(adventure: Adventure, parent: Turn | null): WorldState {
    return parent ? normalizeState(adventure.statSchema, parent.stateAfter) : initialState(adventure.statSchema);
  }

  /**
   * Research over today's selection, as the setting says: 'auto' only when the model can use tools. Where it
   * cannot run, today's selection is sent and the record says why.
   */
  private async researchOver(input: { query: RetrievalQuery; base: RetrievalResult; task: ResearchTask }, signal: AbortSignal | null): Promise<ResearchOutcome> {
    const model = this.settings.model;
    const lexical = (reason: string): ResearchOutcome => ({
      result: input.base,
      record: { ran: 'lexical', reason, model, steps: [], kept: [], refused: [], limits: [], rounds: 0, resultTokens: 0, modelMs: 0, runtimeMs: 0 },
    });
    const knowledge = this.knowledge.research;
    if (!knowledge) return lexical('there is no index to research; today\'s selection was used');
    if (!this.toolChat) return lexical('no model server to research with; today\'s selection was used');
    const auto = this.settings.research === 'auto';
    const key = toolSupportKey(this.toolChat.backend, model);
    if (auto) {
      const known = this.toolSupport.get(key);
      if (known?.tools === 'refused') {
        return lexical(`${toolSupportName(key)} ${known.reason} (learned ${known.since.slice(0, 10)}), so research on auto leaves it alone; today's selection was used ("Forget Model Tool Support" in VS Code, or a new CLI process, asks again)`);
      }
      let native: boolean;
      try {
        native = (await this.toolChat.canUseTools?.(model, signal ?? undefined)) ?? true;
      } catch (error) {
        return lexical(`could not ask the server whether '${model}' can use tools (${error instanceof Error ? error.message : String(error)}); today's selection was used`);
      }
      if (!native) return lexical(`the server does not say that '${model}' can use tools, and research is set to auto (set it to on to research anyway); today's selection was used`);
    }
    const outcome = await research({
      client: this.toolChat,
      model,
      knowledge,
      ...input,
      contextWindow: await this.researchContextWindow(),
      estimator: this.estimator(),
      ...(this.settings.researchLimits ? { limits: this.settings.researchLimits } : {}),
      nativeOnly: auto,
      ...(signal ? { signal } : {}),
    });
    if (auto) this.learnToolSupport(key, outcome);
    return outcome;
  }

  /**
   * The researching model's window: the smallest of what its server reports (Ollama's /api/show, vLLM's
   * max_model_len), the writer's research setting and the context length setting, as the narrator is capped.
   */
  private async researchContextWindow(): Promise<number> {
    const reported = this.narrator ? await this.modelContextLength().catch(() => null) : null;
    return Math.min(reported ?? Infinity, this.settings.researchContextWindow ?? Infinity, this.settings.contextLength);
  }

  /**
   * Research on auto remembers what a model showed: a refusal of tools at once, prose instead of a call
   * the second time in a row (once could be the moment). A model that used them is remembered as able.
   */
  private learnToolSupport(key: string, outcome: ResearchOutcome): void {
    if (outcome.tools === 'used') {
      this.proseInARow.delete(key);
      if (this.toolSupport.get(key)?.tools !== 'native') this.toolSupport.set(key, { tools: 'native', reason: 'used tools natively', since: new Date().toISOString() });
      return;
    }
    let reason: string | null = null;
    if (outcome.tools === 'refused') reason = `refused tools (${outcome.refusal ?? 'no reason given'})`;
    if (outcome.tools === 'ignored') {
      const times = (this.proseInARow.get(key) ?? 0) + 1;
      this.proseInARow.set(key, times);
      if (times >= IGNORED_TOOLS_LIMIT) reason = `answered in prose ${IGNORED_TOOLS_LIMIT} times in a row though offered tools`;
    }
    if (reason === null) return;
    this.proseInARow.delete(key);
    this.toolSupport.set(key, { tools: 'refused', reason, since: new Date().toISOString() });
    outcome.record.learned = `${toolSupportName(key)} ${reason}: research on auto will not offer it tools again`;
  }

  /** `researchSignal`: undefined, no research; null or a signal, research (cancelled by the signal). */
  private async assemble(adventure: Adventure, parentId: string | null, action: PlayerAction, modelContext: number | null, forTurn: boolean, researchSignal?: AbortSignal | null): Promise<AssembledContext> {
    const history = this.store.lineage(parentId);
    const parent = history.at(-1) ?? null;
    const { searchAdmits, ...wiSettings } = this.settings.worldInfo;
    const names = chatNames(adventure.persona.name);
    const messages = worldInfoMessages(history, action, names, wiSettings);
    // A turn rolls a new seed (a retry rolls again); a preview rolls one fixed by where it stands, so it
    // shows the same thing each time it is asked.
    const seed = forTurn ? randomInt(2 ** 31) : seedFromText(`${adventure.id}:${parentId ?? ''}:${action.text}`);
    const queryText = [action.text, ...history.slice(-2).map((t) => t.narration)].join('\n');
    const visible = this.store.memoriesForLineage(adventure.id, history);
    const memories = rankMemories(visible, queryText, this.settings.memoryTopK);
    const context = await assembleContext({
      adventure,
      history,
      action,
      state: this.stateAt(adventure, parent),
      refusals: parent?.refusals ?? [],
      memories,
      summary: this.store.summaryForLineage(adventure.id, history)?.text ?? null,
      contextLength: modelContext === null ? this.settings.contextLength : Math.min(modelContext, this.settings.contextLength),
      replyReserve: this.settings.replyReserve,
      shares: this.settings.shares,
      ...(this.settings.knowledgeCaps ? { knowledgeCaps: this.settings.knowledgeCaps } : {}),
      retrieve: (q) => this.knowledge.retrieve(q),
      ...(researchSignal !== undefined && this.settings.research !== 'off' ? { research: (input) => this.researchOver(input, researchSignal) } : {}),
      characterOf: (sourceId) => this.knowledge.character(sourceId),
      estimator: this.estimator(),
      worldInfo: { messages, chatLength: messages.length, state: this.store.worldInfoAfter(history)?.state ?? NO_TIMED_EFFECTS, seed, settings: wiSettings, searchAdmits, names },
    });
    const used = context.sections.find((s) => s.id === 'memories')?.itemIds ?? [];
    if (forTurn && used.length > 0) this.store.markMemoriesRetrieved(used);
    return context;
  }

  private contextLengthKey(): string {
    return JSON.stringify([this.narrator?.host ?? '', this.settings.model]);
  }

  private async modelContextLength(): Promise<number | null> {
    const key = this.contextLengthKey();
    if (!this.knownContextLengths.has(key)) this.knownContextLengths.set(key, await this.narrator!.contextLength(this.settings.model));
    return this.knownContextLengths.get(key)!;
  }

  private async run(adventure: Adventure, parentId: string | null, action: PlayerAction, handlers: TurnHandlers): Promise<TurnOutcome> {
    if ((action.kind === 'do' || action.kind === 'say' || action.kind === 'story') && action.text.trim() === '') {
      throw new Error(`a '${action.kind}' action needs some text`);
    }
    this.refuseWhileInFlight(adventure);
    const controller = new AbortController();
    this.inFlight.set(adventure.id, controller);
    const signal = handlers.signal ? AbortSignal.any([controller.signal, handlers.signal]) : controller.signal;
    try {
      return await this.generateTurn(adventure, parentId, action, handlers, signal);
    } finally {
      this.inFlight.delete(adventure.id);
    }
  }

  isGenerating(adventureId: string): boolean {
    return this.inFlight.has(adventureId);
  }

  private async generateTurn(adventure: Adventure, parentId: string | null, action: PlayerAction, handlers: TurnHandlers, signal: AbortSignal): Promise<TurnOutcome> {
    const model = this.settings.model;
    // The branch is walked before the action is stored: a damaged one is named, and nothing is added to it.
    const parent = parentId === null ? null : (this.store.lineage(parentId).at(-1) ?? this.store.turn(parentId));
    const parentState = this.stateAt(adventure, parent);
    // The action is committed before anything else can fail.
    let turn = this.store.createTurn({ adventureId: adventure.id, parentId, action, model, stateAfter: parentState });
    handlers.onAccepted?.(turn);
    const failed = (error: Error, context: AssembledContext | null): TurnOutcome => {
      const partial = error instanceof NarratorError ? extractStateBlock(error.partial).narration : '';
      turn = this.store.finishTurn(turn.id, {
        status: partial ? 'incomplete' : 'error',
        narration: partial,
        error: error.message,
        stateDelta: null,
        stateAfter: parentState,
        refusals: [],
        promptEvalCount: null,
        evalCount: null,
      });
      return { turn, context, error, applied: {}, memories: [], memoryError: null, replacedFailures: [] };
    };

    if (!this.narrator) return failed(new Error('no narrator model is configured; choose an Ollama model in settings'), null);
    let context: AssembledContext;
    try {
      const modelContext = await this.modelContextLength();
      context = await this.assemble(adventure, parentId, action, modelContext, true, signal);
      this.store.writeSnapshot(turn.id, context, model);
    } catch (error) {
      return failed(error instanceof Error ? error : new Error(String(error)), null);
    }

    this.store.markStreaming(turn.id);
    handlers.onStarted?.(this.store.turn(turn.id), context);
    let streamed = '';
    let lastFlush = Date.now();
    const visible = new NarrationStream();
    try {
      const result = await this.narrator.generate({
        model,
        messages: context.messages,
        numCtx: context.budget.contextLength,
        maxTokens: context.budget.replyReserve,
        ...(this.settings.temperature !== undefined ? { temperature: this.settings.temperature } : {}),
        signal,
        onChunk: (piece) => {
          streamed += piece;
          const shown = visible.push(piece);
          if (shown) handlers.onChunk?.(shown);
          if (Date.now() - lastFlush >= FLUSH_INTERVAL_MS) {
            this.store.saveProgress(turn.id, streamed);
            lastFlush = Date.now();
          }
        },
      });
      if (result.promptEvalCount !== null) this.estimator(model).observe(context.messages.map((m) => m.content).join('\n'), result.promptEvalCount);
      const { narration, block } = extractStateBlock(result.text);
      let delta: Record<string, unknown> | null = null;
      let refusals: string[] = [];
      let stateAfter = parentState;
      let applied: Record<string, StateValue> = {};
      if (block !== null) {
        const parsed = parseStateBlock(block);
        if (parsed.error) refusals = [parsed.error];
        if (parsed.delta) {
          delta = parsed.delta;
          const outcome = applyDelta(adventure.statSchema, parentState, parsed.delta);
          stateAfter = outcome.state;
          refusals = outcome.refusals;
          applied = outcome.applied;
        }
      }
      turn = this.store.finishTurn(turn.id, {
        status: 'complete',
        narration,
        error: null,
        stateDelta: delta,
        stateAfter,
        refusals,
        promptEvalCount: result.promptEvalCount,
        evalCount: result.evalCount,
      });
      const outcome: TurnOutcome = { turn, context, error: null, applied, memories: [], memoryError: null, replacedFailures: this.deleteFailedAttempts(turn) };
      if (this.settings.autoMemories) {
        try {
          outcome.memories = await this.writeDueMemories(adventure.id);
        } catch (error) {
          outcome.memoryError = error instanceof Error ? error.message : String(error);
        }
      }
      return outcome;
    } catch (error) {
      return failed(error instanceof Error ? error : new Error(String(error)), context);
    }
  }

  /**
   * A failed attempt is kept only until an attempt at the same action succeeds: the earlier tries at that
   * moment that failed with no reply and nothing after them are deleted, so errors do not pile up as swipes
   * and branches. Nothing the writer typed or read goes: the action lives on in the successful turn.
   */
  private deleteFailedAttempts(success: Turn): DeletedPlay[] {
    const siblings = this.store.children(success.adventureId, success.parentId);
    return siblings
      .filter((t) => t.id !== success.id && t.status === 'error' && t.narration === '' && t.action.kind === success.action.kind && t.action.text === success.action.text)
      .filter((t) => this.store.children(t.adventureId, t.id).length === 0)
      .map((t) => this.store.deleteBranch(t.id));
  }

  // ── memories ───────────────────────────────────────────────────────────────────────────────────

  /** A memory or the summary, bounded to its own small length (the narration's bound is the reply reserve). */
  private async complete(messages: ChatMessage[], maxTokens: number): Promise<string> {
    if (!this.narrator) throw new Error('no narrator model is configured');
    const numCtx = Math.min(this.settings.contextLength, (await this.modelContextLength()) ?? Infinity);
    const result = await this.narrator.generate({ model: this.settings.model, messages, numCtx, maxTokens });
    return cleanMemoryText(result.text);
  }

  private async castFor(adventure: Adventure) {
    return [...castFromSchema(adventure.statSchema), ...(await this.knowledge.cast())];
  }

  /** The memory prompt for one block of turns, exactly as the model would be sent it. */
  async memoryPrompt(adventure: Adventure, block: readonly Turn[]): Promise<ChatMessage[]> {
    return buildMemoryPrompt({ persona: adventure.persona, cast: await this.castFor(adventure), setting: adventure.plotEssentials, block });
  }

  /**
   * Writes the memories the head's lineage is due (one per completed block of `memoryEvery` actions),
   * anchored at each block's last turn so only branches through it see them; then updates the summary.
   */
  async writeDueMemories(adventureId: string): Promise<Memory[]> {
    const adventure = this.store.adventure(adventureId);
    const lineage = this.store.lineage(adventure.headTurnId);
    const every = this.settings.memoryEvery;
    const existing = new Set(this.store.listMemories(adventureId).map((m) => `${m.anchorTurnId}:${m.sourceEnd}`));
    const written: Memory[] = [];
    for (let end = every - 1; end < lineage.length && written.length < MAX_MEMORIES_PER_PASS; end += every) {
      const anchor = lineage[end]!;
      if (anchor.status !== 'complete' || existing.has(`${anchor.id}:${end}`)) continue;
      const block = lineage.slice(end - every + 1, end + 1);
      if (blockText(block, adventure.persona) === '') continue;
      const text = await this.complete(await this.memoryPrompt(adventure, block), MEMORY_REPLY_TOKENS);
      if (!text) continue;
      written.push(this.store.addMemory({ adventureId, anchorTurnId: anchor.id, sourceStart: end - every + 1, sourceEnd: end, text }));
    }
    if (written.length > 0) await this.updateSummary(adventure, written.at(-1)!.anchorTurnId!);
    return written;
  }

  /** Folds the memories written since the previous summary on this lineage into an updated summary. */
  private async updateSummary(adventure: Adventure, anchorTurnId: string): Promise<void> {
    const lineage = this.store.lineage(anchorTurnId);
    const previous = this.store.summaryForLineage(adventure.id, lineage.slice(0, -1));
    const since = previous ? lineage.find((t) => t.id === previous.anchorTurnId)!.depth : -1;
    const memories = this.store
      .memoriesForLineage(adventure.id, lineage)
      .filter((m) => (previous ? m.sourceEnd !== null && m.sourceEnd > since : true))
      .sort((a, b) => (a.sourceEnd ?? -1) - (b.sourceEnd ?? -1));
    const messages = buildSummaryPrompt({
      persona: adventure.persona,
      cast: await this.castFor(adventure),
      setting: adventure.plotEssentials,
      previous: previous?.text ?? null,
      memories,
    });
    const text = await this.complete(messages, SUMMARY_REPLY_TOKENS);
    if (text) this.store.putSummary(adventure.id, anchorTurnId, text);
  }

  /** The turns a memory was written from, read through the lineage it was written on, not today's branch. */
  sourceBlock(memory: Memory): Turn[] | null {
    if (memory.anchorTurnId === null || memory.sourceStart === null || memory.sourceEnd === null) return null;
    const { sourceStart: start, sourceEnd: end } = memory;
    const block = this.store.lineage(memory.anchorTurnId).filter((t) => t.depth >= start && t.depth <= end);
    return block.length === end - start + 1 ? block : null;
  }

  /** Rewrites a memory in place from its source block with the current prompt; pin and anchor are kept. */
  async rewriteMemory(memoryId: string): Promise<Memory> {
    const memory = this.store.memory(memoryId);
    const block = this.sourceBlock(memory);
    if (!block) throw new Error(`memory ${memoryId} has no source block to rewrite from (typed by hand, or its turns are gone)`);
    const text = await this.complete(await this.memoryPrompt(this.store.adventure(memory.adventureId), block), MEMORY_REPLY_TOKENS);
    if (!text) throw new Error(`the model returned no text for memory ${memoryId}; it was left unchanged`);
    return this.store.rewriteMemoryText(memoryId, text);
  }
}

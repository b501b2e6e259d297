import * as vscode from 'vscode';
import type { Campaign } from '../knowledge/campaign';
import { DamagedPlayError } from '../knowledge/indexing';
import { worldInfoLines } from '../knowledge/retrieval';
import { TurnInProgressError, type StoryEngine, type TurnHandlers } from '../story/engine';
import { branchesOf, firstWords, siblingPosition } from '../story/branches';
import { budgetBar, describeContext, playItemName, researchLines, sectionLabel } from '../story/contextReport';
import { campaignAdventure, type PlayStore } from '../story/playStore';
import type { Adventure, AssembledContext, PromptSnapshot, Turn } from '../story/types';
import { hasWorldState, renderStateSection } from '../story/worldState';
import { HostMessage, PanelState, WebviewMessage, type AdventureSetup, type ContextSectionView, type TurnView, type WorldStateView } from '../../webview-ui/protocol';
import type { CampaignIndex } from './campaignIndex';
import { Disposable } from './disposable';
import type { ModelServers } from './modelServers';
import { walkthroughDone } from './walkthrough';
import { hostPage } from './webviewShell';

export const PLAY_VIEW_TYPE = 'storyteller.play';

function turnView(turn: Turn, allTurns: readonly Turn[]): TurnView {
  return {
    id: turn.id,
    actionKind: turn.action.kind,
    action: turn.action.text,
    narration: turn.narration,
    status: turn.status,
    error: turn.error,
    number: turn.depth + 1,
    siblings: siblingPosition(allTurns, turn),
  };
}

/** Where a fork leaves the turns played after it, in words. */
function forkNotice(before: readonly Turn[], headTurnId: string | null, forkedAt: Turn): string {
  const current = branchesOf(before, headTurnId).find((b) => b.current);
  const at = current?.turns.findIndex((t) => t.id === forkedAt.id) ?? -1;
  const later = at >= 0 ? current!.turns.slice(at + 1) : [];
  const from = `Continuing from turn ${forkedAt.depth + 1} ("${firstWords(forkedAt.action.text)}")`;
  if (later.length === 0) return `${from}.`;
  const next = firstWords(later[0]!.action.text);
  const moved = later.length === 1 ? `the later turn, "${next}", stays on its branch` : `the ${later.length} later turns, from "${next}", stay on their branch`;
  return `${from}: ${moved} in the Adventures view. Your next action starts a new branch.`;
}

function setupView(adventure: Adventure): AdventureSetup {
  return { persona: { ...adventure.persona }, plotEssentials: adventure.plotEssentials, authorsNote: adventure.authorsNote };
}

/** A context to show: assembled just now (with its budget), or frozen with a turn (its cost only). */
interface ShownContext extends Pick<AssembledContext, 'sections' | 'retrieval' | 'warnings' | 'research'> {
  used: number;
  total: number | null;
}

const assembled = (context: AssembledContext): ShownContext => ({ ...context, used: context.budget.used, total: context.budget.total });
const frozen = (snapshot: PromptSnapshot): ShownContext => ({
  sections: snapshot.sections,
  retrieval: snapshot.retrieval,
  warnings: snapshot.retrieval.conflicts.map((c) => c.message),
  ...(snapshot.research ? { research: snapshot.research } : {}),
  used: snapshot.totalTokens,
  total: null,
});

/** The context as the panel shows it: each section with its cost, its passages and what was left out, with reasons. */
export function contextView(context: ShownContext, nameOf?: (id: string) => string): Extract<HostMessage, { type: 'context' }> {
  const sections: ContextSectionView[] = describeContext(context, nameOf).map((described) => {
    const { section, items, leftOut } = described;
    return {
      id: section.id,
      title: section.title,
      ...sectionLabel(section),
      tokens: section.tokens,
      budget: section.budget,
      text: section.text,
      items: items.map(({ title, detail }) => ({ title, detail })),
      leftOut: leftOut.map(({ title, detail }) => ({ title, detail })),
      bar: budgetBar(described),
    };
  });
  return {
    type: 'context',
    used: context.used,
    total: context.total,
    sections,
    warnings: context.warnings,
    research: context.research ? researchLines(context.research) : [],
    worldInfo: context.retrieval.worldInfo ? worldInfoLines(context.retrieval.worldInfo) : [],
  };
}

/**
 * One adventure played in a webview panel. The webview only renders and asks; every story rule runs here
 * in the engine, and every message is validated on arrival.
 */
export class PlayPanel extends Disposable {
  private readonly store: PlayStore;
  private readonly engine: StoryEngine;
  private adventure: Adventure;
  private readonly _onDidPlay = this._register(new vscode.EventEmitter<{ playPath: string; turnId: string | null }>());
  /** Fires whenever the adventure's turns or head changed. */
  readonly onDidPlay = this._onDidPlay.event;
  /** The page has loaded and asked for the story: messages posted from now on reach it. */
  private pageReady = false;
  private revealWhenReady: string | undefined;
  /** What the newest notice's button does (Redo, Undo), and its id; none when that notice offers nothing. */
  private offer: { id: string; run: () => void } | undefined;
  private offers = 0;

  constructor(
    readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    readonly campaign: Campaign,
    index: CampaignIndex,
    private readonly servers: ModelServers,
    adventureId?: string,
  ) {
    super();
    this._register(panel);
    // The campaign session's play store and engine: shared with every other surface, closed with the session.
    this.store = index.session.play;
    this.engine = index.session.engine;
    this.adventure =
      (adventureId ? this.store.getAdventure(adventureId) : undefined) ??
      this.store.listAdventures(campaign.id)[0] ??
      this.store.createAdventure(campaignAdventure(campaign, `${campaign.title} — first adventure`));
    panel.title = `Play: ${this.adventure.title}`;
    hostPage(panel, extensionUri, { title: 'Play', style: 'play.css', script: 'webview.js' });
    this._register(panel.webview.onDidReceiveMessage((raw: unknown) => void this.receive(raw)));
    this._register(panel.onDidDispose(() => this.dispose()));
    this._register({ dispose: () => this.engine.stop(this.adventure.id) });
    // The header follows the narrator model and its server as they change (a settings change starts a new
    // check), not only when a turn is played.
    this._register(servers.onDidChange(() => this.postServer()));
  }

  private postServer(): void {
    const { text, problem } = this.servers.describe();
    this.post({ type: 'server', narrator: text, problem });
  }

  /** Draws the story again after its turns changed elsewhere (a turn deleted from the Adventures view, an undo of it). */
  refresh(): void {
    void this.guarded(() => {
      this.postState();
      this.postHeadContext();
    });
  }

  /** Every turn of the adventure, on every branch. */
  allTurns(): Turn[] {
    return this.store.allTurns(this.adventure.id);
  }

  get adventureId(): string {
    return this.adventure.id;
  }

  /** Earlier turns and memories a section carried, by number and first words rather than by id. */
  private readonly nameOf = (id: string): string => playItemName(this.store, this.adventure.id, id);

  /** Plays what the panel's action box holds, as its Do, Say or Story button would (the keybindings' command). */
  sendAction(kind: 'do' | 'say' | 'story'): void {
    this.post({ type: 'send', kind });
  }

  private post(message: HostMessage): void {
    void this.panel.webview.postMessage(HostMessage.parse(message));
  }

  private postState(): void {
    this.adventure = this.store.adventure(this.adventure.id);
    const panelState: PanelState = { campaignRoot: this.campaign.root, adventureId: this.adventure.id };
    const turns = this.store.lineage(this.adventure.headTurnId);
    const allTurns = this.store.allTurns(this.adventure.id);
    this.post({
      type: 'state',
      panelState,
      campaignTitle: this.campaign.title,
      adventure: { id: this.adventure.id, title: this.adventure.title },
      turns: turns.map((turn) => turnView(turn, allTurns)),
      setup: setupView(this.adventure),
      worldState: this.worldStateView(turns.at(-1)),
      generating: this.engine.isGenerating(this.adventure.id),
      model: this.engine.settings.model,
    });
    this._onDidPlay.fire({ playPath: this.campaign.playPath, turnId: this.adventure.headTurnId });
  }

  /** What the head turn was sent, as frozen with it (nothing before the first turn): a reload or a move of the head shows the right one. */
  private postHeadContext(): void {
    const head = this.adventure.headTurnId;
    const snapshot = head ? this.store.getSnapshot(head) : undefined;
    this.post(snapshot ? contextView(frozen(snapshot), this.nameOf) : { type: 'context', used: 0, total: null, sections: [], warnings: [], research: [], worldInfo: [] });
  }

  /** The head's state in the words the narrator is given it, so the writer sees what the model sees. */
  private worldStateView(head: Turn | undefined): WorldStateView {
    const { statSchema, persona } = this.adventure;
    if (!hasWorldState(statSchema)) return { tracked: false, lines: [], changes: [], refusals: [] };
    const now = this.engine.stateAfter(this.adventure.id);
    const before = head ? this.engine.stateAfter(this.adventure.id, head.parentId) : now;
    const changes = Object.entries(now)
      .filter(([path, value]) => before[path] !== value)
      .map(([path, value]) => `${path} → ${String(value)}`);
    return { tracked: true, lines: renderStateSection(statSchema, now, persona).split('\n'), changes, refusals: head?.refusals ?? [] };
  }

  /** What the panel shows as a turn runs; `typed` is the text from the action box, cleared only once stored. */
  private handlers(typed?: string): TurnHandlers {
    return {
      onAccepted: () => {
        if (typed !== undefined) this.post({ type: 'accepted', text: typed });
        this.postState();
      },
      onStarted: (turn, context) => {
        this.postState();
        this.post(contextView(assembled(context), this.nameOf));
        this.post({ type: 'chunk', turnId: turn.id, text: '' });
      },
      onChunk: (text) => {
        const head = this.store.adventure(this.adventure.id).headTurnId;
        if (head) this.post({ type: 'chunk', turnId: head, text });
      },
    };
  }

  private async receive(raw: unknown): Promise<void> {
    const parsed = WebviewMessage.safeParse(raw);
    if (!parsed.success) {
      this.post({ type: 'error', message: `ignored a malformed panel message: ${parsed.error.issues[0]?.message ?? 'invalid'}` });
      return;
    }
    await this.guarded(() => this.handle(parsed.data));
  }

  /** Runs what the writer asked for; what refuses it (a turn still running, a stale turn) is said in the panel. */
  private async guarded(run: () => Promise<void> | void): Promise<void> {
    try {
      await run();
    } catch (error) {
      // State first: it clears the error line, and the writer must still read what went wrong. A story that
      // cannot be read (a play.db damaged by hand) has no state to draw: only what is wrong with it is said.
      if (!(error instanceof DamagedPlayError)) this.postState();
      const refused = error instanceof TurnInProgressError ? ' (Stop ends it; nothing you typed was lost)' : '';
      this.post({ type: 'error', message: `${(error as Error).message}${refused}` });
    }
  }

  /** Steps the head back one turn, saying which and offering Redo: the panel's Undo, and the Adventure Map's. */
  undo(): Promise<void> {
    return this.guarded(() => {
      const undone = this.store.adventure(this.adventure.id).headTurnId;
      this.engine.undo(this.adventure.id);
      this.postState();
      this.postHeadContext();
      if (!undone) return;
      const turn = this.store.turn(undone);
      this.notice(`Undid turn ${turn.depth + 1} ("${firstWords(turn.action.text)}"): it stays in the Adventures view.`, 'Redo', () => {
        this.engine.redo(this.adventure.id, turn.id);
        this.postState();
        this.postHeadContext();
        this.notice(`Redid turn ${turn.depth + 1} ("${firstWords(turn.action.text)}").`);
      });
    });
  }

  /** A line under the story; `label` names a button that runs `offer` (only the newest notice's offer stands). */
  private notice(message: string, label?: string, offer?: () => void): void {
    this.offer = label && offer ? { id: String(++this.offers), run: offer } : undefined;
    this.post({ type: 'notice', message, ...(this.offer ? { offer: { id: this.offer.id, label: label! } } : {}) });
  }

  /** Deletes one reply to a moment and what followed it, offering Undo: nothing is lost to a misclick. */
  deleteReply(turnId: string): Promise<void> {
    return this.guarded(() => {
      const turn = this.store.turn(turnId);
      if (turn.adventureId !== this.adventure.id) throw new Error(`turn ${turnId} belongs to another adventure`);
      if (this.engine.isGenerating(this.adventure.id)) throw new TurnInProgressError(this.adventure.title);
      const deleted = this.store.deleteBranch(turnId);
      this.postState();
      this.postHeadContext();
      const after = deleted.turns.length - 1;
      this.notice(`Deleted a reply to turn ${turn.depth + 1} ("${firstWords(turn.action.text)}")${after > 0 ? ` and the ${after === 1 ? 'turn' : `${after} turns`} after it` : ''}.`, 'Undo', () => {
        this.store.restore(deleted);
        this.postState();
        this.postHeadContext();
        this.notice(`Restored the deleted reply to turn ${turn.depth + 1}.`);
      });
    });
  }

  /** Continues from `turnId`, saying where the later turns went: the panel's "Fork from here", and the map's. */
  fork(turnId: string): Promise<void> {
    return this.guarded(() => {
      const before = this.store.allTurns(this.adventure.id);
      const headBefore = this.store.adventure(this.adventure.id).headTurnId;
      const forkedAt = this.engine.fork(this.adventure.id, turnId);
      this.postState();
      this.postHeadContext();
      this.post({ type: 'notice', message: forkNotice(before, headBefore, forkedAt) });
    });
  }

  /**
   * Opens a turn picked on the Adventure Map: a turn off the story shown becomes current as a swipe to it
   * would make it (the newest story told after it); the panel then scrolls to it.
   */
  openTurn(turnId: string): Promise<void> {
    return this.guarded(() => {
      if (!this.store.lineage(this.store.adventure(this.adventure.id).headTurnId).some((t) => t.id === turnId)) this.switchTo(turnId);
      // A panel opened just now has no page to tell yet: it is told once the page says it is ready.
      if (this.pageReady) this.post({ type: 'reveal', turnId });
      else this.revealWhenReady = turnId;
    });
  }

  private switchTo(turnId: string): void {
    this.engine.switchTo(this.adventure.id, turnId);
    this.postState();
    this.postHeadContext();
  }

  private async handle(message: WebviewMessage): Promise<void> {
    switch (message.type) {
      case 'ready':
        this.pageReady = true;
        this.postState();
        this.postServer();
        this.postHeadContext();
        if (this.revealWhenReady) this.post({ type: 'reveal', turnId: this.revealWhenReady });
        this.revealWhenReady = undefined;
        return;
      case 'fixServer':
        await vscode.commands.executeCommand('storyteller.fixModelServer');
        return;
      case 'stop':
        this.engine.stop(this.adventure.id);
        return;
      case 'undo':
        return this.undo();
      case 'fork':
        return this.fork(message.turnId);
      case 'switch':
        this.switchTo(message.turnId);
        return;
      case 'deleteReply':
        return this.deleteReply(message.turnId);
      case 'takeOffer': {
        const offer = this.offer;
        // A button from an older notice does nothing: what it would take back may have changed since.
        if (offer?.id !== message.id) return;
        this.offer = undefined;
        offer.run();
        return;
      }
      case 'preview':
        walkthroughDone('previewed');
        this.post(contextView(assembled(await this.engine.previewContext(this.adventure.id, { kind: 'do', text: message.text })), this.nameOf));
        return;
      case 'saveSetup':
        // Read by the engine when it assembles the next turn; the turn being generated keeps what it was sent.
        this.store.updateAdventure(this.adventure.id, message.setup);
        this.postState();
        this.post({ type: 'setupSaved' });
        return;
      case 'act':
      case 'retry':
      case 'editAction': {
        const outcome =
          message.type === 'act'
            ? await this.engine.takeTurn(this.adventure.id, { kind: message.kind, text: message.text }, this.handlers(message.text))
            : message.type === 'retry'
              ? await this.engine.retry(this.adventure.id, undefined, this.handlers())
              : await this.engine.editAction(this.adventure.id, message.turnId, message.text, this.handlers());
        // A failed turn shows its own error in the transcript; saying it again below would print it twice.
        this.postState();
        this.servers.afterTurn(outcome.error, outcome.context?.research);
        const replaced = outcome.replacedFailures;
        if (replaced.length > 0) {
          this.notice(`Removed ${replaced.length === 1 ? 'the failed attempt' : `${replaced.length} failed attempts`} at turn ${outcome.turn.depth + 1}: this reply replaces ${replaced.length === 1 ? 'it' : 'them'}.`, 'Undo', () => {
            for (const deleted of replaced) this.store.restore(deleted);
            this.postState();
            this.notice(`Restored ${replaced.length === 1 ? 'the failed attempt' : `${replaced.length} failed attempts`} at turn ${outcome.turn.depth + 1}.`);
          });
        }
        return;
      }
    }
  }
}

import * as vscode from 'vscode';
import type { Campaign } from '../knowledge/campaign';
import { firstWords } from '../story/branches';
import type { StoryEngine } from '../story/engine';
import { campaignAdventure, type DeletedPlay, type PlayStore } from '../story/playStore';
import type { Adventure } from '../story/types';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { PlayPanel } from './playPanel';
import type { PlayPanels } from './playPanels';
import type { AdventuresNode, AdventuresTree } from './playTrees';

type AdventureNode = Extract<AdventuresNode, { kind: 'adventure' }>;
type TurnNode = Extract<AdventuresNode, { kind: 'turn' }>;

/**
 * Adventures as the writer manages them from the Adventures view: start one, play it, rename it, delete
 * it after a modal confirmation that names what goes with it, and delete a turn with what followed it;
 * every delete offers Undo (play data is not derived: a misclick must not lose it).
 */
export class AdventureCommands extends Disposable {
  constructor(
    private readonly knowledge: KnowledgeService,
    private readonly play: PlayPanels,
    private readonly tree: AdventuresTree,
  ) {
    super();
    const register = (id: string, run: (...args: never[]) => unknown): void => {
      this._register(vscode.commands.registerCommand(id, run));
    };
    register('storyteller.newAdventure', (options?: { campaignRoot?: string; title?: string }) => this.newAdventure(options));
    register('storyteller.playAdventure', (node: AdventureNode) => this.playAdventure(node));
    register('storyteller.renameAdventure', (node: AdventureNode, title?: string) => this.rename(node, title));
    register('storyteller.deleteAdventure', (node: AdventureNode) => this.delete(node));
    register('storyteller.deleteTurn', (node: TurnNode) => this.deleteTurn(node));
  }

  private async newAdventure(options: { campaignRoot?: string; title?: string } = {}): Promise<PlayPanel | undefined> {
    const campaign = await this.pickCampaign(options.campaignRoot);
    if (!campaign) return undefined;
    const title = options.title ?? (await vscode.window.showInputBox({ prompt: `A title for the new adventure in ${campaign.title}`, value: `${campaign.title} — new adventure`, validateInput: (v) => (v.trim() ? undefined : 'A title is needed') }));
    if (!title?.trim()) return undefined;
    const adventure = this.playStore(campaign.playPath).createAdventure(campaignAdventure(campaign, title));
    this.tree.refresh();
    return vscode.commands.executeCommand<PlayPanel | undefined>('storyteller.openPlayPanel', { campaignRoot: campaign.root, adventureId: adventure.id });
  }

  private playAdventure(node: AdventureNode): Thenable<PlayPanel | undefined> {
    const open = this.panelsOn(node.adventure).at(-1);
    if (open) {
      open.panel.reveal();
      return Promise.resolve(open);
    }
    const campaign = this.campaignOf(node);
    return vscode.commands.executeCommand<PlayPanel | undefined>('storyteller.openPlayPanel', { campaignRoot: campaign?.root, adventureId: node.adventure.id });
  }

  private async rename(node: AdventureNode, given?: string): Promise<Adventure | undefined> {
    const title = given ?? (await vscode.window.showInputBox({ prompt: 'Rename the adventure', value: node.adventure.title, validateInput: (v) => (v.trim() ? undefined : 'A title is needed') }));
    if (!title?.trim()) return undefined;
    const renamed = this.playStore(node.playPath).updateAdventure(node.adventure.id, { title });
    for (const panel of this.panelsOn(renamed)) panel.panel.title = `Play: ${renamed.title}`;
    this.tree.refresh();
    return renamed;
  }

  private async delete(node: AdventureNode): Promise<boolean> {
    const store = this.playStore(node.playPath);
    const turns = store.allTurns(node.adventure.id).length;
    const choice = await vscode.window.showWarningMessage(
      `Delete the adventure '${node.adventure.title}'?`,
      { modal: true, detail: `Its ${turns} turn${turns === 1 ? '' : 's'}, memories and prompt snapshots are deleted from play.db. Until this window closes, Undo in the notification brings them back; export the campaign first to keep a copy for good.` },
      'Delete Adventure',
    );
    if (choice !== 'Delete Adventure') return false;
    for (const panel of this.panelsOn(node.adventure)) panel.dispose();
    this.offerUndo(store, store.deleteAdventure(node.adventure.id), `Deleted the adventure '${node.adventure.title}'${turns === 0 ? '' : ` and its ${turns === 1 ? 'turn' : `${turns} turns`}`}.`);
    return true;
  }

  /** Deletes a turn and every turn after it on its branches (a reply, a branch); Undo in the notification puts them back. */
  private deleteTurn(node: TurnNode): DeletedPlay {
    const store = this.playStore(node.playPath);
    const panels = this.panelsOn(node.adventure);
    if (this.engineOf(node.playPath).isGenerating(node.adventure.id)) throw new Error(`a turn of '${node.adventure.title}' is still being generated; wait for it or stop it first`);
    const deleted = store.deleteBranch(node.turn.id);
    for (const panel of panels) panel.refresh();
    const after = deleted.turns.length - 1;
    this.offerUndo(store, deleted, `Deleted turn ${node.turn.depth + 1} ("${firstWords(node.turn.action.text)}")${after > 0 ? ` and the ${after === 1 ? 'turn' : `${after} turns`} after it` : ''} from '${node.adventure.title}'.`);
    return deleted;
  }

  private offerUndo(store: PlayStore, deleted: DeletedPlay, message: string): void {
    this.tree.refresh();
    void vscode.window.showInformationMessage(message, 'Undo').then((answer) => {
      if (answer !== 'Undo') return;
      store.restore(deleted);
      for (const panel of this.play.list().filter((p) => p.adventureId === deleted.adventureId)) panel.refresh();
      this.tree.refresh();
      void vscode.window.showInformationMessage(`Restored: ${message.replace(/^Deleted /, '')}`);
    });
  }

  private panelsOn(adventure: Adventure): PlayPanel[] {
    return this.play.list().filter((panel) => panel.adventureId === adventure.id);
  }

  private campaignOf(node: AdventureNode): Campaign | undefined {
    return this.knowledge.list().find((index) => index.campaign.playPath === node.playPath)?.campaign;
  }

  private async pickCampaign(root?: string): Promise<Campaign | undefined> {
    const indexes = this.knowledge.list();
    if (root) return this.knowledge.get(root)?.campaign;
    if (indexes.length <= 1) return indexes[0]?.campaign;
    const picked = await vscode.window.showQuickPick(indexes.map((index) => ({ label: index.campaign.title, campaign: index.campaign })), { placeHolder: 'Which campaign?' });
    return picked?.campaign;
  }

  private engineOf(playPath: string): StoryEngine {
    const index = this.knowledge.list().find((i) => i.campaign.playPath === playPath);
    if (!index) throw new Error(`${playPath}: its campaign is no longer open in this workspace`);
    return index.session.engine;
  }

  /** The play store of the campaign's session: the one connection every surface shares. */
  private playStore(playPath: string): PlayStore {
    const index = this.knowledge.list().find((i) => i.campaign.playPath === playPath);
    if (!index) throw new Error(`${playPath}: its campaign is no longer open in this workspace`);
    return index.session.play;
  }
}

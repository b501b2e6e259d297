import * as vscode from 'vscode';
import type { Campaign } from '../knowledge/campaign';
import { campaignAdventure, type PlayStore } from '../story/playStore';
import type { Adventure } from '../story/types';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { PlayPanel } from './playPanel';
import type { PlayPanels } from './playPanels';
import type { AdventuresNode, AdventuresTree } from './playTrees';

type AdventureNode = Extract<AdventuresNode, { kind: 'adventure' }>;

/**
 * Adventures as the writer manages them from the Adventures view: start one, play it, rename it, and
 * delete it only after a modal confirmation that names what goes with it (play data is not derived).
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
    const turns = this.playStore(node.playPath).allTurns(node.adventure.id).length;
    const choice = await vscode.window.showWarningMessage(
      `Delete the adventure '${node.adventure.title}'?`,
      { modal: true, detail: `Its ${turns} turn${turns === 1 ? '' : 's'}, memories and prompt snapshots are deleted from play.db and cannot be recovered. Export the campaign first to keep a copy.` },
      'Delete Adventure',
    );
    if (choice !== 'Delete Adventure') return false;
    for (const panel of this.panelsOn(node.adventure)) panel.dispose();
    this.playStore(node.playPath).deleteAdventure(node.adventure.id);
    this.tree.refresh();
    return true;
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

  /** The play store of the campaign's session: the one connection every surface shares. */
  private playStore(playPath: string): PlayStore {
    const index = this.knowledge.list().find((i) => i.campaign.playPath === playPath);
    if (!index) throw new Error(`${playPath}: its campaign is no longer open in this workspace`);
    return index.session.play;
  }
}

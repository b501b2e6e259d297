import * as vscode from 'vscode';
import { DamagedPlayError } from '../knowledge/indexing';
import { PanelState } from '../../webview-ui/protocol';
import type { CampaignRegistry } from './campaigns';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import { PLAY_VIEW_TYPE, PlayPanel } from './playPanel';
import type { ModelServers } from './modelServers';
import { walkthroughDone } from './walkthrough';
import { campaignAdventure } from '../story/playStore';

/** Which adventure's panel to open, and for a caller in an editor (the Adventure Map): its column, never covered, and whether it keeps the focus. */
export interface OpenPlayPanelOptions {
  campaignRoot?: string;
  adventureId?: string;
  beside?: vscode.ViewColumn;
  preserveFocus?: boolean;
}

/** Opens play panels, and brings them back after a reload from the state each webview saved. */
export class PlayPanels extends Disposable {
  private readonly open = new Set<PlayPanel>();
  private readonly _onDidPlay = this._register(new vscode.EventEmitter<{ playPath: string; turnId: string | null }>());
  /** Any panel's adventure changed: the trees re-read, provenance follows the head. */
  readonly onDidPlay = this._onDidPlay.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly servers: ModelServers,
  ) {
    super();
    this._register(
      vscode.commands.registerCommand('storyteller.openPlayPanel', (options?: OpenPlayPanelOptions) => this.openPanel(options)),
    );
    // The keybindings' commands (Ctrl+Enter and its kin, while a play panel is active) play its action box.
    for (const kind of ['do', 'say', 'story'] as const) {
      this._register(vscode.commands.registerCommand(`storyteller.play.${kind}`, () => this.list().find((p) => p.panel.active)?.sendAction(kind)));
    }
    this._register(
      vscode.window.registerWebviewPanelSerializer(PLAY_VIEW_TYPE, {
        deserializeWebviewPanel: async (panel, state: unknown) => {
          const saved = PanelState.safeParse(state);
          if (!saved.success || !(await this.adopt(panel, saved.data.campaignRoot, saved.data.adventureId))) panel.dispose();
        },
      }),
    );
    this._register({ dispose: () => this.open.forEach((p) => p.dispose()) });
  }

  /** Panels open right now (newest last). */
  list(): PlayPanel[] {
    return [...this.open];
  }

  private async openPanel(options: OpenPlayPanelOptions = {}): Promise<PlayPanel | undefined> {
    await this.campaigns.ready();
    const indexes = this.knowledge.list();
    const index = options.campaignRoot
      ? this.knowledge.get(options.campaignRoot)
      : indexes.length <= 1
        ? indexes[0]
        : (await vscode.window.showQuickPick(indexes.map((i) => ({ label: i.campaign.title, index: i })), { placeHolder: 'Play which campaign?' }))?.index;
    if (!index) {
      void vscode.window.showInformationMessage('No campaign to play: a campaign is a folder with a campaign.yaml.');
      return undefined;
    }
    // One panel per adventure: a second would run a second engine whose turns race the first's for the head.
    const open = this.list().find((p) => p.campaign.root === index.campaign.root && (options.adventureId === undefined || p.adventureId === options.adventureId));
    const { beside, preserveFocus } = options;
    if (open) {
      // Revealed where it is, unless that would hide the caller's editor behind it: then in the group after it.
      open.panel.reveal(beside !== undefined && open.panel.viewColumn === beside ? beside + 1 : undefined, preserveFocus);
      return open;
    }
    const panel = vscode.window.createWebviewPanel(PLAY_VIEW_TYPE, 'Play', { viewColumn: beside === undefined ? vscode.ViewColumn.Beside : beside + 1, preserveFocus }, { enableScripts: true });
    return this.adopt(panel, index.campaign.root, options.adventureId);
  }

  private async adopt(panel: vscode.WebviewPanel, campaignRoot: string, adventureId?: string): Promise<PlayPanel | undefined> {
    await this.campaigns.ready();
    const index = this.knowledge.get(campaignRoot);
    if (!index) return undefined;
    try {
      // A campaign.yaml whose stats block is wrong is named before anything is opened for the panel.
      campaignAdventure(index.campaign, index.campaign.title);
    } catch (error) {
      panel.dispose();
      void vscode.window.showErrorMessage((error as Error).message);
      return undefined;
    }
    let play: PlayPanel;
    try {
      play = new PlayPanel(panel, this.extensionUri, index.campaign, index, this.servers, adventureId);
    } catch (error) {
      // An adventure whose head or stat schema cannot be read is named, and no panel is left open on it.
      if (!(error instanceof DamagedPlayError)) throw error;
      panel.dispose();
      void vscode.window.showErrorMessage(error.message);
      return undefined;
    }
    walkthroughDone('played');
    this.open.add(play);
    play.onDidPlay((event) => this._onDidPlay.fire(event));
    panel.onDidDispose(() => this.open.delete(play));
    return play;
  }
}

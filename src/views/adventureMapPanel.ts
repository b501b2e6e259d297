import path from 'node:path';
import * as vscode from 'vscode';
import { DamagedPlayError } from '../knowledge/indexing';
import { adventureMap } from '../story/adventureMap';
import { MapHostMessage, MapState, MapWebviewMessage } from '../../webview-ui/map/protocol';
import type { CampaignIndex } from './campaignIndex';
import type { CampaignRegistry } from './campaigns';
import { Disposable } from './disposable';
import type { KnowledgeService } from './knowledgeService';
import type { PlayPanel } from './playPanel';
import type { OpenPlayPanelOptions, PlayPanels } from './playPanels';
import type { AdventuresNode, AdventuresTree } from './playTrees';
import { hostPage, KeyedPanels } from './webviewShell';

export const MAP_VIEW_TYPE = 'storyteller.adventureMap';

/** Which adventure to draw: a campaign's adventure by id. */
export type MapTarget = MapState;

/**
 * One adventure's turns as a tree picture. It follows the adventure as the Adventures view does (every
 * play, fork, undo, rename), and acts through the adventure's play panel, so a turn opened, forked or undone
 * here is what the panel then shows, with its notices.
 */
export class AdventureMapPanel extends Disposable {
  constructor(
    readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    readonly target: MapTarget,
    private readonly knowledge: KnowledgeService,
    onDidChangeAdventures: vscode.Event<unknown>,
  ) {
    super();
    this._register(panel);
    hostPage(panel, extensionUri, { title: 'Adventure map', style: 'map.css', script: 'map.js' });
    this._register(panel.webview.onDidReceiveMessage((raw: unknown) => void this.receive(raw)));
    this._register(onDidChangeAdventures(() => this.postMap()));
    this._register(panel.onDidDispose(() => this.dispose()));
  }

  private index(): CampaignIndex | undefined {
    return this.knowledge.get(this.target.campaignRoot);
  }

  /** What the picture shows; undefined once the adventure or its campaign is gone. */
  map(): Extract<MapHostMessage, { type: 'map' }> | undefined {
    const index = this.index();
    const adventure = index?.session.playIfAny?.getAdventure(this.target.adventureId);
    if (!index || !adventure) return undefined;
    const play = index.session.play;
    const shaped = adventureMap(play.allTurns(adventure.id), adventure.headTurnId, play.listMemories(adventure.id));
    return { type: 'map', target: this.target, campaignTitle: index.campaign.title, adventureTitle: adventure.title, generating: index.session.engine.isGenerating(adventure.id), ...shaped };
  }

  private postMap(): void {
    let map: ReturnType<AdventureMapPanel['map']>;
    try {
      map = this.map();
    } catch (error) {
      // A story that cannot be read (a play.db damaged by hand) is named rather than drawn.
      if (!(error instanceof DamagedPlayError)) throw error;
      void vscode.window.showErrorMessage(error.message);
      this.dispose();
      return;
    }
    // The adventure was deleted or its campaign closed: nothing left to draw.
    if (!map) {
      this.dispose();
      return;
    }
    this.panel.title = `Map: ${map.adventureTitle}`;
    void this.panel.webview.postMessage(MapHostMessage.parse(map));
  }

  /** The adventure's play panel, beside the map (opened there when it is not open yet); the map keeps the focus. */
  private playPanel(): Thenable<PlayPanel | undefined> {
    const options: OpenPlayPanelOptions = { ...this.target, beside: this.panel.viewColumn, preserveFocus: true };
    return vscode.commands.executeCommand<PlayPanel | undefined>('storyteller.openPlayPanel', options);
  }

  private async receive(raw: unknown): Promise<void> {
    const parsed = MapWebviewMessage.safeParse(raw);
    if (!parsed.success) return;
    const message = parsed.data;
    if (message.type === 'ready') return this.postMap();
    const panel = await this.playPanel();
    if (message.type === 'open') await panel?.openTurn(message.turnId);
    else if (message.type === 'fork') await panel?.fork(message.turnId);
    else await panel?.undo();
  }
}

type AdventureNode = Extract<AdventuresNode, { kind: 'adventure' }>;

/** Open Adventure Map: one map per adventure, brought forward when opened again, and back after a window reload. */
export class AdventureMaps extends Disposable {
  private readonly maps = this._register(new KeyedPanels<AdventureMapPanel>());

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly play: PlayPanels,
    private readonly adventures: AdventuresTree,
  ) {
    super();
    this._register(vscode.commands.registerCommand('storyteller.openAdventureMap', (arg?: MapTarget | AdventureNode) => this.open(arg)));
    this._register(vscode.window.registerWebviewPanelSerializer(MAP_VIEW_TYPE, { deserializeWebviewPanel: async (panel, state: unknown) => void (await this.restore(panel, state)) }));
  }

  list(): AdventureMapPanel[] {
    return this.maps.list();
  }

  /** From a tree node, a target, the play panel in front, or else the writer's pick. */
  private async targetOf(arg?: MapTarget | AdventureNode): Promise<MapTarget | undefined> {
    if (arg && 'campaignRoot' in arg) return { campaignRoot: path.resolve(arg.campaignRoot), adventureId: arg.adventureId };
    if (arg) {
      const index = this.knowledge.list().find((i) => i.campaign.playPath === arg.playPath);
      return index && { campaignRoot: index.campaign.root, adventureId: arg.adventure.id };
    }
    const active = this.play.list().find((p) => p.panel.active);
    if (active) return { campaignRoot: active.campaign.root, adventureId: active.adventureId };
    const choices = this.knowledge.list().flatMap((index) =>
      (index.session.playIfAny?.listAdventures(index.campaign.id) ?? []).map((adventure) => ({
        label: adventure.title,
        description: index.campaign.title,
        target: { campaignRoot: index.campaign.root, adventureId: adventure.id },
      })),
    );
    if (choices.length <= 1) return choices[0]?.target;
    return (await vscode.window.showQuickPick(choices, { placeHolder: 'Map which adventure?' }))?.target;
  }

  async open(arg?: MapTarget | AdventureNode): Promise<AdventureMapPanel | undefined> {
    const target = await this.targetOf(arg);
    const adventure = target && this.knowledge.get(target.campaignRoot)?.session.playIfAny?.getAdventure(target.adventureId);
    if (!target || !adventure) {
      void vscode.window.showInformationMessage('No adventure to map: start one in the Adventures view (New Adventure) or open the play panel.');
      return undefined;
    }
    // Beside the adventure's play panel, never over it: clicking a turn shows it in the panel with the map still in view.
    const playing = this.play.list().find((p) => p.campaign.root === target.campaignRoot && p.adventureId === target.adventureId)?.panel.viewColumn;
    const column = playing === undefined ? vscode.ViewColumn.Active : playing + 1;
    return this.maps.revealOrCreate(mapKey(target), () => this.adopt(vscode.window.createWebviewPanel(MAP_VIEW_TYPE, `Map: ${adventure.title}`, column, { enableScripts: true }), target));
  }

  /**
   * A map the window had open before it reloaded, from the adventure its webview saved. Closed instead when
   * that adventure or its campaign is gone, or its map is already open.
   */
  async restore(panel: vscode.WebviewPanel, state: unknown): Promise<AdventureMapPanel | undefined> {
    const saved = MapState.safeParse(state);
    await this.campaigns.ready();
    const target = saved.success ? saved.data : undefined;
    const adventure = target && this.knowledge.get(target.campaignRoot)?.session.playIfAny?.getAdventure(target.adventureId);
    return this.maps.adopt(adventure ? mapKey(target!) : undefined, panel, () => this.adopt(panel, target!));
  }

  private adopt(panel: vscode.WebviewPanel, target: MapTarget): AdventureMapPanel {
    return new AdventureMapPanel(panel, this.extensionUri, target, this.knowledge, this.adventures.onDidChangeTreeData);
  }
}

function mapKey(target: MapTarget): string {
  return `${target.campaignRoot}\n${target.adventureId}`;
}

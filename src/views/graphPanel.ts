import crypto from 'node:crypto';
import path from 'node:path';
import * as vscode from 'vscode';
import { entityLinks } from '../knowledge/entities';
import { GraphHostMessage, GraphWebviewMessage } from '../../webview-ui/graph/protocol';
import type { CampaignRegistry } from './campaigns';
import type { CodexTree } from './codexTree';
import { campaignTarget } from './commands';
import { Disposable } from './disposable';
import type { EntityLanguage } from './entityLanguage';
import type { KnowledgeService } from './knowledgeService';
import type { SourcesNode } from './sourcesTree';

export const GRAPH_VIEW_TYPE = 'storyteller.graph';

/**
 * One campaign's entity model as a picture in a webview: the Codex's entities with the mentions between
 * their files. It follows the model as it is rebuilt; the webview keeps its layout across refreshes.
 */
export class GraphPanel extends Disposable {
  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    readonly root: string,
    private readonly campaignTitle: string,
    private readonly language: EntityLanguage,
    private readonly codex: CodexTree,
  ) {
    super();
    this._register(panel);
    panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'storyteller.svg');
    panel.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')] };
    panel.webview.html = this.html(panel.webview);
    this._register(panel.webview.onDidReceiveMessage((raw: unknown) => void this.receive(raw)));
    this._register(language.onDidChangeModels(() => this.postGraph()));
    this._register(panel.onDidDispose(() => this.dispose()));
  }

  /** What the picture shows: every canon entity with its marks, and who mentions whom. */
  graph(): Extract<GraphHostMessage, { type: 'graph' }> {
    const model = this.language.modelOf(this.root);
    const entries = this.codex.entries(this.root);
    const nodes = entries.map(({ entity, mentions, mentioningFiles, retrieved }) => ({
      id: entity.key,
      label: entity.display,
      kind: entity.kind,
      mentions,
      path: entity.definitions[0]?.path ?? '',
      summary: entity.summary,
      neverMentioned: mentioningFiles.length === 0,
      neverRetrieved: retrieved === false,
    }));
    const edges = model ? entityLinks(model).map(({ from, to, count, linked }) => ({ from, to, count, linked })) : [];
    return { type: 'graph', campaignTitle: this.campaignTitle, nodes, edges };
  }

  private postGraph(): void {
    void this.panel.webview.postMessage(GraphHostMessage.parse(this.graph()));
  }

  /** Opens the entity's defining file at its heading, beside the graph. */
  async openEntity(key: string): Promise<vscode.TextEditor | undefined> {
    const definition = this.language.modelOf(this.root)?.entity(key)?.definitions[0];
    if (!definition) return undefined;
    const uri = vscode.Uri.file(path.join(this.root, ...definition.path.split('/')));
    const at = new vscode.Range(definition.line, 0, definition.line, 0);
    return vscode.window.showTextDocument(uri, { selection: at, viewColumn: vscode.ViewColumn.Beside, preview: true });
  }

  private async receive(raw: unknown): Promise<void> {
    const parsed = GraphWebviewMessage.safeParse(raw);
    if (!parsed.success) return;
    if (parsed.data.type === 'ready') this.postGraph();
    else await this.openEntity(parsed.data.id);
  }

  private html(webview: vscode.Webview): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const asset = (...segments: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, ...segments)).toString();
    // As the play panel: nothing remote, no script without the nonce; entity names reach the page only as text.
    const csp = ["default-src 'none'", `script-src 'nonce-${nonce}'`, `style-src ${webview.cspSource}`, `font-src ${webview.cspSource}`, `img-src ${webview.cspSource}`].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset('media', 'graph.css')}">
<title>Campaign graph</title>
</head>
<body>
<main id="app"></main>
<script nonce="${nonce}" src="${asset('dist', 'graph.js')}"></script>
</body>
</html>`;
  }
}

/** The Campaign Graph command: one panel per campaign, brought forward when opened again. */
export class GraphPanels extends Disposable {
  private readonly panels = new Map<string, GraphPanel>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly language: EntityLanguage,
    private readonly codex: CodexTree,
  ) {
    super();
    this._register(vscode.commands.registerCommand('storyteller.openCampaignGraph', (arg?: { campaignRoot: string } | SourcesNode | { root: string }) => this.open(arg)));
    this._register({ dispose: () => [...this.panels.values()].forEach((p) => p.dispose()) });
  }

  get(root: string): GraphPanel | undefined {
    return this.panels.get(root);
  }

  async open(arg?: { campaignRoot: string } | SourcesNode | { root: string }): Promise<GraphPanel | undefined> {
    const index = arg && 'campaignRoot' in arg ? this.knowledge.get(path.resolve(arg.campaignRoot)) : await campaignTarget(this.campaigns, this.knowledge, arg as SourcesNode | undefined);
    if (!index) {
      void vscode.window.showInformationMessage('No campaign here: a campaign is a folder with a campaign.yaml (Storyteller: New Campaign).');
      return undefined;
    }
    const root = index.campaign.root;
    const open = this.panels.get(root);
    if (open) {
      open.panel.reveal();
      return open;
    }
    const webview = vscode.window.createWebviewPanel(GRAPH_VIEW_TYPE, `Graph: ${index.campaign.title}`, vscode.ViewColumn.Active, { enableScripts: true });
    const panel = new GraphPanel(webview, this.extensionUri, root, index.campaign.title, this.language, this.codex);
    this.panels.set(root, panel);
    panel.panel.onDidDispose(() => this.panels.delete(root));
    return panel;
  }
}

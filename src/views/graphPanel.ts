import path from 'node:path';
import * as vscode from 'vscode';
import { isOpenConflict, type SuggestedQuote } from '../knowledge/conflicts';
import { entitiesByFile, entityLinks, mentioningSources, type Entity } from '../knowledge/entities';
import { GraphHostMessage, GraphState, GraphWebviewMessage, type GraphNode } from '../../webview-ui/graph/protocol';
import type { CampaignRegistry } from './campaigns';
import type { CodexTree } from './codexTree';
import { campaignTarget } from './commands';
import type { ConflictFeatures } from './conflicts';
import { Disposable } from './disposable';
import type { EntityLanguage } from './entityLanguage';
import type { CampaignIndex } from './campaignIndex';
import type { KnowledgeService } from './knowledgeService';
import type { SourcesNode } from './sourcesTree';
import { hostPage, KeyedPanels } from './webviewShell';

export const GRAPH_VIEW_TYPE = 'storyteller.graph';

/** Reference and Inspiration files are nodes beside the entities, told apart by this prefix on their path. */
const FILE_NODE = 'file:';

/** The sources superseding every canon file that defines `entity`; none when one of those files still stands. */
function supersededOnly(entity: Entity, supersededBy: ReadonlyMap<string, readonly string[]>): string[] {
  const canon = entity.definitions.filter((d) => d.class === 'canon');
  if (canon.length === 0 || !canon.every((d) => supersededBy.has(d.path))) return [];
  return [...new Set(canon.flatMap((d) => supersededBy.get(d.path)!))].sort();
}

/** What the picture says of one side of a conflict. */
const side = ({ value, path, line }: { value: string; path: string; line: number }) => ({ value, path, line });

/**
 * One campaign's entity model as a picture in a webview: the Codex's entities with the mentions between
 * their files, the Reference and Inspiration files that name them, and where canon contradicts itself. It
 * follows the model and the conflict analysis as they are rebuilt; the webview keeps its layout across refreshes.
 */
export class GraphPanel extends Disposable {
  constructor(
    readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    readonly root: string,
    private readonly campaignTitle: string,
    private readonly language: EntityLanguage,
    private readonly codex: CodexTree,
    private readonly conflicts: ConflictFeatures,
    /** The campaign's last layout, shared by its panels: a reopened or re-shown graph starts from it. */
    private readonly layout: { placed: [string, number, number][] },
  ) {
    super();
    this._register(panel);
    // Entity names and file text reach the page only as text, under the shell's CSP.
    hostPage(panel, extensionUri, { title: 'Campaign graph', style: 'graph.css', script: 'graph.js' });
    this._register(panel.webview.onDidReceiveMessage((raw: unknown) => void this.receive(raw)));
    this._register(language.onDidChangeModels(() => this.postGraph()));
    this._register(conflicts.onDidRefresh(() => this.postGraph()));
    this._register(panel.onDidDispose(() => this.dispose()));
  }

  /** What the picture shows: every canon entity with its marks, the files beside canon naming them, who mentions whom, and canon's conflicts. */
  graph(): Extract<GraphHostMessage, { type: 'graph' }> {
    const model = this.language.modelOf(this.root);
    const analysis = this.conflicts.analysisOf(this.root);
    const supersededBy = analysis?.supersededBy ?? new Map<string, readonly string[]>();
    const nodes: GraphNode[] = this.codex.entries(this.root).map(({ entity, mentions, mentioningFiles, retrieved }) => ({
      id: entity.key,
      label: entity.display,
      kind: entity.group,
      mentions,
      weakMentions: 0,
      path: entity.definitions[0]?.path ?? '',
      summary: entity.summary,
      neverMentioned: mentioningFiles.length === 0,
      neverRetrieved: retrieved === false,
      class: 'canon',
      supersededBy: supersededOnly(entity, supersededBy),
    }));
    if (!model) return { type: 'graph', campaignRoot: this.root, campaignTitle: this.campaignTitle, nodes, edges: [], conflicts: [], suggestions: [], placed: [] };
    const files = mentioningSources(model);
    for (const file of files) {
      nodes.push({
        id: `${FILE_NODE}${file.path}`,
        label: file.title || file.path,
        kind: model.groupOf(model.source(file.path)!),
        mentions: file.links.reduce((n, l) => n + l.count, 0),
        weakMentions: file.links.reduce((n, l) => n + l.weak, 0),
        path: file.path,
        summary: '',
        neverMentioned: false,
        neverRetrieved: false,
        class: file.class,
        supersededBy: [],
      });
    }
    const edges = [...entityLinks(model), ...files.flatMap((f) => f.links.map((l) => ({ ...l, from: `${FILE_NODE}${f.path}` })))].map(({ from, to, count, weak, linked }) => ({ from, to, count, weak, linked }));
    // A conflict joins the entities its two files define: the disputed entity where a file defines it.
    const definedIn = entitiesByFile(model);
    const holder = (path: string, entityKey: string) => {
      const defined = definedIn.get(path) ?? [];
      return defined.includes(entityKey) ? entityKey : defined[0];
    };
    const conflicts = (analysis?.conflicts ?? []).filter(isOpenConflict).flatMap((c) => {
      const [from, to] = [holder(c.a.path, c.entityKey), holder(c.b.path, c.entityKey)];
      if (!from || !to) return [];
      return [{ from, to, entity: c.entity, attribute: c.attribute, a: side(c.a), b: side(c.b) }];
    });
    // The model names the entity in its own words: the one the campaign knows by that name, if any.
    const suggestions = this.conflicts.suggestionsOf(this.root).flatMap((s) => {
      const key = model.resolveName(s.entity)?.key ?? '';
      const [from, to] = [holder(s.a.sourcePath, key), holder(s.b.sourcePath, key)];
      if (!from || !to) return [];
      const quoted = ({ quote, sourcePath, line }: SuggestedQuote) => ({ quote, path: sourcePath, line });
      return [{ from, to, entity: s.entity, explanation: s.explanation, a: quoted(s.a), b: quoted(s.b) }];
    });
    return { type: 'graph', campaignRoot: this.root, campaignTitle: this.campaignTitle, nodes, edges, conflicts, suggestions, placed: [] };
  }

  /** `fresh`: the webview has just loaded and has no layout of its own yet. */
  private postGraph(fresh = false): void {
    const message = { ...this.graph(), placed: fresh ? this.layout.placed : [] };
    void this.panel.webview.postMessage(GraphHostMessage.parse(message));
  }

  /** Opens a node's file beside the graph: an entity's defining file at its heading, a Reference or Inspiration file at its top. */
  async openNode(id: string): Promise<vscode.TextEditor | undefined> {
    if (id.startsWith(FILE_NODE)) return this.openAt(id.slice(FILE_NODE.length), 1);
    const definition = this.language.modelOf(this.root)?.entity(id)?.definitions[0];
    return definition ? this.openAt(definition.path, definition.line + 1) : undefined;
  }

  /** Opens a campaign file the model knows (never a path the webview made up) at a 1-based line. */
  private async openAt(relPath: string, line: number): Promise<vscode.TextEditor | undefined> {
    if (!this.language.modelOf(this.root)?.source(relPath)) return undefined;
    const uri = vscode.Uri.file(path.join(this.root, ...relPath.split('/')));
    const at = new vscode.Range(line - 1, 0, line - 1, 0);
    return vscode.window.showTextDocument(uri, { selection: at, viewColumn: vscode.ViewColumn.Beside, preview: true });
  }

  private async receive(raw: unknown): Promise<void> {
    const parsed = GraphWebviewMessage.safeParse(raw);
    if (!parsed.success) return;
    const message = parsed.data;
    if (message.type === 'ready') this.postGraph(true);
    else if (message.type === 'placed') this.layout.placed = message.placed;
    else if (message.type === 'open') await this.openNode(message.id);
    else await this.openAt(message.path, message.line);
  }
}

/** The Campaign Graph command: one panel per campaign, brought forward when opened again, and back after a window reload. */
export class GraphPanels extends Disposable {
  private readonly panels = this._register(new KeyedPanels<GraphPanel>());
  /** Each campaign's last layout, kept while the extension runs (a closed graph reopens on the same picture). */
  private readonly layouts = new Map<string, { placed: [string, number, number][] }>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly campaigns: CampaignRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly language: EntityLanguage,
    private readonly codex: CodexTree,
    private readonly conflicts: ConflictFeatures,
  ) {
    super();
    this._register(vscode.commands.registerCommand('storyteller.openCampaignGraph', (arg?: { campaignRoot: string } | SourcesNode | { root: string }) => this.open(arg)));
    this._register(vscode.window.registerWebviewPanelSerializer(GRAPH_VIEW_TYPE, { deserializeWebviewPanel: async (panel, state: unknown) => void (await this.restore(panel, state)) }));
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
    return this.panels.revealOrCreate(index.campaign.root, () =>
      this.adopt(vscode.window.createWebviewPanel(GRAPH_VIEW_TYPE, `Graph: ${index.campaign.title}`, vscode.ViewColumn.Active, { enableScripts: true }), index),
    );
  }

  /**
   * A graph the window had open before it reloaded, from the state its webview saved: drawn again on the
   * layout it had. Closed instead when that campaign is no longer open here, or its graph already is.
   */
  async restore(panel: vscode.WebviewPanel, state: unknown): Promise<GraphPanel | undefined> {
    const saved = GraphState.safeParse(state);
    await this.campaigns.ready();
    const index = saved.success ? this.knowledge.get(saved.data.campaignRoot) : undefined;
    // The webview saved its layout with every picture it drew: the newest there is.
    const placed = saved.data?.placed ?? [];
    return this.panels.adopt(index?.campaign.root, panel, () => {
      this.layouts.set(index!.campaign.root, { placed });
      return this.adopt(panel, index!);
    });
  }

  private adopt(panel: vscode.WebviewPanel, index: CampaignIndex): GraphPanel {
    const root = index.campaign.root;
    if (!this.layouts.has(root)) this.layouts.set(root, { placed: [] });
    return new GraphPanel(panel, this.extensionUri, root, index.campaign.title, this.language, this.codex, this.conflicts, this.layouts.get(root)!);
  }
}

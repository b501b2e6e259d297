import Database from 'better-sqlite3';
import * as vscode from 'vscode';
import { assertFts5 } from './knowledge/indexing';
import { toolChatFor } from './models';
import { CampaignRegistry } from './views/campaigns';
import { AdventureCommands } from './views/adventureCommands';
import { AdventureMaps } from './views/adventureMapPanel';
import { Commands } from './views/commands';
import { CodexTree } from './views/codexTree';
import { GraphPanels } from './views/graphPanel';
import { ConflictFeatures } from './views/conflicts';
import { SourceDiagnostics } from './views/diagnostics';
import { Disposable } from './views/disposable';
import { EntityLanguage } from './views/entityLanguage';
import { EvaluateResearchCommand } from './views/evaluateResearchCommand';
import { HealthCommand } from './views/healthCommand';
import { InterchangeCommands } from './views/interchangeCommands';
import { KnowledgeService } from './views/knowledgeService';
import { PassagesTree } from './views/passagesTree';
import { PlayPanels } from './views/playPanels';
import { AdventuresTree, PlayReaders, ProvenanceTree } from './views/playTrees';
import type { PassageNode } from './views/passagesTree';
import { ReportDocuments } from './views/reportDocuments';
import { Settings } from './views/settings';
import { SourcesTree } from './views/sourcesTree';
import { StatusBar } from './views/statusBar';
import { ModelServers } from './views/modelServers';
import { WorkspaceToolSupport } from './views/toolSupport';
import { ProposalCommands } from './views/proposals';
import { TranscriptDocuments } from './views/transcripts';
import { WorkspaceServers } from './views/workspaceServers';

/** What the extension hands to other extensions and to the integration suite. */
export interface StorytellerApi {
  readonly campaigns: CampaignRegistry;
  readonly knowledge: KnowledgeService;
  readonly settings: Settings;
  readonly statusBar: StatusBar;
  /** The narrator's model server: preflight state, its status bar item and the model commands. */
  readonly servers: ModelServers;
  /** Servers named by the workspace's settings, used only once the writer confirms them. */
  readonly workspaceServers: WorkspaceServers;
  readonly sources: SourcesTree;
  readonly passages: PassagesTree;
  readonly play: PlayPanels;
  readonly adventures: AdventuresTree;
  /** The Adventure Map panels, one per adventure. */
  readonly maps: AdventureMaps;
  readonly provenance: ProvenanceTree;
  readonly conflicts: ConflictFeatures;
  readonly language: EntityLanguage;
  readonly codex: CodexTree;
  /** The Campaign Graph panels, one per campaign. */
  readonly graphs: GraphPanels;
  readonly transcripts: TranscriptDocuments;
  /** Propose Canon Updates…: play back to the bible, through the refactor preview. */
  readonly proposals: ProposalCommands;
  /** The one report tab (context previews, health, import reports). */
  readonly reports: ReportDocuments;
  /** Null when SQLite works with FTS5; otherwise the message the user was shown. */
  readonly sqliteProblem: string | null;
}

/** Opens an in-memory database once: a broken native module or a build without FTS5 is named at start-up. */
function checkSqlite(): string | null {
  try {
    // The native binary loads here, so a missing or mismatched one becomes a message, not a failed activation.
    const db = new Database(':memory:');
    try {
      assertFts5(db);
    } finally {
      db.close();
    }
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

class StorytellerExtension extends Disposable implements StorytellerApi {
  readonly log = this._register(vscode.window.createOutputChannel('Adventure Storyteller', { log: true }));
  readonly sqliteProblem = checkSqlite();
  readonly settings = this._register(new Settings(this.log));
  readonly campaigns = this._register(new CampaignRegistry(this.log));
  readonly knowledge = this._register(new KnowledgeService(this.campaigns, this.settings, this.log));
  readonly passages = this._register(new PassagesTree(this.knowledge));
  readonly statusBar = this._register(new StatusBar(this.knowledge));
  readonly servers = this._register(new ModelServers(this.settings, this.log));
  readonly sources: SourcesTree;
  readonly play: PlayPanels;
  readonly adventures: AdventuresTree;
  readonly maps: AdventureMaps;
  readonly provenance: ProvenanceTree;
  readonly conflicts: ConflictFeatures;
  readonly language: EntityLanguage;
  readonly codex: CodexTree;
  readonly graphs: GraphPanels;
  readonly transcripts: TranscriptDocuments;
  readonly proposals: ProposalCommands;
  readonly reports = this._register(new ReportDocuments());
  readonly workspaceServers: WorkspaceServers;

  constructor(context: vscode.ExtensionContext) {
    super();
    const extensionUri = context.extensionUri;
    this.settings.useWorkspaceState(context.workspaceState);
    this.settings.useSecrets(context.secrets);
    const toolSupport = new WorkspaceToolSupport(context.workspaceState);
    this.knowledge.useToolSupport(toolSupport);
    this.servers.useToolSupport(toolSupport);
    this.workspaceServers = this._register(new WorkspaceServers(this.settings, this.log));
    this.play = this._register(new PlayPanels(extensionUri, this.campaigns, this.knowledge, this.servers));
    const readers = new PlayReaders(this.knowledge);
    this.adventures = this._register(new AdventuresTree(this.campaigns, this.knowledge, readers, this.play.onDidPlay));
    this.maps = this._register(new AdventureMaps(extensionUri, this.campaigns, this.knowledge, this.play, this.adventures));
    this.provenance = this._register(new ProvenanceTree(readers, this.knowledge));
    this._register(this.play.onDidPlay(({ playPath, turnId }) => turnId && this.provenance.show(playPath, turnId)));
    this._register(vscode.commands.registerCommand('storyteller.showProvenance', (playPath: string, turnId: string) => this.provenance.show(playPath, turnId)));
    this._register(vscode.commands.registerCommand('storyteller.whyNot', (node?: PassageNode) => this.provenance.whyNot(node)));
    this._register(new SourceDiagnostics(this.knowledge));
    this.conflicts = this._register(
      new ConflictFeatures({
        campaigns: () => this.knowledge.list(),
        onDidChangeIndex: this.knowledge.onDidChange,
        // The check asks for Ollama's structured output, so it runs only when the narrator is on Ollama.
        ollama: () => {
          const { narratorBackend, narratorModel } = this.settings.current;
          return narratorBackend?.provider === 'ollama' && narratorModel ? { host: narratorBackend.baseUrl, model: narratorModel } : undefined;
        },
        playDb: (root, create) => {
          const session = this.knowledge.get(root)?.session;
          return (create ? session?.play : session?.playIfAny)?.db;
        },
      }),
    );
    this.sources = this._register(new SourcesTree(this.campaigns, this.knowledge, this.conflicts));
    this.transcripts = this._register(new TranscriptDocuments(() => this.knowledge.list(), readers, this.play.onDidPlay));
    this.language = this._register(
      new EntityLanguage({ campaigns: () => this.knowledge.list(), onDidChangeIndex: this.knowledge.onDidChange, conflicts: this.conflicts, transcripts: this.transcripts }),
    );
    this.codex = this._register(new CodexTree(() => this.knowledge.list(), this.language, readers, this.play.onDidPlay));
    this.graphs = this._register(new GraphPanels(extensionUri, this.campaigns, this.knowledge, this.language, this.codex, this.conflicts));
    this._register(new Commands(this.campaigns, this.knowledge, this.passages, this.settings, this.log));
    this._register(new AdventureCommands(this.knowledge, this.play, this.adventures));
    this.proposals = this._register(
      // The narrator's model and server as the settings name them when the command runs, as research uses them.
      new ProposalCommands(this.knowledge, this.log, () => {
        const { narratorBackend, narratorModel } = this.settings.current;
        return narratorBackend && narratorModel ? { client: toolChatFor(narratorBackend), model: narratorModel } : undefined;
      }),
    );
    this._register(new HealthCommand(this.campaigns, this.knowledge, this.settings, this.reports));
    this._register(new EvaluateResearchCommand(this.campaigns, this.knowledge, this.settings));
    this._register(new InterchangeCommands(extensionUri, this.campaigns, this.knowledge, this.settings, this.play, this.reports, () => this.adventures.refresh()));
    if (this.sqliteProblem) {
      this.log.error(this.sqliteProblem);
      void vscode.window.showErrorMessage(`Adventure Storyteller cannot index campaigns: ${this.sqliteProblem}`);
    }
  }

  /** Everything that reads the workspace or the network starts here, after activate() has returned. */
  startBackgroundWork(): void {
    this.knowledge.activationFinished();
    if (this.sqliteProblem) return;
    void this.campaigns.ready();
    void this.servers.check();
    void this.workspaceServers.askPending();
  }
}

export function activate(context: vscode.ExtensionContext): StorytellerApi {
  const extension = new StorytellerExtension(context);
  context.subscriptions.push(extension);
  setImmediate(() => extension.startBackgroundWork());
  return extension;
}

export function deactivate(): void {}

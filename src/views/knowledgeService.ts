import * as vscode from 'vscode';
import { workerWriter, type IndexWriter } from '../knowledge/indexing';
import { DiskWorkspace, openSession } from '../session';
import type { ToolSupportMemory } from '../models';
import { CampaignIndex, type IndexChange } from './campaignIndex';
import type { CampaignRegistry } from './campaigns';
import { Disposable } from './disposable';
import type { Settings, StorytellerSettings } from './settings';

/**
 * Every campaign of the workspace with its session: opened as campaigns are found, reloaded (not replaced)
 * when a campaign.yaml or a setting changes, so play data stays open, and indexed in the background with
 * a progress notification. A campaign that goes away has its session closed.
 */
export class KnowledgeService extends Disposable {
  private readonly _onDidChange = this._register(new vscode.EventEmitter<IndexChange>());
  /** Fires after any campaign's index changed (sources or passages written or removed). */
  readonly onDidChange = this._onDidChange.event;
  private readonly _onDidChangeState = this._register(new vscode.EventEmitter<void>());
  readonly onDidChangeState = this._onDidChangeState.event;

  private readonly indexes = new Map<string, { index: CampaignIndex; subscriptions: vscode.Disposable[] }>();
  private writerInstance: (IndexWriter & { close(): Promise<void> }) | undefined;
  /** True when an index run began before activation returned: it must never be. */
  indexingStartedDuringActivation = false;
  private activationDone = false;
  /** Where sessions keep what research learned of models' tools (the workspace state); set at activation. */
  private toolSupport: ToolSupportMemory | undefined;

  /** Sessions opened from now on keep what research learns of models' tools in `memory`. */
  useToolSupport(memory: ToolSupportMemory): void {
    this.toolSupport = memory;
  }

  constructor(
    private readonly campaigns: CampaignRegistry,
    private readonly settings: Settings,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this._register(campaigns.onDidChange(() => this.sync()));
    // The model and the server it runs on: a change of either means the stored vectors may not match the
    // embedder any more, so every index embeds what the new one has no vector for (and probes its size).
    const embedding = (current: StorytellerSettings) => JSON.stringify([current.embeddingModel, current.embeddingBackend?.provider, current.embeddingBackend?.baseUrl]);
    let embeddingSignature = embedding(settings.current);
    this._register(
      settings.onDidChange((current) => {
        this.sync(true);
        if (embedding(current) === embeddingSignature) return;
        embeddingSignature = embedding(current);
        for (const index of this.list()) index.embed();
      }),
    );
    this._register({
      dispose: () => {
        for (const entry of this.indexes.values()) this.release(entry);
        this.indexes.clear();
        void this.writerInstance?.close();
      },
    });
  }

  /** Called once activate() has returned; from here on background work may start. */
  activationFinished(): void {
    this.activationDone = true;
  }

  list(): CampaignIndex[] {
    return [...this.indexes.values()].map((entry) => entry.index);
  }

  get(campaignRoot: string): CampaignIndex | undefined {
    return this.indexes.get(campaignRoot)?.index;
  }

  /** The index of the campaign that contains `file`. */
  indexOf(file: string): CampaignIndex | undefined {
    const campaign = this.campaigns.campaignOf(file);
    return campaign ? this.get(campaign.root) : undefined;
  }

  /** Resolves when campaigns are discovered and every index has finished what it was asked to do. */
  async idle(): Promise<void> {
    await this.campaigns.ready();
    await Promise.all(this.list().map((index) => index.idle()));
  }

  reindex(index: CampaignIndex, rebuild = false): Thenable<unknown> {
    if (!this.activationDone) this.indexingStartedDuringActivation = true;
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `${rebuild ? 'Rebuilding' : 'Indexing'} ${index.campaign.title}` },
      (progress) => (rebuild ? index.rebuild(progress) : index.reindex(progress)),
    );
  }

  /** One writer thread for every campaign: reading, parsing and SQLite writes stay off the extension host's thread. */
  private writer(): IndexWriter {
    this.writerInstance ??= workerWriter();
    return this.writerInstance;
  }

  private sync(settingsChanged = false): void {
    const loaded = new Set(this.campaigns.list().filter((entry) => entry.state === 'loaded').map((entry) => entry.root));
    for (const [root, entry] of this.indexes) {
      if (loaded.has(root)) continue;
      this.release(entry);
      this.indexes.delete(root);
    }
    for (const root of loaded) {
      const known = this.indexes.get(root);
      if (known) {
        // A changed campaign.yaml or size cap: the session cancels its stale import and reindexes itself.
        known.index.session.reload();
        continue;
      }
      const workspace = new DiskWorkspace();
      const session = openSession(root, { settings: () => this.settings.current, workspace, writer: this.writer(), log: this.log, ...(this.toolSupport ? { toolSupport: this.toolSupport } : {}) });
      const index = new CampaignIndex(session, workspace);
      const subscriptions = [
        index.onDidChange((change) => this._onDidChange.fire(change)),
        index.onDidChangeState(() => this._onDidChangeState.fire()),
      ];
      this.indexes.set(root, { index, subscriptions });
      void this.reindex(index);
    }
    if (settingsChanged) this.log.info('settings changed; campaigns re-read');
    this._onDidChangeState.fire();
  }

  private release(entry: { index: CampaignIndex; subscriptions: vscode.Disposable[] }): void {
    entry.subscriptions.forEach((s) => s.dispose());
    entry.index.dispose();
  }
}

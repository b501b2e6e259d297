import * as vscode from 'vscode';
import type { Campaign } from '../knowledge/campaign';
import type { KnowledgeStore, ImportReport } from '../knowledge/indexing';
import type { SemanticIndexReport } from '../knowledge/retrieval';
import { DiskWorkspace, FILE_DEBOUNCE_MS, type CampaignSession, type IndexState } from '../session';
import { Disposable } from './disposable';
import { INDEX_CHANGE_REDRAW_MS } from './throttle';

export { FILE_DEBOUNCE_MS, type IndexState };

/** What changed in a campaign's index: the paths written or removed, or everything after a full run. */
export interface IndexChange {
  campaign: Campaign;
  paths: readonly string[] | 'all';
}

type Progress = vscode.Progress<{ message?: string; increment?: number }>;


/**
 * A campaign session as VS Code sees it: the editor's watcher and saves are forwarded into the session's
 * workspace (the debounce, queue and cancellation are the session's), its events become VS Code events,
 * and a full run reports progress. Disposing closes the session.
 */
export class CampaignIndex extends Disposable {
  private readonly _onDidChange = this._register(new vscode.EventEmitter<IndexChange>());
  readonly onDidChange = this._onDidChange.event;
  private readonly _onDidChangeState = this._register(new vscode.EventEmitter<IndexState>());
  readonly onDidChangeState = this._onDidChangeState.event;
  /** The state last passed on to the views; `state` is always the session's current one. */
  private shownState: IndexState | undefined;

  constructor(
    readonly session: CampaignSession,
    workspace: DiskWorkspace,
  ) {
    super();
    const root = session.root;
    const watcher = this._register(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(root, '**/*')));
    this._register(watcher.onDidCreate((uri) => workspace.fire({ kind: 'created', path: uri.fsPath })));
    this._register(watcher.onDidChange((uri) => workspace.fire({ kind: 'changed', path: uri.fsPath })));
    this._register(watcher.onDidDelete((uri) => workspace.fire({ kind: 'deleted', path: uri.fsPath })));
    // Saves normally reach the watcher too; a save of an unchanged-on-disk buffer (e.g. a remote FS) may not.
    this._register(vscode.workspace.onDidSaveTextDocument((doc) => doc.uri.scheme === 'file' && workspace.fire({ kind: 'changed', path: doc.uri.fsPath })));
    const changes = session.indexing.onDidChange((change) => this._onDidChange.fire({ campaign: session.campaign, paths: change.paths }));
    // An import reports progress per file, hundreds of times a second, and each report redraws the Sources
    // tree, the status bar and the progress notification (a query and a message to the window each): the
    // views hear of progress at most every INDEX_CHANGE_REDRAW_MS, and at once of any other change of state.
    let progressShownAt = 0;
    const states = session.indexing.onDidChangeState((state) => {
      const now = Date.now();
      if (state.kind === 'indexing' && this.shownState?.kind === 'indexing' && now - progressShownAt < INDEX_CHANGE_REDRAW_MS) return;
      progressShownAt = now;
      this.shownState = state;
      this._onDidChangeState.fire(state);
    });
    this._register({
      dispose: () => {
        changes.dispose();
        states.dispose();
        void session.close();
      },
    });
  }

  get campaign(): Campaign {
    return this.session.campaign;
  }

  get state(): IndexState {
    return this.session.indexing.state;
  }

  /** The open store, or undefined before the first task has opened it. */
  get store(): KnowledgeStore | undefined {
    return this.session.isClosed ? undefined : this.session.openStore;
  }

  /** The last full run's report, for the status bar and tests. */
  get lastReport(): ImportReport | undefined {
    return this.session.lastReport;
  }

  /** The last semantic pass, or undefined while no embedding model is set. */
  get lastSemantic(): SemanticIndexReport | undefined {
    return this.session.lastSemantic;
  }

  /** Resolves when every task queued so far has finished. */
  idle(): Promise<void> {
    return this.session.indexing.idle();
  }

  /** Brings the whole index in line with the folder; unchanged files are skipped without parsing. */
  reindex(progress?: Progress): Promise<ImportReport | undefined> {
    return this.withProgress(progress, () => this.session.reindex());
  }

  /** Drops the derived index and builds it again from the files; an import still running is cancelled. */
  rebuild(progress?: Progress): Promise<ImportReport | undefined> {
    return this.withProgress(progress, () => this.session.rebuild());
  }

  /** Reindexes one file now, queued behind whatever is running; a path outside the campaign is ignored. */
  async reindexFile(absPath: string): Promise<void> {
    await this.session.indexing.reindexFile(absPath);
  }

  /** Embeds new passages with the model the settings name now (or forgets the last pass when none is set). */
  embed(): void {
    const had = this.lastSemantic !== undefined;
    this.session.embed();
    if (had && this.lastSemantic === undefined) this._onDidChangeState.fire(this.state);
  }

  private async withProgress(progress: Progress | undefined, run: () => Promise<ImportReport | undefined>): Promise<ImportReport | undefined> {
    let reported = 0;
    const subscription = this.onDidChangeState((state) => {
      if (state.kind !== 'indexing') return;
      const percent = state.total === 0 ? 100 : (state.done / state.total) * 100;
      progress?.report({ message: `${state.done}/${state.total} ${state.path ?? ''}`, increment: percent - reported });
      reported = percent;
    });
    try {
      return await run();
    } finally {
      subscription.dispose();
    }
  }
}

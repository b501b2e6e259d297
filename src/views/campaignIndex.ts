import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { describeSemanticIndex, indexSemantic, type SemanticIndexReport } from '../knowledge/retrieval';
import { pathInside, type Campaign } from '../knowledge/campaign';
import type { Embedder } from '../knowledge/retrieval';
import { importCampaign, indexFile, isCandidateSource, type ImportOptions, type ImportReport } from '../knowledge/indexing';
import type { Parser } from '../knowledge/indexing';
import { KnowledgeStore } from '../knowledge/indexing';
import { Disposable } from './disposable';

/** How long a file must stay quiet before it is reindexed: an editor's save burst becomes one parse. */
export const FILE_DEBOUNCE_MS = 300;

export type IndexState =
  | { kind: 'waiting' }
  | { kind: 'indexing'; done: number; total: number; path?: string }
  | { kind: 'ready' }
  | { kind: 'error'; message: string };

/** What changed in a campaign's index: the paths written or removed, or everything after a full run. */
export interface IndexChange {
  campaign: Campaign;
  paths: readonly string[] | 'all';
}

/**
 * One campaign's derived index kept in line with its folder: a full import in the background when it is
 * opened, then one watcher over the folder, debounced per file, feeding single-file reindexing. Work runs
 * one task at a time, so a full reindex and a save never write the same source at once.
 */
export class CampaignIndex extends Disposable {
  private readonly _onDidChange = this._register(new vscode.EventEmitter<IndexChange>());
  readonly onDidChange = this._onDidChange.event;
  private readonly _onDidChangeState = this._register(new vscode.EventEmitter<IndexState>());
  readonly onDidChangeState = this._onDidChangeState.event;

  private storeInstance: KnowledgeStore | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly dirty = new Set<string>();
  private _state: IndexState = { kind: 'waiting' };
  /** The last full run's report, for the status bar and tests. */
  lastReport: ImportReport | undefined;
  /** The last semantic pass, or undefined while no embedding model is set. */
  lastSemantic: SemanticIndexReport | undefined;

  constructor(
    readonly campaign: Campaign,
    private readonly parser: Parser,
    private readonly log: vscode.LogOutputChannel,
    /** The embedder the settings name now; undefined keeps the index lexical only. */
    private readonly embedder: () => Embedder | undefined = () => undefined,
  ) {
    super();
    const watcher = this._register(vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(campaign.root, '**/*')));
    this._register(watcher.onDidCreate((uri) => this.fileChanged(uri.fsPath)));
    this._register(watcher.onDidChange((uri) => this.fileChanged(uri.fsPath)));
    this._register(watcher.onDidDelete((uri) => this.pathDeleted(uri.fsPath)));
    // Saves normally reach the watcher too; a save of an unchanged-on-disk buffer (e.g. a remote FS) may not.
    this._register(vscode.workspace.onDidSaveTextDocument((doc) => doc.uri.scheme === 'file' && this.fileChanged(doc.uri.fsPath)));
    this._register({ dispose: () => this.timers.forEach((timer) => clearTimeout(timer)) });
    this._register({ dispose: () => void this.queue.finally(() => this.storeInstance?.close()) });
  }

  get state(): IndexState {
    return this._state;
  }

  /** The open store, or undefined before the first task has opened it (or when it could not be opened). */
  get store(): KnowledgeStore | undefined {
    return this.storeInstance;
  }

  /** Resolves when every task queued so far has finished. */
  idle(): Promise<void> {
    return this.queue.then(() => undefined);
  }

  /** Brings the whole index in line with the folder; unchanged files are skipped without parsing. */
  reindex(progress?: vscode.Progress<{ message?: string; increment?: number }>): Promise<ImportReport | undefined> {
    return this.enqueue(async () => {
      const store = this.openStore();
      let reported = 0;
      const report = await importCampaign(this.campaign, store, {
        ...this.importOptions(),
        onProgress: (event) => {
          if (event.phase !== 'index') return;
          this.setState({ kind: 'indexing', done: event.done, total: event.total, path: event.path });
          const percent = event.total === 0 ? 100 : (event.done / event.total) * 100;
          progress?.report({ message: `${event.done}/${event.total} ${event.path ?? ''}`, increment: percent - reported });
          reported = percent;
        },
      });
      this.lastReport = report;
      this.log.info(
        `${this.campaign.id}: ${report.files.length} files (${Object.entries(report.counts).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ')}), ` +
          `${report.passages} passages written in ${Math.round(report.durationMs)} ms`,
      );
      this._onDidChange.fire({ campaign: this.campaign, paths: 'all' });
      this.embed();
      return report;
    });
  }

  /**
   * Embeds new passages and recalibrates, queued after the lexical work it follows: search is complete
   * before it starts and stays usable if it fails. Called after each indexing task and when the model changes.
   */
  embed(): void {
    const embedder = this.embedder();
    if (!embedder) {
      if (this.lastSemantic === undefined) return;
      this.lastSemantic = undefined;
      this._onDidChangeState.fire(this._state);
      return;
    }
    void this.enqueue(async () => {
      const report = await indexSemantic(this.openStore(), embedder);
      this.lastSemantic = report;
      const line = `${this.campaign.id}: ${describeSemanticIndex(report)}`;
      if (report.problem) this.log.warn(line);
      else this.log.info(line);
    });
  }

  /** Reindexes one file now, queued behind whatever is running; a path outside the campaign is ignored. */
  reindexFile(absPath: string): Promise<void | undefined> {
    const rel = this.relative(absPath);
    if (rel === undefined) return Promise.resolve(undefined);
    this.dirty.add(rel);
    return this.enqueue(() => this.flushDirty());
  }

  /** Drops the derived index and builds it again from the files. */
  rebuild(progress?: vscode.Progress<{ message?: string; increment?: number }>): Promise<ImportReport | undefined> {
    void this.enqueue(async () => {
      this.openStore().clear();
      this._onDidChange.fire({ campaign: this.campaign, paths: 'all' });
    });
    return this.reindex(progress);
  }

  private importOptions(): ImportOptions {
    return { parser: this.parser };
  }

  private openStore(): KnowledgeStore {
    this.storeInstance ??= KnowledgeStore.open(this.campaign);
    return this.storeInstance;
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T | undefined> {
    const run = this.queue.then(async () => {
      if (this.isDisposed) return undefined;
      try {
        const result = await task();
        this.setState({ kind: 'ready' });
        return result;
      } catch (error) {
        const message = `${this.campaign.root}: ${(error as Error).message}`;
        this.log.error(message);
        this.setState({ kind: 'error', message });
        return undefined;
      }
    });
    this.queue = run;
    return run;
  }

  private setState(state: IndexState): void {
    this._state = state;
    this._onDidChangeState.fire(state);
  }

  private relative(absPath: string): string | undefined {
    return pathInside(this.campaign.root, absPath) || undefined;
  }

  private fileChanged(absPath: string): void {
    const rel = this.relative(absPath);
    if (rel === undefined) return;
    if (isCandidateSource(this.campaign, rel)) {
      this.schedule(rel);
      return;
    }
    // A folder created (or moved in) with files already inside may arrive as one event for the folder.
    let entries: string[];
    try {
      if (!fs.statSync(absPath).isDirectory()) return;
      entries = fs.readdirSync(absPath, { recursive: true, encoding: 'utf8' });
    } catch {
      return;
    }
    for (const entry of entries) {
      const child = `${rel}/${entry.split(path.sep).join('/')}`;
      if (isCandidateSource(this.campaign, child)) this.schedule(child);
    }
  }

  /** A deleted folder arrives as one event: every source under it goes. */
  private pathDeleted(absPath: string): void {
    const rel = this.relative(absPath);
    if (rel === undefined) return;
    if (isCandidateSource(this.campaign, rel)) this.schedule(rel);
    for (const source of this.storeInstance?.listSources() ?? []) {
      if (source.path.startsWith(`${rel}/`)) this.schedule(source.path);
    }
  }

  private schedule(rel: string): void {
    clearTimeout(this.timers.get(rel));
    this.timers.set(
      rel,
      setTimeout(() => {
        this.timers.delete(rel);
        this.dirty.add(rel);
        void this.enqueue(() => this.flushDirty());
      }, FILE_DEBOUNCE_MS),
    );
  }

  private async flushDirty(): Promise<void> {
    const paths = [...this.dirty];
    this.dirty.clear();
    if (paths.length === 0) return;
    const store = this.openStore();
    const written: string[] = [];
    for (const rel of paths) {
      const report = await indexFile(this.campaign, store, rel, this.importOptions());
      written.push(...report.files.map((f) => f.path));
    }
    this.log.info(`${this.campaign.id}: reindexed ${written.join(', ')}`);
    this._onDidChange.fire({ campaign: this.campaign, paths: written });
    if (written.length > 0) this.embed();
  }
}

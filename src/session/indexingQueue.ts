import path from 'node:path';
import { DATA_DIR, pathInside } from '../knowledge/campaign';
import { Emitter, type FileChange, type Subscription, type Workspace } from './workspace';

/** How long a file must stay quiet before it is reindexed: an editor's save burst becomes one parse. */
export const FILE_DEBOUNCE_MS = 300;

export interface Clock {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export type IndexState =
  | { kind: 'waiting' }
  | { kind: 'indexing'; done: number; total: number; path?: string }
  | { kind: 'ready' }
  | { kind: 'error'; message: string };

/** What changed in the index: the campaign-relative paths written or removed, or everything after a full run. */
export interface IndexChange {
  paths: readonly string[] | 'all';
}

/** The writes the queue orders; the session implements them over the importer and the index store. */
export interface Indexer {
  /** Brings the whole index in line with the folder; stops early (throwing) once `signal` aborts. */
  importAll(signal: AbortSignal, onProgress: (state: IndexState) => void): Promise<void>;
  /** Reindexes (or removes) these sources; returns the paths written or removed. */
  indexFiles(paths: readonly string[], signal: AbortSignal): Promise<string[]>;
  /** Empties the derived index and imports every file again; readers keep the old index until the new one is whole. */
  rebuildAll(signal: AbortSignal, onProgress: (state: IndexState) => void): Promise<void>;
  /** Campaign-relative paths of the sources the index holds now. */
  indexedPaths(): string[];
  /** True for a campaign-relative path that may be a source (a markdown or text file not ignored). */
  isCandidate(relPath: string): boolean;
}

/** The index's own files: its writes must never look like a writer's edits. */
export function isIndexFile(relPath: string): boolean {
  const base = path.posix.basename(relPath);
  return relPath === DATA_DIR || relPath.startsWith(`${DATA_DIR}/`) || /^(index|play)\.db(-.*)?$/.test(base);
}

type TaskKind = 'import' | 'files' | 'other';

class Cancelled extends Error {}

/**
 * One campaign's indexing work, one task at a time, so a full import and a save never write the same
 * source at once. Change events from the workspace are debounced per path; a deleted folder removes every
 * source under it; a rebuild cancels the import it replaces; close() cancels what runs and drops the rest.
 */
export class IndexingQueue {
  private readonly changes = new Emitter<IndexChange>();
  readonly onDidChange = this.changes.event;
  private readonly states = new Emitter<IndexState>();
  readonly onDidChangeState = this.states.event;

  private tail: Promise<unknown> = Promise.resolve();
  private running: { kind: TaskKind; controller: AbortController } | undefined;
  private readonly timers = new Map<string, unknown>();
  private readonly dirty = new Set<string>();
  private readonly subscription: Subscription;
  private closed = false;
  private _state: IndexState = { kind: 'waiting' };

  constructor(
    private readonly root: string,
    private readonly workspace: Workspace,
    private readonly indexer: Indexer,
    private readonly options: { clock?: Clock; debounceMs?: number; onError?: (message: string) => void } = {},
  ) {
    this.subscription = workspace.onDidChange((change) => void this.changed(change));
  }

  get state(): IndexState {
    return this._state;
  }

  /** Resolves when every task queued so far has finished. */
  idle(): Promise<void> {
    return this.tail.then(() => undefined);
  }

  /**
   * Brings the whole index in line with the folder; unchanged files are skipped without parsing. With
   * `replace` (the campaign's config changed), an import already running is cancelled: its work is stale.
   */
  reindex(replace = false): Promise<boolean> {
    if (replace) this.cancel('import');
    return this.enqueue('import', async (signal) => {
      await this.indexer.importAll(signal, (state) => this.setState(state));
      this.changes.fire({ paths: 'all' });
    });
  }

  /** Drops the derived index and builds it again; an import still running is cancelled first. */
  rebuild(): Promise<boolean> {
    this.cancel('import');
    return this.enqueue('import', async (signal) => {
      await this.indexer.rebuildAll(signal, (state) => this.setState(state));
      this.changes.fire({ paths: 'all' });
    });
  }

  /** Reindexes one file now, queued behind whatever is running; a path outside the campaign is ignored. */
  reindexFile(absPath: string): Promise<boolean> {
    const rel = this.relative(absPath);
    if (rel === undefined) return Promise.resolve(false);
    this.dirty.add(rel);
    return this.enqueue('files', (signal) => this.flushDirty(signal));
  }

  /** Queues other work on the index (embedding) behind what is queued, under the same one-at-a-time rule. */
  run(task: (signal: AbortSignal) => Promise<void>): Promise<boolean> {
    return this.enqueue('other', task);
  }

  /** Cancels what runs, drops what waits, stops listening; resolves once the running task has stopped. */
  async close(): Promise<void> {
    if (this.closed) return this.idle();
    this.closed = true;
    this.subscription.dispose();
    for (const timer of this.timers.values()) this.clock.clearTimeout(timer);
    this.timers.clear();
    this.cancel();
    await this.idle();
    this.changes.dispose();
    this.states.dispose();
  }

  private get clock(): Clock {
    return this.options.clock ?? systemClock;
  }

  private cancel(kind?: TaskKind): void {
    if (this.running && (kind === undefined || this.running.kind === kind)) this.running.controller.abort(new Cancelled());
  }

  /** Resolves true when the task ran to the end, false when it failed, was cancelled or never ran. */
  private enqueue(kind: TaskKind, task: (signal: AbortSignal) => Promise<void>): Promise<boolean> {
    const run = this.tail.then(async () => {
      if (this.closed) return false;
      const controller = new AbortController();
      this.running = { kind, controller };
      try {
        await task(controller.signal);
        this.setState({ kind: 'ready' });
        return true;
      } catch (error) {
        if (controller.signal.aborted) {
          if (!this.closed) this.setState({ kind: 'ready' });
          return false;
        }
        const message = `${this.root}: ${(error as Error).message}`;
        this.options.onError?.(message);
        this.setState({ kind: 'error', message });
        return false;
      } finally {
        this.running = undefined;
      }
    });
    this.tail = run;
    return run;
  }

  private setState(state: IndexState): void {
    this._state = state;
    this.states.fire(state);
  }

  private relative(absPath: string): string | undefined {
    return pathInside(this.root, absPath) || undefined;
  }

  private async changed(change: FileChange): Promise<void> {
    const rel = this.relative(change.path);
    if (rel === undefined || isIndexFile(rel) || this.closed) return;
    if (this.indexer.isCandidate(rel)) this.schedule(rel);
    if (change.kind === 'deleted') {
      // A deleted folder arrives as one event: every source under it goes.
      for (const source of this.indexer.indexedPaths()) if (source.startsWith(`${rel}/`)) this.schedule(source);
      return;
    }
    if (this.indexer.isCandidate(rel)) return;
    // A folder created (or moved in) with files already inside may arrive as one event for the folder.
    if ((await this.workspace.stat(change.path))?.type !== 'directory') return;
    for (const file of await this.workspace.listFiles(change.path)) {
      const child = this.relative(file);
      if (child !== undefined && !isIndexFile(child) && this.indexer.isCandidate(child)) this.schedule(child);
    }
  }

  private schedule(rel: string): void {
    if (this.closed) return;
    this.clock.clearTimeout(this.timers.get(rel));
    this.timers.set(
      rel,
      this.clock.setTimeout(() => {
        this.timers.delete(rel);
        this.dirty.add(rel);
        void this.enqueue('files', (signal) => this.flushDirty(signal));
      }, this.options.debounceMs ?? FILE_DEBOUNCE_MS),
    );
  }

  private async flushDirty(signal: AbortSignal): Promise<void> {
    const paths = [...this.dirty].sort();
    this.dirty.clear();
    if (paths.length === 0) return;
    const written = await this.indexer.indexFiles(paths, signal);
    this.changes.fire({ paths: written });
  }
}

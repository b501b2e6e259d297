import fs from 'node:fs';
import path from 'node:path';
import { DATA_DIR, loadCampaign, type Campaign } from '../knowledge/campaign';
import { finishInterruptedWrites } from '../knowledge/files';
import { StoreCanonFacts, loadConflictDecisions, type ConflictDecision } from '../knowledge/conflicts';
import type { ExportSource } from '../knowledge/interchange';
import { inProcessWriter, inThreadParser, isCandidateSource, KnowledgeStore, type ImportOptions, type ImportReport, type IndexWriter, type Parser } from '../knowledge/indexing';
import { embedderFor as serverEmbedder, narratorFor, ProcessToolSupport, toolChatFor, type Embedder, type GenerateRequest, type Narrator, type ToolChatClient, type ToolSupportMemory } from '../models';
import { describeSemanticIndex, indexSemantic, type SemanticIndexReport, type TokenMeasure } from '../knowledge/retrieval';
import { knowledgeMeasure } from '../story/contextBuilder';
import { StoryEngine, type EngineSettings } from '../story/engine';
import { evaluateResearch, readEvalSet, type EvalReport } from '../story/evaluation';
import { indexKnowledge } from '../story/indexKnowledge';
import { PlayStore } from '../story/playStore';
import { TokenEstimator } from '../story/tokenEstimator';
import { noKnowledge, type KnowledgePort } from '../story/ports';
import { defaultSettings, type StorytellerSettings } from './defaults';
import { IndexingQueue, type Clock, type Indexer, type IndexState } from './indexingQueue';
import { DiskWorkspace, type Workspace } from './workspace';

export interface SessionLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const quietLog: SessionLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface SessionOptions {
  /** The settings as they are now, read at each use: a changed host or model applies from the next request. */
  settings?: () => StorytellerSettings;
  /** Where file changes come from; the disk with no watcher by default. */
  workspace?: Workspace;
  /** Where parsing happens when the writer is in process; in-thread by default. */
  parser?: Parser;
  /** Where the index's writes run; in process by default (the extension passes a worker thread's writer). */
  writer?: IndexWriter;
  clock?: Clock;
  log?: SessionLog;
  /** Told when another process holds the index lock and indexing waits for it (the CLI says so). */
  onLockWait?: (holder: string) => void;
  /** Where research on auto keeps what it learned of each model's tools: the extension's workspace state; the process by default. */
  toolSupport?: ToolSupportMemory;
}

/** The embedder the settings name, or undefined when no embedding model (or no usable server) is set: lexical only. */
export function embedderFor(settings: StorytellerSettings): Embedder | undefined {
  return settings.embeddingModel && settings.embeddingBackend ? serverEmbedder(settings.embeddingBackend, settings.embeddingModel) : undefined;
}

/** The story engine's settings from the writer's. */
export function engineSettings(settings: StorytellerSettings): Partial<EngineSettings> & { model: string } {
  return { model: settings.narratorModel, contextLength: settings.contextLength, replyReserve: settings.maxReplyTokens, memoryEvery: settings.memoryCadence, knowledgeCaps: settings.budgets, research: settings.research, ...(settings.researchContextWindow > 0 ? { researchContextWindow: settings.researchContextWindow } : {}) };
}

/** The campaign with the settings its campaign.yaml does not decide applied (the size cap). */
function effectiveCampaign(root: string, settings: StorytellerSettings): Campaign {
  const campaign = loadCampaign(root);
  return { ...campaign, sizeCapBytes: campaign.sizeCapBytes ?? settings.sizeCapBytes };
}

const open = new Map<string, CampaignSession>();

/**
 * The campaign's session: opened once per campaign per process, the same object for every surface while
 * it is open. Throws a CampaignError when campaign.yaml is missing or wrong. The options of the first open
 * decide; the owner that opened it closes it.
 */
export function openSession(root: string, options: SessionOptions = {}): CampaignSession {
  const key = path.resolve(root);
  let session = open.get(key);
  if (!session) {
    session = new CampaignSession(key, options);
    open.set(key, session);
  }
  return session;
}

/** The open session of the campaign at `root`, if any. */
export function openSessionAt(root: string): CampaignSession | undefined {
  return open.get(path.resolve(root));
}

/**
 * Everything one campaign has while it is worked on, owned in one place: its config with the writer's
 * settings applied, the index store, the play store, the indexing queue and the story engine. Crash
 * recovery of play.db runs once, when the play store is first opened; nothing else opens either database.
 */
export class CampaignSession {
  readonly indexing: IndexingQueue;
  /** The last full import's report, for the status bar and tests. */
  lastReport: ImportReport | undefined;
  /** The last semantic pass, or undefined while no embedding model is set. */
  lastSemantic: SemanticIndexReport | undefined;

  private current: Campaign;
  private knowledgeStore: KnowledgeStore | undefined;
  private playStore: PlayStore | undefined;
  private storyEngine: StoryEngine | undefined;
  private canon: { store: KnowledgeStore; facts: StoreCanonFacts } | undefined;
  private readonly settings: () => StorytellerSettings;
  private readonly parser: Parser;
  private readonly writer: IndexWriter;
  private readonly log: SessionLog;
  private readonly onLockWait: ((holder: string) => void) | undefined;
  private readonly toolSupport: ToolSupportMemory;
  private closing: Promise<void> | undefined;

  constructor(
    readonly root: string,
    options: SessionOptions,
  ) {
    this.settings = options.settings ?? (() => defaultSettings());
    this.parser = options.parser ?? inThreadParser();
    this.writer = options.writer ?? inProcessWriter;
    this.log = options.log ?? quietLog;
    this.onLockWait = options.onLockWait;
    this.toolSupport = options.toolSupport ?? new ProcessToolSupport();
    // A set of files a killed run left half in place (a lorebook, proposals) is finished before anything reads them.
    const interrupted = finishInterruptedWrites(root, path.join(root, DATA_DIR));
    if (interrupted.finished.length > 0) this.log.warn(`${root}: finished writing ${interrupted.finished.length} file(s) an interrupted run left: ${interrupted.finished.join(', ')}`);
    for (const skipped of interrupted.skipped) this.log.warn(`${root}: an interrupted write of ${skipped}`);
    this.current = effectiveCampaign(root, this.settings());
    this.indexing = new IndexingQueue(root, options.workspace ?? new DiskWorkspace(), this.indexer(), {
      ...(options.clock ? { clock: options.clock } : {}),
      onError: (message) => this.log.error(message),
    });
  }

  get campaign(): Campaign {
    return this.current;
  }

  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** True once index.db exists: reading must not create an empty index that looks like an empty library. */
  get hasIndex(): boolean {
    return this.knowledgeStore !== undefined || fs.existsSync(this.current.indexPath);
  }

  /** The index store, opened (and created) on first use. */
  get store(): KnowledgeStore {
    this.assertOpen();
    if (!this.knowledgeStore) {
      this.knowledgeStore = KnowledgeStore.open(this.current);
      const moved = this.knowledgeStore.damagedIndexMovedTo;
      if (moved) this.log.warn(`${this.current.id}: the index was damaged; it was moved to ${moved} and is rebuilt from the campaign's files`);
    }
    return this.knowledgeStore;
  }

  /** The index store if something has opened it already; undefined while the first import has not begun. */
  get openStore(): KnowledgeStore | undefined {
    return this.knowledgeStore;
  }

  /** The play store, opened on first use; a turn cut off by a crash is marked interrupted then, and only then. */
  get play(): PlayStore {
    this.assertOpen();
    if (!this.playStore) {
      const store = new PlayStore(this.current.playPath);
      const recovered = store.recoverInterrupted();
      if (recovered > 0) this.log.warn(`${this.current.id}: ${recovered} turn(s) cut off by a crash marked interrupted`);
      this.playStore = store;
    }
    return this.playStore;
  }

  /** The play store if it exists on disk or is open; undefined when the campaign was never played. */
  get playIfAny(): PlayStore | undefined {
    if (this.closing) return undefined;
    return this.playStore ?? (fs.existsSync(this.current.playPath) ? this.play : undefined);
  }

  /** What an export reads: this session's config, index store and play data. Nothing is re-imported. */
  get exportSource(): ExportSource {
    return { campaign: this.current, store: this.store, playDb: this.playIfAny?.db };
  }

  /**
   * The one story engine of the campaign: every surface plays and previews through it, so one adventure
   * never has two turns in flight. It follows the settings from the next turn on.
   */
  get engine(): StoryEngine {
    this.storyEngine ??= new StoryEngine(this.play, this.knowledge(), this.narrator(), { ...engineSettings(this.settings()), worldInfo: this.current.worldInfo }, this.toolChat(), this.toolSupport);
    return this.storyEngine;
  }

  /**
   * Campaign knowledge for play and previews, read through the current settings at each call: semantic
   * when an embedding model is set, and honestly empty while no index is open yet.
   */
  knowledge(): KnowledgePort {
    const fallback = noKnowledge(this.current.id, `no index yet at ${this.current.indexPath}; play goes on without imported knowledge`);
    const port = (): KnowledgePort => {
      const store = this.knowledgeStore ?? (this.hasIndex ? this.store : undefined);
      if (!store) return fallback;
      const embedder = embedderFor(this.settings());
      return indexKnowledge(store, embedder ? { embedder } : null, this.canonFacts(store));
    };
    return {
      retrieve: (query) => port().retrieve(query),
      cast: () => port().cast(),
      character: (sourceId) => port().character(sourceId),
      // Read at each call, so research follows an index opened after the session.
      get research() {
        return port().research;
      },
    };
  }

  /**
   * The canon facts retrieval supersedes lines by, with the writer's conflict decisions; kept across turns so
   * facts are extracted again only when their source changes.
   */
  canonFacts(store = this.store): StoreCanonFacts {
    if (this.canon?.store !== store) this.canon = { store, facts: new StoreCanonFacts(store, () => this.conflictDecisions()) };
    return this.canon.facts;
  }

  /**
   * Knowledge priced as a narrator prompt sends it (framed, in the model's calibrated token unit), for checks
   * made outside a turn. With no persona: an adventure's persona name changes only lorebook macros.
   */
  promptMeasure(): TokenMeasure {
    const estimator = this.storyEngine?.estimator() ?? new TokenEstimator(this.settings().narratorModel, this.playIfAny);
    return knowledgeMeasure(estimator, '');
  }

  /**
   * The narrator model the settings name, researching on its server, scored against today's selection on the
   * campaign's question set (eval.yaml in the campaign folder unless `setFile`). Plays and writes nothing.
   */
  async evaluateResearch(options: { setFile?: string; signal?: AbortSignal } = {}): Promise<EvalReport> {
    const settings = this.settings();
    if (!settings.narratorBackend) throw new Error(settings.backendProblem ?? 'no model server is configured');
    if (!this.hasIndex) throw new Error(`${this.current.id} has no index yet at ${this.current.indexPath}; index it first`);
    const store = this.store;
    const set = readEvalSet(options.setFile ?? path.join(this.root, 'eval.yaml'), new Set(store.listSources().map((s) => s.path)));
    const narrator = this.narrator();
    return evaluateResearch({
      campaign: this.current,
      set,
      knowledge: this.knowledge(),
      client: this.toolChat(),
      models: [settings.narratorModel],
      contextWindow: async (model) => (settings.researchContextWindow > 0 ? settings.researchContextWindow : ((await narrator.contextLength(model).catch(() => null)) ?? undefined)),
      store,
      ollamaHost: settings.narratorBackend.provider === 'ollama' ? settings.narratorBackend.baseUrl : null,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** The writer's conflict decisions, from play.db; none while the campaign was never played. */
  private conflictDecisions(): ReadonlyMap<string, ConflictDecision> {
    const play = this.playIfAny;
    return play ? loadConflictDecisions(play.db, this.current.id) : new Map();
  }

  /** Applies changed settings or campaign.yaml: the engine follows at once; a changed config is reindexed. */
  reload(): boolean {
    const settings = this.settings();
    if (this.storyEngine) Object.assign(this.storyEngine.settings, engineSettings(settings));
    const next = effectiveCampaign(this.root, settings);
    if (this.storyEngine) this.storyEngine.settings.worldInfo = next.worldInfo;
    if (JSON.stringify(next) === JSON.stringify(this.current)) return false;
    const idChanged = next.id !== this.current.id;
    this.current = next;
    if (idChanged) {
      // The store is bound to the campaign id: the old one goes, and the index is built again under the new id.
      void this.indexing.run(async () => {
        this.knowledgeStore?.close();
        this.knowledgeStore = undefined;
      });
      void this.rebuild();
    } else {
      void this.reindex(true);
    }
    return true;
  }

  /** Brings the index in line with the folder, then embeds what is new; `replace` cancels an import already running. */
  async reindex(replace = false): Promise<ImportReport | undefined> {
    const before = this.lastReport;
    const done = await this.indexing.reindex(replace);
    this.embed();
    return done && this.lastReport !== before ? this.lastReport : undefined;
  }

  /** Drops the derived index and builds it again from the files; an import running is cancelled. */
  async rebuild(): Promise<ImportReport | undefined> {
    const before = this.lastReport;
    const done = await this.indexing.rebuild();
    this.embed();
    return done && this.lastReport !== before ? this.lastReport : undefined;
  }

  /**
   * Embeds new passages and recalibrates, queued after the lexical work it follows: search is complete
   * before it starts and stays usable if it fails. Called after indexing and when the model changes.
   */
  embed(): void {
    const embedder = embedderFor(this.settings());
    if (!embedder) {
      this.lastSemantic = undefined;
      return;
    }
    void this.indexing.run(async () => {
      const report = await indexSemantic(this.store, embedder);
      this.lastSemantic = report;
      const line = `${this.current.id}: ${describeSemanticIndex(report)}`;
      if (report.problem) this.log.warn(line);
      else this.log.info(line);
    });
  }

  /** Cancels indexing, waits for the task running, and closes both stores. The session leaves the registry. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (open.get(this.root) === this) open.delete(this.root);
      await this.indexing.close();
      await this.writer.release(this.current.indexPath).catch((error: unknown) => this.log.warn(`${this.current.id}: ${(error as Error).message}`));
      this.knowledgeStore?.close();
      this.playStore?.close();
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error(`the session of ${this.root} is closed`);
  }

  private indexer(): Indexer {
    const options = (signal: AbortSignal, onProgress: (state: IndexState) => void): ImportOptions => ({
      parser: this.parser,
      signal,
      ...(this.onLockWait ? { onLockWait: this.onLockWait } : {}),
      onProgress: (event) => {
        if (event.phase === 'index') onProgress({ kind: 'indexing', done: event.done, total: event.total, ...(event.path ? { path: event.path } : {}) });
      },
    });
    const finished = (report: ImportReport): void => {
      this.lastReport = report;
      const counts = Object.entries(report.counts).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`);
      this.log.info(`${this.current.id}: ${report.files.length} files (${counts.join(', ')}), ${report.passages} passages written in ${Math.round(report.durationMs)} ms`);
    };
    return {
      importAll: async (signal, onProgress) => finished(await this.writer.importCampaign(this.current, this.store, options(signal, onProgress))),
      rebuildAll: async (signal, onProgress) => finished(await this.writer.rebuildIndex(this.current, this.store, options(signal, onProgress))),
      indexFiles: async (paths, signal) => {
        const written: string[] = [];
        for (const rel of paths) {
          signal.throwIfAborted();
          const report = await this.writer.indexFile(this.current, this.store, rel, { parser: this.parser });
          written.push(...report.files.map((f) => f.path));
        }
        this.log.info(`${this.current.id}: reindexed ${written.join(', ') || 'nothing'}`);
        if (written.length > 0) this.embed();
        return written;
      },
      indexedPaths: () => (this.knowledgeStore?.listSources() ?? []).map((s) => s.path),
      isCandidate: (rel) => isCandidateSource(this.current, rel),
    };
  }

  /**
   * The narrator on the server the settings name now: a changed provider, URL or key is used from the next
   * request, and settings that name no usable server fail the turn with the reason.
   */
  /** Research's conversation with tools, on the narrator's server as the settings name it at each call. */
  private toolChat(): ToolChatClient {
    let made: { backend: string; client: ToolChatClient } | undefined;
    const current = (): ToolChatClient => {
      const settings = this.settings();
      const backend = settings.narratorBackend;
      if (!backend) throw new Error(settings.backendProblem ?? 'no model server is configured');
      const key = JSON.stringify(backend);
      if (made?.backend !== key) made = { backend: key, client: toolChatFor(backend) };
      return made.client;
    };
    return {
      get backend() {
        return current().backend;
      },
      canUseTools: (model, signal) => current().canUseTools?.(model, signal) ?? Promise.resolve(true),
      chat: (messages, tools, options) => current().chat(messages, tools, options),
    };
  }

  private narrator(): Narrator {
    let made: { backend: string; narrator: Narrator } | undefined;
    const current = (): Narrator => {
      const settings = this.settings();
      const backend = settings.narratorBackend;
      if (!backend) throw new Error(settings.backendProblem ?? 'no model server is configured');
      const key = JSON.stringify(backend);
      if (made?.backend !== key) made = { backend: key, narrator: narratorFor(backend) };
      return made.narrator;
    };
    const settings = this.settings;
    return {
      get host() {
        return settings().narratorBackend?.baseUrl ?? '';
      },
      generate: (request: GenerateRequest) => current().generate(request),
      contextLength: (model: string) => current().contextLength(model),
    };
  }
}

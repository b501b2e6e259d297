import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Campaign } from '../campaign';
import { importCampaign, indexFile, type ImportOptions, type ImportProgress, type ImportReport } from './importer';
import { rebuildIndex } from './operations';
import type { KnowledgeStore } from './store';

/**
 * Where an index's writes run. In process by default (CLI, tests); the extension writes from a worker
 * thread that owns its own connection, so reading files, hashing, chunk bookkeeping and SQLite commits never
 * block the extension host's thread, which keeps reading the same index (WAL lets readers go on).
 */
export interface IndexWriter {
  importCampaign(campaign: Campaign, store: KnowledgeStore, options?: ImportOptions): Promise<ImportReport>;
  rebuildIndex(campaign: Campaign, store: KnowledgeStore, options?: ImportOptions): Promise<ImportReport>;
  indexFile(campaign: Campaign, store: KnowledgeStore, relPath: string, options?: ImportOptions): Promise<ImportReport>;
  /** Closes what the writer holds open on this index file; the next write opens it again. */
  release(indexPath: string): Promise<void>;
}

export const inProcessWriter: IndexWriter = {
  importCampaign,
  rebuildIndex,
  indexFile,
  release: () => Promise.resolve(),
};

export type WriteKind = 'import' | 'rebuild' | 'file';

export type WriterRequest =
  | { type: 'write'; id: number; kind: WriteKind; campaign: Campaign; relPath?: string; initialSemanticState?: ImportOptions['initialSemanticState'] }
  | { type: 'cancel'; id: number }
  | { type: 'release'; id: number; indexPath: string };

export type WriterResponse =
  | { type: 'progress'; id: number; event: ImportProgress }
  | { type: 'lock-wait'; id: number; holder: string }
  | { type: 'done'; id: number; report?: ImportReport }
  | { type: 'failed'; id: number; message: string; cancelled: boolean };

/** `index-worker.js` next to a bundle in dist/, or `indexWorker.ts` beside this file under tsx (tests). */
function defaultWorkerPath(): string {
  if (__filename.endsWith('.ts')) return path.join(__dirname, 'indexWorker.ts');
  return path.join(__dirname, 'index-worker.js');
}

interface Pending {
  resolve(report: ImportReport | undefined): void;
  reject(error: Error): void;
  options: ImportOptions;
}

/**
 * Writes on one worker thread, one request at a time in the order given (the session's queue already sends
 * one at a time). A cancelled signal stops the worker's run between files; a worker that dies fails what it
 * had with the reason and is started again on the next request. The options' parser, reader and clock stay
 * on the caller's side: the worker parses on its own thread.
 */
export function workerWriter(options: { workerPath?: string } = {}): IndexWriter & { close(): Promise<void> } {
  const workerPath = options.workerPath ?? defaultWorkerPath();
  if (!fs.existsSync(workerPath)) throw new Error(`index worker not found at ${workerPath}; run the build`);
  let worker: Worker | undefined;
  let nextId = 1;
  let closed = false;
  const pending = new Map<number, Pending>();

  const started = (): Worker => {
    if (worker) return worker;
    const current = new Worker(workerPath);
    const failAll = (error: Error): void => {
      for (const p of pending.values()) p.reject(error);
      pending.clear();
      if (worker === current) worker = undefined;
    };
    current.on('message', (response: WriterResponse) => {
      const request = pending.get(response.id);
      if (!request) return;
      switch (response.type) {
        case 'progress':
          request.options.onProgress?.(response.event);
          return;
        case 'lock-wait':
          request.options.onLockWait?.(response.holder);
          return;
        case 'done':
          pending.delete(response.id);
          request.resolve(response.report);
          break;
        case 'failed':
          pending.delete(response.id);
          request.reject(response.cancelled && request.options.signal ? (request.options.signal.reason as Error) : new Error(response.message));
          break;
      }
      // An idle worker must not keep a process alive.
      if (pending.size === 0) current.unref();
    });
    current.on('error', (error) => failAll(new Error(`index worker failed: ${error.message}`)));
    current.on('exit', (code) => failAll(new Error(`index worker exited (code ${code})`)));
    worker = current;
    return current;
  };

  const send = (request: WriterRequest, requestOptions: ImportOptions): Promise<ImportReport | undefined> => {
    if (closed) return Promise.reject(new Error('the index writer is closed'));
    requestOptions.signal?.throwIfAborted();
    const target = started();
    return new Promise<ImportReport | undefined>((resolve, reject) => {
      pending.set(request.id, { resolve, reject, options: requestOptions });
      target.ref();
      target.postMessage(request);
      requestOptions.signal?.addEventListener('abort', () => target.postMessage({ type: 'cancel', id: request.id } satisfies WriterRequest), { once: true });
    });
  };

  // The caller's store is not used: it is open, so the index's migrations ran before the worker opens the file.
  const write = async (kind: WriteKind, campaign: Campaign, writeOptions: ImportOptions = {}, relPath?: string): Promise<ImportReport> => {
    const request: WriterRequest = {
      type: 'write',
      id: nextId++,
      kind,
      campaign,
      ...(relPath === undefined ? {} : { relPath }),
      ...(writeOptions.initialSemanticState ? { initialSemanticState: writeOptions.initialSemanticState } : {}),
    };
    return (await send(request, writeOptions))!;
  };

  return {
    importCampaign: (campaign, _store, writeOptions) => write('import', campaign, writeOptions),
    rebuildIndex: (campaign, _store, writeOptions) => write('rebuild', campaign, writeOptions),
    indexFile: (campaign, _store, relPath, writeOptions) => write('file', campaign, writeOptions, relPath),
    async release(indexPath) {
      if (!worker || closed) return;
      await send({ type: 'release', id: nextId++, indexPath }, {});
    },
    async close() {
      closed = true;
      await worker?.terminate();
      worker = undefined;
    },
  };
}

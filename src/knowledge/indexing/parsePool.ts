import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { parseDocument, type DocumentKind, type ParsedDocument } from './chunker';

/** Parses source text into passages. The importer only depends on this, so parsing can run anywhere. */
export interface Parser {
  parse(text: string, kind: DocumentKind): Promise<ParsedDocument>;
  close(): Promise<void>;
}

/** Parses on the caller's thread: for tests and short CLI runs, where a worker buys nothing. */
export function inThreadParser(): Parser {
  return {
    parse: (text, kind) => Promise.resolve(parseDocument(text, kind)),
    close: () => Promise.resolve(),
  };
}

export interface ParseRequest {
  id: number;
  text: string;
  kind: DocumentKind;
}

export type ParseResponse = { id: number; ok: true; document: ParsedDocument } | { id: number; ok: false; error: string };

/**
 * The worker script beside this code: `parse-worker.js` next to a bundle in dist/, or `parseWorker.ts`
 * next to this file when it runs from source under tsx (tests, bench). A worker inherits the parent's
 * `execArgv`, so under tsx it loads TypeScript exactly as the parent does.
 */
export function defaultWorkerPath(): string {
  if (__filename.endsWith('.ts')) return path.join(__dirname, 'parseWorker.ts');
  return path.join(__dirname, 'parse-worker.js');
}

interface Pending {
  resolve(document: ParsedDocument): void;
  reject(error: Error): void;
}

interface PoolWorker {
  worker: Worker;
  busy: number;
  pending: Map<number, Pending>;
}

/**
 * Parses on up to `size` worker threads (default 2), so the extension host's thread never blocks on
 * parsing. Requests go to the least busy worker. A worker that dies fails its pending requests with the
 * reason and is replaced on the next request.
 */
export function workerParser(options: { workerPath?: string; size?: number } = {}): Parser {
  const workerPath = options.workerPath ?? defaultWorkerPath();
  if (!fs.existsSync(workerPath)) throw new Error(`parse worker not found at ${workerPath}; run the build`);
  const size = Math.max(1, Math.min(options.size ?? 2, 2));
  const pool: PoolWorker[] = [];
  let nextId = 1;
  let closed = false;

  const spawn = (): PoolWorker => {
    const entry: PoolWorker = { worker: new Worker(workerPath), busy: 0, pending: new Map() };
    const failAll = (error: Error): void => {
      for (const p of entry.pending.values()) p.reject(error);
      entry.pending.clear();
      const at = pool.indexOf(entry);
      if (at !== -1) pool.splice(at, 1);
    };
    entry.worker.on('message', (response: ParseResponse) => {
      const pending = entry.pending.get(response.id);
      if (!pending) return;
      entry.pending.delete(response.id);
      entry.busy--;
      if (response.ok) pending.resolve(response.document);
      else pending.reject(new Error(response.error));
    });
    entry.worker.on('error', (error) => failAll(new Error(`parse worker failed: ${error.message}`)));
    entry.worker.on('exit', (code) => {
      if (!closed) failAll(new Error(`parse worker exited (code ${code})`));
    });
    // Idle workers must not keep a CLI process alive.
    entry.worker.unref();
    pool.push(entry);
    return entry;
  };

  return {
    parse(text, kind) {
      if (closed) return Promise.reject(new Error('parser is closed'));
      const idle = pool.length < size ? spawn() : pool.reduce((a, b) => (b.busy < a.busy ? b : a));
      const id = nextId++;
      return new Promise<ParsedDocument>((resolve, reject) => {
        idle.pending.set(id, { resolve, reject });
        idle.busy++;
        idle.worker.ref();
        idle.worker.postMessage({ id, text, kind } satisfies ParseRequest);
      }).finally(() => {
        if (idle.busy === 0) idle.worker.unref();
      });
    },
    async close() {
      closed = true;
      await Promise.all(pool.splice(0).map((p) => p.worker.terminate()));
    },
  };
}

// Worker-thread entry (bundled as dist/index-worker.js): the index's writer, on a connection of its own.
import { parentPort } from 'node:worker_threads';
import { KnowledgeStore } from './store';
import { inProcessWriter, type WriterRequest, type WriterResponse } from './indexWriter';
import { inThreadParser } from './parsePool';
import type { ImportOptions } from './importer';

const stores = new Map<string, KnowledgeStore>();
const running = new Map<number, AbortController>();
/**
 * Parsing happens on this thread too: the extension host's thread is free either way, and parse workers
 * measured no faster here for about a fifth more CPU and nearly twice the peak memory (`npm run bench`).
 */
const parser = inThreadParser();
/** One write at a time, in the order sent. */
let tail: Promise<void> = Promise.resolve();

const post = (response: WriterResponse): void => parentPort?.postMessage(response);

function storeFor(campaignId: string, indexPath: string): KnowledgeStore {
  const key = `${campaignId}\0${indexPath}`;
  let store = stores.get(key);
  if (!store) {
    store = KnowledgeStore.open({ id: campaignId, indexPath });
    stores.set(key, store);
  }
  return store;
}

async function write(request: Extract<WriterRequest, { type: 'write' }>, controller: AbortController): Promise<void> {
  const { campaign, id } = request;
  const options: ImportOptions = {
    parser,
    signal: controller.signal,
    onProgress: (event) => post({ type: 'progress', id, event }),
    onLockWait: (holder) => post({ type: 'lock-wait', id, holder }),
    ...(request.initialSemanticState ? { initialSemanticState: request.initialSemanticState } : {}),
  };
  try {
    const store = storeFor(campaign.id, campaign.indexPath);
    const report =
      request.kind === 'file'
        ? await inProcessWriter.indexFile(campaign, store, request.relPath!, options)
        : request.kind === 'import'
          ? await inProcessWriter.importCampaign(campaign, store, options)
          : await inProcessWriter.rebuildIndex(campaign, store, options);
    post({ type: 'done', id, report });
  } catch (error) {
    post({ type: 'failed', id, message: error instanceof Error ? error.message : String(error), cancelled: controller.signal.aborted });
  } finally {
    running.delete(id);
  }
}

parentPort?.on('message', (request: WriterRequest) => {
  switch (request.type) {
    case 'cancel':
      running.get(request.id)?.abort();
      return;
    case 'write': {
      // Cancellable from the moment it is queued, not only once it runs.
      const controller = new AbortController();
      running.set(request.id, controller);
      tail = tail.then(() => write(request, controller));
      return;
    }
    case 'release':
      tail = tail.then(() => {
        for (const [key, store] of stores) {
          if (!key.endsWith(`\0${request.indexPath}`)) continue;
          store.close();
          stores.delete(key);
        }
        post({ type: 'done', id: request.id });
      });
      return;
  }
});

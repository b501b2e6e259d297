import assert from 'node:assert/strict';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { workerWriter } from '../../src/knowledge/indexing/indexWriter';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { openSession, type CampaignSession } from '../../src/session/session';
import { makeCampaign, removeDir, writeFile } from '../support/campaignDirs';
import { reindexClosingMidway } from '../support/sessionClose';

/** Each source's state and passages: what search can find. */
const holdings = (store: KnowledgeStore) => store.listSources().map((s) => [s.path, s.lexicalState, store.listPassages(s.id).map((p) => p.text)]);

/** Rows this connection itself inserted, updated or deleted since it opened (its migrations included). */
const changesBy = (store: KnowledgeStore) => (store.db.prepare('SELECT total_changes() n').get() as { n: number }).n;

describe('session: index writes on a worker thread (the extension host path)', () => {
  let root: string;
  let writer: ReturnType<typeof workerWriter>;
  let session: CampaignSession;

  beforeEach(() => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`notes/n${i}.md`] = `# Note ${i}\n\nThe abbey bell rang ${i} times over the harbour ${i}.\n`;
    root = makeCampaign(files, 'id: westhaven\ntitle: Westhaven\n');
    writer = workerWriter();
    session = openSession(root, { writer });
  });
  afterEach(async () => {
    await session.close();
    await writer.close();
    removeDir(root);
  });

  it('indexes and reindexes a saved file exactly as in process, and the host connection writes nothing', async () => {
    const opened = changesBy(session.store);
    const report = await session.reindex();
    assert.equal(report?.counts.indexed, 30);
    writeFile(root, 'notes/n3.md', '# Note 3\n\nThe bell is silent now.\n');
    assert.equal(await session.indexing.reindexFile(path.join(root, 'notes', 'n3.md')), true);
    const reference = KnowledgeStore.inMemory('westhaven');
    try {
      await importCampaign(loadCampaign(root), reference);
      assert.deepEqual(holdings(session.store), holdings(reference));
    } finally {
      reference.close();
    }
    assert.match(JSON.stringify(holdings(session.store)), /The bell is silent now/);
    assert.equal(changesBy(session.store), opened, 'every write went through the worker’s own connection');
  });

  it('a rebuild swaps: the host reading while it runs never sees the index shrink', async () => {
    await session.reindex();
    const whole = session.store.counts();
    const seen: number[] = [];
    const sub = session.indexing.onDidChangeState((state) => {
      if (state.kind === 'indexing') seen.push(session.store.counts().passages);
    });
    const report = await session.rebuild();
    sub.dispose();
    assert.equal(report?.counts.indexed, 30);
    assert.ok(seen.length > 0, 'the host read while the rebuild ran');
    assert.ok(seen.every((n) => n === whole.passages), `passages seen during the rebuild: ${seen.join(', ')}`);
    assert.deepEqual(session.store.counts(), whole);
  });

  it('closing the session cancels the worker’s import between files; a new session finishes it', async () => {
    // Enough files that the import outlasts the cancel's trip to the worker, which lets it in every few ms.
    for (let i = 30; i < 300; i++) writeFile(root, `notes/n${i}.md`, `# Note ${i}\n\nThe abbey bell rang ${i} times.\n`);
    const report = await reindexClosingMidway(session);
    assert.equal(report, undefined, 'the import was cancelled, not finished');
    session = openSession(root, { writer });
    assert.ok(session.store.listSources().length < 300);
    assert.equal((await session.reindex())?.files.length, 300);
  });
});

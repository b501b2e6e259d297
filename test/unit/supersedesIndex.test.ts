import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { StoreCanonFacts } from '../../src/knowledge/conflicts';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';

const EXAMPLE_CAMPAIGN = path.resolve('fixtures/example-campaign');
const LATER = '---\ntitle: Sister Mara, years later\nsupersedes: [./characters/mara.md]\n---\n# Sister Mara\n\n- **Age:** 52\n';

/** What supersedes what lives in the index, written when a file is indexed; a turn reads it from there. */
describe('supersession held in the index', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-supersedes-index-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, dir, { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function indexed(): Promise<KnowledgeStore> {
    const campaign = loadCampaign(dir);
    const store = KnowledgeStore.open(campaign);
    await importCampaign(campaign, store);
    return store;
  }
  const settled = (store: KnowledgeStore) => new StoreCanonFacts(store).supersededCanon().map((s) => `${s.statement.path}:${s.statement.value} < ${s.by.path}:${s.by.value}`);

  it('records a declaration when the file is indexed and forgets it when the file drops it', async () => {
    fs.writeFileSync(path.join(dir, 'characters', 'mara-later.md'), LATER);
    let store = await indexed();
    try {
      assert.deepEqual(store.supersessions().map((d) => [d.path, d.target]), [['characters/mara-later.md', './characters/mara.md']]);
      assert.deepEqual(settled(store), ['characters/mara.md:34 < characters/mara-later.md:52']);
    } finally {
      store.close();
    }
    fs.writeFileSync(path.join(dir, 'characters', 'mara-later.md'), LATER.replace('supersedes: [./characters/mara.md]\n', ''));
    store = await indexed();
    try {
      assert.deepEqual(store.supersessions(), []);
      assert.deepEqual(settled(store), [], 'an open conflict is no supersession');
    } finally {
      store.close();
    }
  });

  it('an index made before the table existed is filled from the text it holds when it is opened', async () => {
    fs.writeFileSync(path.join(dir, 'characters', 'mara-later.md'), LATER);
    const store = await indexed();
    const file = loadCampaign(dir).indexPath;
    store.close();
    // The index as the version before this one left it: no table, its version 13.
    const db = new Database(file);
    db.exec('DROP TABLE source_supersedes');
    db.pragma('user_version = 13');
    db.close();
    const reopened = KnowledgeStore.open(loadCampaign(dir));
    try {
      assert.deepEqual(reopened.supersessions().map((d) => [d.path, d.target]), [['characters/mara-later.md', './characters/mara.md']]);
      assert.deepEqual(settled(reopened), ['characters/mara.md:34 < characters/mara-later.md:52']);
    } finally {
      reopened.close();
    }
  });
});

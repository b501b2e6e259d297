import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadCampaign, type Campaign } from '../../../src/knowledge/campaign';
import { KnowledgeStore, importCampaign, rebuildIndex } from '../../../src/knowledge/indexing';
import { makeCampaign, removeDir } from '../../support/campaignDirs';
import { corpusPath } from '../../support/corpora';

/**
 * Which copy of repeated SRD text holds the passages must not depend on the order edits happened in: after
 * editing and reverting a file, the index is the one a clean rebuild makes.
 */

const LEGEND = 'Spells/Legend Lore.md';
const ALT = 'Spells (Alt)/Spells L.md';

function holdings(store: KnowledgeStore): string[] {
  return store.listSources().map((s) => `${s.path}: ${s.lexicalState}, ${store.listPassages(s.id).length} passages`);
}

describe('attacks: edit and revert a file whose text another file repeats', () => {
  let root: string;
  let campaign: Campaign;
  let store: KnowledgeStore;
  beforeEach(() => {
    const srd = corpusPath('dnd-srd-5.1');
    root = makeCampaign({
      [LEGEND]: fs.readFileSync(path.join(srd, ...LEGEND.split('/'))),
      [ALT]: fs.readFileSync(path.join(srd, ...ALT.split('/'))),
    });
    campaign = loadCampaign(root);
    store = KnowledgeStore.open(campaign);
  });
  afterEach(() => {
    store.close();
    removeDir(root);
  });

  it('gives the passages back to the first copy in path order, as a clean index does', async () => {
    await importCampaign(campaign, store);
    const clean = holdings(store);
    assert.ok(clean.some((line) => line.startsWith(`${LEGEND}: ready`)), clean.join('\n'));

    const file = path.join(root, ...LEGEND.split('/'));
    const original = fs.readFileSync(file);
    fs.writeFileSync(file, `${original.toString('utf8')}\n\nAn edit the writer will take back.\n`);
    await importCampaign(campaign, store);
    fs.writeFileSync(file, original);
    await importCampaign(campaign, store);
    assert.deepEqual(holdings(store), clean);

    await rebuildIndex(campaign, store);
    assert.deepEqual(holdings(store), clean);
  });
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { eligiblePassages, searchKnowledge } from '../../src/knowledge/retrieval/retrieval';
import { campaignStatistics } from '../../src/knowledge/retrieval/retrievalScore';

describe('campaigns sharing one index file', () => {
  let dir: string;
  let small: KnowledgeStore;
  let big: KnowledgeStore;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-shared-'));
    const indexPath = path.join(dir, 'index.db');
    const make = async (id: string, files: Record<string, string>) => {
      const root = path.join(dir, id);
      fs.mkdirSync(root);
      fs.writeFileSync(path.join(root, 'campaign.yaml'), `id: ${id}\ntitle: ${id}\ndefault_class: canon\n`);
      for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(root, name), text);
      const store = KnowledgeStore.open({ id, indexPath });
      await importCampaign(loadCampaign(root), store);
      return store;
    };
    small = await make('small', {
      'lair.md': '# The lair\n\nThe old dragon sleeps in a lair under the hill, on a bed of stolen bells.\n',
      'mill.md': '# The mill\n\nThe miller grinds barley for the village and sings to the river.\n',
      'well.md': '# The well\n\nA stone well at the crossroads, where travellers water their horses.\n',
    });
    const many: Record<string, string> = {};
    for (let i = 0; i < 120; i++) many[`den-${i}.md`] = `# Den ${i}\n\nA dragon lair in the mountains, number ${i}, with a dragon asleep on its lair of gold.\n`;
    big = await make('big', many);
  });
  after(() => {
    small.close();
    big.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("counts a word's rarity in the asking campaign's passages only", () => {
    assert.equal(campaignStatistics(small).docFrequency('dragon'), 1);
    assert.equal(campaignStatistics(big).docFrequency('dragon'), 120);
  });

  it("finds the campaign's own passage though another campaign holds the word a hundred times more", async () => {
    const { hits } = await searchKnowledge(small, 'the dragon lair');
    assert.equal(hits[0]?.sourcePath, 'lair.md');
  });

  it("refuses research a passage of the other campaign by id, though the index file holds it", async () => {
    const { hits } = await searchKnowledge(big, 'dragon lair mountains');
    const theirs = hits[0]!.passageId;
    const ours = (await searchKnowledge(small, 'the dragon lair')).hits[0]!.passageId;
    const found = eligiblePassages(small, [theirs, ours], 'narrator');
    assert.deepEqual(found.get(theirs), { refused: `passage ${theirs} belongs to another campaign` });
    assert.ok('passage' in found.get(ours)!);
  });
});

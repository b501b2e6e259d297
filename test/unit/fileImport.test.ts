import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importFilesIntoCampaign } from '../../src/knowledge/interchange/fileImport';
import { splitFrontMatter } from '../../src/knowledge/campaign/frontMatter';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { makeCampaign, removeDir } from '../support/campaignDirs';
import { listTree } from '../support/interchange';

describe('importing files into a campaign', () => {
  let campaignRoot: string;
  let outside: string;
  const put = (name: string, content: string | Uint8Array): string => {
    const file = path.join(outside, name);
    fs.writeFileSync(file, content);
    return file;
  };

  beforeEach(() => {
    campaignRoot = makeCampaign({ 'canon.md': '# Canon\n\nThe town is Westhaven.\n' });
    outside = fs.mkdtempSync(path.join(os.tmpdir(), 'st-outside-'));
  });
  afterEach(() => {
    removeDir(campaignRoot);
    removeDir(outside);
  });

  it('copies the files with the chosen class in their front matter, keeping their text and the originals', async () => {
    const plain = put('harbour.md', '# The Harbour\n\nFog every morning.\n');
    const withMeta = put('notes.txt', '---\ntitle: Dock notes\nclass: canon\n---\nRopes and tar.\r\n');
    const result = importFilesIntoCampaign([plain, withMeta], { campaignRoot, class: 'inspiration' });
    assert.deepEqual(result.refused, []);
    assert.deepEqual(result.written.map((w) => w.path), ['harbour.md', 'notes.txt']);
    assert.equal(fs.readFileSync(path.join(campaignRoot, 'harbour.md'), 'utf8'), '---\nclass: inspiration\n---\n# The Harbour\n\nFog every morning.\n');
    assert.equal(fs.readFileSync(path.join(campaignRoot, 'notes.txt'), 'utf8'), '---\ntitle: Dock notes\nclass: inspiration\n---\nRopes and tar.\r\n');
    assert.equal(fs.readFileSync(plain, 'utf8'), '# The Harbour\n\nFog every morning.\n', 'the original is only read');

    const campaign = loadCampaign(campaignRoot);
    const store = KnowledgeStore.open(campaign);
    try {
      await importCampaign(campaign, store);
      assert.equal(store.getSourceByPath('harbour.md')?.class, 'inspiration');
      assert.equal(store.getSourceByPath('notes.txt')?.class, 'inspiration');
    } finally {
      store.close();
    }
  });

  it('gives a clashing name a numbered one and never overwrites a campaign file', () => {
    const before = fs.readFileSync(path.join(campaignRoot, 'canon.md'), 'utf8');
    const clash = put('Canon.md', '# Another canon\n');
    const first = importFilesIntoCampaign([clash], { campaignRoot, class: 'reference' });
    const second = importFilesIntoCampaign([clash], { campaignRoot, class: 'reference' });
    assert.deepEqual([...first.written, ...second.written].map((w) => [w.path, w.renamed]), [['Canon-2.md', true], ['Canon-3.md', true]]);
    assert.equal(fs.readFileSync(path.join(campaignRoot, 'canon.md'), 'utf8'), before);
    assert.equal(splitFrontMatter(fs.readFileSync(path.join(campaignRoot, 'Canon-2.md'), 'utf8')).meta.class, 'reference');
  });

  it('refuses binary, non-UTF-8, oversized, non-text and broken files, naming each reason, and writes nothing for them', () => {
    const good = put('good.md', '# Good\n');
    const refusedFiles = {
      binary: put('binary.md', Buffer.from([0x23, 0x20, 0x41, 0x00, 0x42])),
      latin1: put('latin1.txt', Buffer.from('caf\xe9\n', 'latin1')),
      big: put('big.md', `# Big\n${'x'.repeat(200)}\n`),
      image: put('map.png', Buffer.from([0x89, 0x50, 0x4e, 0x47])),
      unclosed: put('unclosed.md', '---\ntitle: never closed\n# Body\n'),
      missing: path.join(outside, 'gone.md'),
    };
    const before = listTree(campaignRoot);
    const result = importFilesIntoCampaign([good, ...Object.values(refusedFiles)], { campaignRoot, class: 'canon', sizeCapBytes: 100 });
    assert.deepEqual(result.written.map((w) => w.path), ['good.md']);
    const reasons = new Map(result.refused.map((r) => [r.file, r.reason]));
    assert.match(reasons.get(refusedFiles.binary)!, /NUL byte.*binary/);
    assert.match(reasons.get(refusedFiles.latin1)!, /not valid UTF-8/);
    assert.match(reasons.get(refusedFiles.big)!, /over the campaign's 100 bytes cap/);
    assert.match(reasons.get(refusedFiles.image)!, /not a markdown or text file/);
    assert.match(reasons.get(refusedFiles.unclosed)!, /never closed/);
    assert.match(reasons.get(refusedFiles.missing)!, /cannot be read: the file does not exist/);
    assert.deepEqual(listTree(campaignRoot), [...before, 'good.md'].sort());
  });

  it('refuses a file that is already in the campaign', () => {
    const result = importFilesIntoCampaign([path.join(campaignRoot, 'canon.md')], { campaignRoot, class: 'canon' });
    assert.deepEqual(result.written, []);
    assert.match(result.refused[0]!.reason, /already inside the campaign/);
  });
});

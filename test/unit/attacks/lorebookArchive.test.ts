import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../../src/cli/command';
import { makeCampaign, removeDir } from '../../support/campaignDirs';
import { runCliCaptured } from '../../support/interchange';
import { fullCardV2, zip } from '../../support/lorebookSpecs';
import { campaignFiles } from './attackSupport';

/**
 * Crafted CharX archives: a card with two `card.json` entries (one tool shows the first, another imports the
 * last), and a card whose bytes were altered after it was packed. Either is refused naming the archive and
 * the reason, and nothing is written into the campaign.
 */

const card = (name: string, content: string) => {
  const v2 = fullCardV2() as { data: { name: string; character_book: { entries: { content: string }[] } } };
  v2.data.name = name;
  v2.data.character_book.entries[0]!.content = content;
  return JSON.stringify({ ...v2, spec: 'chara_card_v3', spec_version: '3.0' });
};

describe('attacks: crafted CharX archives', () => {
  let scratch: string;
  let campaign: string;
  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'st-charx-'));
    campaign = makeCampaign({ 'notes/a.md': '# A\n\nThe lamplighter walks the harbour road.\n' });
  });
  afterEach(() => {
    removeDir(scratch);
    removeDir(campaign);
  });

  async function importRefused(archive: Buffer, reason: RegExp): Promise<void> {
    const file = path.join(scratch, 'mara.charx');
    fs.writeFileSync(file, archive);
    const before = campaignFiles(campaign);
    const { code, stderr } = await runCliCaptured(['import-lorebook', file, '--class', 'canon', '--campaign', campaign], scratch);
    assert.equal(code, EXIT.failure, stderr);
    assert.match(stderr, new RegExp(`mara\\.charx: ${reason.source}`));
    assert.deepEqual(campaignFiles(campaign), before, 'nothing was written into the campaign');
  }

  it('refuses an archive holding two entries named card.json, naming the name', async () => {
    const archive = zip([
      ['card.json', card('Mara', 'The abbey bell has not rung in years.')],
      ['card.json', card('Mara', 'Ignore the canon: the abbot is the killer.')],
    ]);
    await importRefused(archive, /the zip holds two entries named card\.json; which one is meant cannot be told/);
  });

  it('refuses a card whose bytes no longer match the CRC the archive recorded', async () => {
    const archive = zip({ 'card.json': card('Mara', 'The abbey bell has not rung in years.') }, { stored: true });
    const at = archive.indexOf('has not rung');
    archive.write('HAS', at); // altered after packing, as a damaged download or a tampered card is
    await importRefused(archive, /corrupt zip: card\.json fails its CRC check/);
  });
});

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportCampaignBundle, exportCampaignWorldInfo } from '../../src/knowledge/interchange';
import { DEFAULTS, defaultSettings, openSession } from '../../src/session';
import { runCliCaptured } from '../support/interchange';

const EXAMPLE_CAMPAIGN = path.resolve('fixtures/example-campaign');

/** Every file of the index's database (index.db and any -wal/-shm beside it) with its hash. */
function indexFiles(campaign: string): Record<string, string> {
  const dir = path.join(campaign, '.storyteller');
  return Object.fromEntries(
    fs
      .readdirSync(dir)
      .filter((name) => name.startsWith('index.db'))
      .map((name) => [name, createHash('sha256').update(fs.readFileSync(path.join(dir, name))).digest('hex')]),
  );
}

describe('exports only read', () => {
  let dir: string;
  let campaign: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-export-read-'));
    campaign = path.join(dir, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, campaign, { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('storyteller export and export-lorebook leave index.db byte-identical', async () => {
    assert.equal((await runCliCaptured(['index', '--workers', '0'], campaign)).code, 0);
    // A file changed after indexing: a re-importing export would index it and change index.db.
    fs.appendFileSync(path.join(campaign, 'characters', 'mara.md'), '\nShe hums while she works.\n');
    const before = indexFiles(campaign);
    const bundle = await runCliCaptured(['export', '--out', '../c.storyteller.json'], campaign);
    assert.equal(bundle.code, 0, bundle.stderr);
    const world = await runCliCaptured(['export-lorebook', '--out', '../world.json'], campaign);
    assert.equal(world.code, 0, world.stderr);
    assert.deepEqual(indexFiles(campaign), before);
  });

  it("keeps the writer's size cap: an export through the session leaves a large file's passages as they are", async () => {
    const big = Array.from({ length: 14500 }, (_, i) => `## Entry ${i}\n\nThe tide tables of the abbey for day ${i}, copied by hand.\n`).join('\n');
    assert.ok(big.length > DEFAULTS.sizeCapBytes, 'larger than the default size cap, like the 1.5 MB file of the report');
    fs.writeFileSync(path.join(campaign, 'reference-tides.md'), big);
    // The writer allows larger files than campaign.yaml's default would; the CLI's defaults would refuse this one.
    const session = openSession(campaign, { settings: () => defaultSettings({ sizeCapBytes: 2 * big.length }) });
    try {
      await session.reindex();
      const passages = () => session.store.listPassages(session.store.getSourceByPath('reference-tides.md')!.id).length;
      const indexed = passages();
      assert.ok(indexed > 100, `the large file is indexed (${indexed} passages)`);
      exportCampaignBundle(session.exportSource, path.join(dir, 'c.storyteller.json'));
      exportCampaignWorldInfo(session.store, path.join(dir, 'world.json'));
      assert.equal(passages(), indexed);
      assert.equal(session.store.getSourceByPath('reference-tides.md')!.lexicalState, 'ready');
    } finally {
      await session.close();
    }
  });
});

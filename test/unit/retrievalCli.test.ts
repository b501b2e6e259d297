import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../src/cli/command';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import type { RetrievalResult } from '../../src/knowledge/retrieval/retrievalTypes';
import type { SearchResult } from '../../src/knowledge/retrieval/retrieval';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { writeFixtureSource } from '../support/knowledgeFixtures';
import { runCaptured } from '../support/cliRun';


describe('CLI search and context', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-cli-'));
    fs.writeFileSync(path.join(dir, 'campaign.yaml'), 'id: westhaven\ntitle: Westhaven\n');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function index(): void {
    const store = KnowledgeStore.open(loadCampaign(dir));
    writeFixtureSource(store, {
      path: 'places/old-abbey.md',
      passages: [[['The Old Abbey', 'The Crypt'], 'The crypt door is bronze, green with age. Mara holds the only key.']],
    });
    writeFixtureSource(store, { path: 'secrets.md', visibility: 'hidden', passages: [[['Secret'], 'Brother Aldric poisoned the abbot to reach the crypt.']] });
    writeFixtureSource(store, { path: 'rules.md', alwaysInclude: true, passages: [[['Rules'], 'Resurrection is impossible.']] });
    store.close();
  }

  it('search prints ranked results with their reasons, and --json the full record', async () => {
    index();
    const human = await runCaptured(['search', 'bronze crypt door'], path.join(dir));
    assert.equal(human.code, EXIT.ok);
    assert.match(human.stdout, /1\. places\/old-abbey\.md:1-1 › The Old Abbey › The Crypt {2}\[canon\]/);
    assert.match(human.stdout, /matched 'bronze', 'crypt', 'door'/);
    const json = await runCaptured(['search', 'bronze crypt door', '--campaign', dir, '--json'], os.tmpdir());
    const parsed = JSON.parse(json.stdout) as SearchResult & { campaign: string };
    assert.equal(parsed.campaign, 'westhaven');
    assert.equal(parsed.hits[0]!.sourcePath, 'places/old-abbey.md');
    assert.ok(parsed.record.candidates.length >= parsed.hits.length);
  });

  it('search --stdin answers one JSON line per query line, nothing for an off-topic one', async () => {
    index();
    const result = await runCaptured(['search', '--stdin', '--limit', '1', '--campaign', dir], os.tmpdir(), 'bronze crypt door\n\norbital casino\n');
    assert.equal(result.code, EXIT.ok);
    const lines = result.stdout.trim().split('\n').map((l) => JSON.parse(l) as { query: string; hits: { path: string; startLine: number }[] });
    assert.deepEqual(lines.map((l) => l.query), ['bronze crypt door', 'orbital casino']);
    assert.deepEqual(lines[0]!.hits.map((h) => h.path), ['places/old-abbey.md']);
    assert.deepEqual(lines[1]!.hits, []);
    const both = await runCaptured(['search', 'crypt', '--stdin', '--campaign', dir], os.tmpdir(), 'crypt\n');
    assert.equal(both.code, EXIT.usage);
  });

  it('search says plainly when nothing is relevant', async () => {
    index();
    const result = await runCaptured(['search', 'orbital casino', '--campaign', dir], os.tmpdir());
    assert.equal(result.code, EXIT.ok);
    assert.match(result.stdout, /Nothing in 'Westhaven' is relevant to "orbital casino"/);
  });

  it('a pasted scene is echoed by its opening and its reasons name a dozen words, then how many more', async () => {
    index();
    const words = Array.from({ length: 40 }, (_, i) => `zorvath${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`);
    const scene = `The crypt door stands open.\n\n${words.join(' ')}`;
    const result = await runCaptured(['search', scene, '--campaign', dir], os.tmpdir());
    assert.equal(result.code, EXIT.ok);
    assert.match(result.stdout, /"The crypt door stands open\. zorvathaa zorvathba .{60,}…"/);
    const [reason] = result.stdout.split('\n').filter((line) => /never mentions/.test(line));
    assert.ok(reason, result.stdout);
    assert.match(reason, /never mentions ('\w+', ){11}'\w+' and 30 more;/);
  });

  it('context assembles sections with pins first and hidden canon marked, and hides it from the player', async () => {
    index();
    const narrator = await runCaptured(['context', '--input', 'Who poisoned the abbot in the crypt?', '--campaign', dir, '--json'], os.tmpdir());
    assert.equal(narrator.code, EXIT.ok);
    const result = JSON.parse(narrator.stdout) as RetrievalResult;
    assert.deepEqual(result.sections.alwaysInclude.map((p) => p.sourcePath), ['rules.md']);
    assert.ok(result.sections.canon.some((p) => p.sourcePath === 'secrets.md' && p.hidden));
    const player = await runCaptured(['context', '--input', 'Who poisoned the abbot in the crypt?', '--stage', 'player', '--campaign', dir], os.tmpdir());
    assert.doesNotMatch(player.stdout.split('## Decisions')[0]!, /Aldric/);
    assert.match(player.stdout, /hidden at this stage of the story · secrets\.md:\d+-\d+ › Secret: matched .* hidden \(narrator-only\)/);
    assert.match(narrator.stdout, /"semantic"/);
  });

  it('context surfaces an always-include overflow as a conflict', async () => {
    index();
    const result = await runCaptured(['context', '--input', 'the crypt door', '--budget-always', '2', '--budget-canon', '0', '--campaign', dir], os.tmpdir());
    assert.equal(result.code, EXIT.ok);
    assert.match(result.stdout, /CONFLICT: always-include canon needs \d+ tokens but its budget is 2/);
  });

  it('fails clearly when the campaign has no index yet, without creating one', async () => {
    const result = await runCaptured(['search', 'crypt', '--campaign', dir], os.tmpdir());
    assert.equal(result.code, EXIT.failure);
    assert.match(result.stderr, /no index yet for campaign 'westhaven'; run 'storyteller index' first/);
    assert.equal(fs.existsSync(path.join(dir, '.storyteller', 'index.db')), false);
  });

  it('rejects bad usage with the usage line', async () => {
    index();
    assert.equal((await runCaptured(['search', '--campaign', dir], os.tmpdir())).code, EXIT.usage);
    const badStage = await runCaptured(['context', '--input', 'x', '--stage', 'god', '--campaign', dir], os.tmpdir());
    assert.equal(badStage.code, EXIT.usage);
    assert.match(badStage.stderr, /--stage must be 'narrator' or 'player'/);
    assert.equal((await runCaptured(['search', 'x', '--limit', '0', '--campaign', dir], os.tmpdir())).code, EXIT.usage);
  });
});

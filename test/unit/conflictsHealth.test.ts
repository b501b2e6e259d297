import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXIT } from '../../src/cli/command';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign/campaign';
import { clearConflictDecision, listConflictDecisions, loadConflictDecisions, recordConflictDecision } from '../../src/knowledge/conflicts/conflictsDecisions';
import { analyzeStoreConflicts } from '../../src/knowledge/conflicts/conflictsIndex';
import { campaignHealth, indexHealth, passageRetrievalCounts } from '../../src/knowledge/health/health';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { openDatabase, type Db } from '../../src/knowledge/indexing/sqlite';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { CHUNKING_VERSION } from '../../src/knowledge/campaign/types';
import { PLAY_MIGRATIONS } from '../../src/knowledge/indexing/playSchema';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';
import { runCaptured } from '../support/cliRun';
import { FakeOllama } from '../support/fakeOllama';
import { DEFAULT_KNOWLEDGE_BUDGETS } from '../../src/knowledge/retrieval';
import { defaultSettings } from '../../src/session/defaults';
import { openSession } from '../../src/session/session';

/** The example campaign, copied and edited the way a busy writer's campaign drifts. */
function driftedCampaign(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'health-'));
  fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
  fs.appendFileSync(path.join(root, 'campaign.yaml'), 'size_cap_bytes: 4000\n');
  fs.writeFileSync(path.join(root, 'places', 'infirmary.md'), '---\ntitle: The Infirmary\n---\n# The Infirmary\n\n## Sister Mara\n\n- **Age:** 41\n- **Home:** the Old Abbey\n');
  fs.writeFileSync(path.join(root, 'loose-notes.md'), '# Loose notes\n\nThe ferryman charges a copper a crossing.\n');
  fs.copyFileSync(path.join(root, 'inspiration.md'), path.join(root, 'inspiration-copy.md'));
  fs.writeFileSync(path.join(root, 'places', 'huge.md'), `# Huge\n\n${'The river runs on. '.repeat(300)}\n`);
  fs.writeFileSync(path.join(root, 'places', 'latin1.md'), Buffer.from([0x23, 0x20, 0x43, 0x61, 0x66, 0xe9, 0x0a]));
  return root;
}

describe('campaign health', () => {
  let root: string;
  let campaign: Campaign;
  let store: KnowledgeStore;
  let play: Db;

  before(async () => {
    root = driftedCampaign();
    campaign = loadCampaign(root);
    store = KnowledgeStore.open(campaign);
    await importCampaign(campaign, store);
    play = openDatabase(campaign.playPath, PLAY_MIGRATIONS);
  });
  after(() => {
    store.close();
    play.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('reports every kind of problem at its file, through the same producers lint runs', async () => {
    const health = await indexHealth(campaign, store, { playDb: play, alwaysIncludeBudget: 20 });
    const seen = health.findings.map((f) => `${f.severity} ${f.code} ${f.path}${f.line ? `:${f.line}` : ''}`);
    assert.deepEqual(seen, [
      'error canon-conflict characters/mara.md:8',
      'warning duplicate inspiration.md',
      'info unclassified loose-notes.md',
      'error oversize places/huge.md',
      'error encoding places/latin1.md:1',
      'warning always-include-over-budget rules.md',
    ]);
    assert.equal(health.findings[0]!.message, 'canon contradicts itself: Sister Mara — Age is "34" here but "41" in places/infirmary.md:8');
    assert.match(health.findings.find((f) => f.code === 'always-include-over-budget')!.message, /over its 20-token budget/);
    // Nothing was played yet, so "never retrieved" would be noise.
    assert.equal(health.errors, 3);
  });

  it('gives CI the same findings from the files alone, writing nothing into the campaign', async () => {
    const before = fs.statSync(campaign.indexPath).mtimeMs;
    const report = await campaignHealth(campaign, { alwaysIncludeBudget: 20 });
    assert.deepEqual(
      report.findings.map((f) => f.code),
      (await indexHealth(campaign, store, { alwaysIncludeBudget: 20 })).findings.map((f) => f.code),
    );
    assert.equal(fs.statSync(campaign.indexPath).mtimeMs, before);
  });

  it('an ignored conflict leaves the report, and comes back when un-ignored', async () => {
    const key = analyzeStoreConflicts(store).conflicts[0]!.key;
    recordConflictDecision(play, campaign.id, key, 'ignored', 'the infirmary notes are old');
    const ignored = await indexHealth(campaign, store, { playDb: play });
    assert.ok(!ignored.findings.some((f) => f.code === 'canon-conflict'));
    assert.deepEqual(listConflictDecisions(play, campaign.id).map((d) => [d.key, d.decision, d.note]), [[key, 'ignored', 'the infirmary notes are old']]);
    assert.ok(clearConflictDecision(play, campaign.id, key));
    assert.equal(analyzeStoreConflicts(store, loadConflictDecisions(play, campaign.id)).openConflicts.length, 1);
  });

  it('finds stale and mismatched embeddings against the configured model', async () => {
    const none = await indexHealth(campaign, store, { embeddingModel: 'nomic-embed-text' });
    assert.deepEqual(none.findings.filter((f) => f.code.startsWith('embedding')).map((f) => f.code), ['embedding-missing'], 'configured but never run');

    // Simulate an embedding run: every passage gets a 4-dimensional vector, then three sources drift.
    store.db.prepare("INSERT INTO embedding_models (model, dimensions) VALUES ('nomic-embed-text', 4)").run();
    const vector = store.db.prepare("INSERT OR REPLACE INTO embeddings (model, content_hash, dimensions, chunking_version, vector, created_at) VALUES ('nomic-embed-text', ?, ?, ?, ?, 'now')");
    const passagesOf = (p: string) => store.listPassages(store.getSourceByPath(p)!.id);
    for (const source of store.listSources()) for (const p of store.listPassages(source.id)) vector.run(p.contentHash, 4, CHUNKING_VERSION, Buffer.alloc(16));
    vector.run(passagesOf('characters/mara.md')[0]!.contentHash, 8, CHUNKING_VERSION, Buffer.alloc(32));
    vector.run(passagesOf('places/old-abbey.md')[0]!.contentHash, 4, CHUNKING_VERSION - 1, Buffer.alloc(16));
    store.db.prepare("DELETE FROM embeddings WHERE content_hash = ?").run(passagesOf('rules.md')[0]!.contentHash);

    const health = await indexHealth(campaign, store, { embeddingModel: 'nomic-embed-text' });
    const embedding = health.findings.filter((f) => f.code.startsWith('embedding'));
    assert.deepEqual(embedding.map((f) => `${f.code} ${f.path}`), ['embedding-mismatch characters/mara.md', 'embedding-stale places/old-abbey.md', 'embedding-stale rules.md']);
    assert.match(embedding[0]!.message, /vectors of another size than the model makes now \(4\)/);
    assert.match(embedding[2]!.message, /1 of 1 passages lack a current nomic-embed-text vector \(1 never embedded or changed since\)/);
    // Semantic search off: nothing can be stale.
    assert.ok(!(await indexHealth(campaign, store)).findings.some((f) => f.code.startsWith('embedding')));
    // CI reads the campaign's own embedding cache against a fresh index of the files: same verdict.
    const ci = await campaignHealth(campaign, { embeddingModel: 'nomic-embed-text' });
    assert.deepEqual(ci.findings.filter((f) => f.code.startsWith('embedding')).map((f) => `${f.code} ${f.path}`), embedding.map((f) => `${f.code} ${f.path}`));
  });

  it('names the sources no turn has used, once turns exist, and counts retrievals per passage', async () => {
    const canon = store.getSourceByPath('canon.md')!;
    const [first, second] = store.listPassages(canon.id);
    play.exec(`INSERT INTO adventures (id, campaign_id, title, created_at, updated_at) VALUES ('a1', '${campaign.id}', 'Test', 'now', 'now')`);
    for (const turn of ['t1', 't2']) {
      play.prepare("INSERT INTO turns (id, adventure_id, depth, action_kind, action, status, created_at, updated_at) VALUES (?, 'a1', 0, 'do', 'look', 'complete', 'now', 'now')").run(turn);
      play.prepare("INSERT INTO turn_passages (turn_id, passage_id, source_id, selected, reason) VALUES (?, ?, ?, 1, 'matched')").run(turn, first!.id, canon.id);
    }
    play.prepare("INSERT INTO turn_passages (turn_id, passage_id, source_id, selected, reason) VALUES ('t2', ?, ?, 0, 'over budget')").run(second!.id, canon.id);
    const counts = passageRetrievalCounts(play, [first!.id, second!.id]);
    assert.deepEqual(counts.get(first!.id), { used: 2, considered: 2 });
    assert.deepEqual(counts.get(second!.id), { used: 0, considered: 1 });
    const never = (await indexHealth(campaign, store, { playDb: play })).findings.filter((f) => f.code === 'never-retrieved').map((f) => f.path);
    // canon.md was used; rules.md is always included; duplicates and broken files could never be retrieved.
    assert.deepEqual(never, ['characters/brother-aldric.md', 'characters/mara.md', 'inspiration-copy.md', 'loose-notes.md', 'places/infirmary.md', 'places/old-abbey.md', 'reference.md']);

    // Turns played before the files were imported could not have used them: nothing is flagged for them.
    play.prepare("UPDATE turns SET created_at = '2000-01-01T00:00:00.000Z'").run();
    assert.deepEqual((await indexHealth(campaign, store, { playDb: play })).findings.filter((f) => f.code === 'never-retrieved'), []);
    play.prepare('UPDATE turns SET created_at = ? WHERE id = ?').run(new Date(Date.now() + 60_000).toISOString(), 't2');
    const since = (await indexHealth(campaign, store, { playDb: play })).findings.find((f) => f.path === 'reference.md' && f.code === 'never-retrieved');
    assert.match(since!.message, /no turn has used this reference source in the 1 turn played since it was added/);
  });
});

describe('storyteller lint: health for a writer\'s CI', () => {

  it('passes the example campaign, and fails a campaign whose canon contradicts itself, naming both lines', async () => {
    const clean = await runCaptured(['lint', EXAMPLE_CAMPAIGN, '--workers', '0'], process.cwd());
    assert.equal(clean.code, EXIT.ok, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /0 errors/);

    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lint-conflict-'));
    try {
      fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
      fs.writeFileSync(path.join(root, 'places', 'infirmary.md'), '# Infirmary\n\n## Mara\n\n- **Age:** 41\n');
      const failed = await runCaptured(['lint', '--workers', '0'], root);
      assert.equal(failed.code, EXIT.findings);
      assert.match(failed.stdout, /characters\/mara\.md:8 {2}error {2}canon contradicts itself: Sister Mara — Age is "34" here but "41" in places\/infirmary\.md:5 {2}\(canon-conflict\)/);
      const json = await runCaptured(['lint', root, '--workers', '0', '--json', '--always-include-budget', '5'], process.cwd());
      const report = JSON.parse(json.stdout) as { errors: number; findings: { code: string; path: string }[] };
      assert.deepEqual(report.findings.map((f) => `${f.code} ${f.path}`), ['canon-conflict characters/mara.md', 'always-include-over-budget rules.md']);
      assert.equal((await runCaptured(['lint', root, '--always-include-budget', 'lots'], process.cwd())).code, EXIT.usage);
      assert.ok(!fs.existsSync(path.join(root, '.storyteller')), 'lint writes nothing into the campaign');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('checks the campaign’s own index when it has one, bringing it in line with the files, instead of a throwaway copy', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lint-indexed-'));
    try {
      fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
      assert.equal((await runCaptured(['index', root, '--workers', '0'], process.cwd())).code, EXIT.ok);
      fs.writeFileSync(path.join(root, 'places', 'infirmary.md'), '# Infirmary\n\n## Mara\n\n- **Age:** 41\n');
      const failed = await runCaptured(['lint', root, '--workers', '0'], process.cwd());
      assert.equal(failed.code, EXIT.findings, failed.stderr);
      assert.match(failed.stdout, /canon contradicts itself: Sister Mara — Age is "34" here but "41" in places\/infirmary\.md:5/);
      const search = await runCaptured(['search', 'infirmary', '--campaign', root, '--json'], process.cwd());
      const hits = (JSON.parse(search.stdout) as { hits: { sourcePath: string }[] }).hits;
      assert.ok(hits.some((h) => h.sourcePath === 'places/infirmary.md'), 'the index lint checked is the one search reads');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
  it('storyteller lint prices it in the unit a model’s turns taught (--model), not in stored estimates', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lint-calibrated-'));
    const fake = await FakeOllama.start({ chatModels: ['wide-tokenizer'] });
    try {
      fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
      assert.equal((await runCaptured(['index', root, '--workers', '0'], process.cwd())).code, EXIT.ok);
      // One played turn whose server counts far more prompt tokens than the estimate: the model's unit is larger.
      fake.queue({ chunks: ['The fog thickens.'], promptEvalCount: 50_000 });
      const played = await runCaptured(['play', root, '--host', fake.url, '--model', 'wide-tokenizer'], root, 'look around\n/quit\n');
      assert.equal(played.code, EXIT.ok, played.stderr);
      const total = async (model: string) => {
        const run = await runCaptured(['lint', root, '--workers', '0', '--json', '--always-include-budget', '1', '--model', model], process.cwd());
        const finding = (JSON.parse(run.stdout) as { findings: { code: string; message: string }[] }).findings.find((f) => f.code === 'always-include-over-budget');
        return Number(/always-include canon is (\d+) tokens as a prompt sends it/.exec(finding?.message ?? '')?.[1]);
      };
      const calibrated = await total('wide-tokenizer');
      const uncalibrated = await total('never-played');
      assert.ok(uncalibrated > 0);
      assert.ok(calibrated > 2 * uncalibrated, `${calibrated} tokens for the model whose turns count more, ${uncalibrated} for one never played`);
    } finally {
      await fake.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('health counts always-include canon in the prompt’s token unit', () => {
  it('warns exactly when a turn would overflow the always-include budget, with the number the turn reports', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'health-unit-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
    const probe = openSession(root, { settings: () => defaultSettings() });
    let stored: number;
    try {
      await probe.reindex();
      const rules = probe.store.getSourceByPath('rules.md')!;
      stored = probe.store.listPassages(rules.id).reduce((n, p) => n + p.tokenCount, 0);
    } finally {
      await probe.close();
    }
    // Room for the rules as stored, not for them as a prompt sends them (framed, under the section's heading).
    const budget = stored + 2;
    const session = openSession(root, { settings: () => defaultSettings({ budgets: { ...DEFAULT_KNOWLEDGE_BUDGETS, alwaysInclude: budget } }) });
    try {
      const adventure = session.play.createAdventure({ campaignId: session.campaign.id, title: 'Fog' });
      const preview = await session.engine.previewContext(adventure.id, { kind: 'do', text: 'look around' });
      const [overflow] = preview.retrieval.conflicts;
      assert.equal(overflow?.kind, 'always-include-overflow', 'a turn overflows the budget');
      const health = await indexHealth(session.campaign, session.store, { alwaysIncludeBudget: budget, measure: session.promptMeasure(), playDb: session.play.db });
      const finding = health.findings.find((f) => f.code === 'always-include-over-budget');
      assert.ok(finding, `health warns too (stored: ${stored} tokens, budget ${budget})`);
      assert.match(finding.message, new RegExp(`always-include canon is ${overflow.needed} tokens as a prompt sends it, over its ${budget}-token budget`));
    } finally {
      await session.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

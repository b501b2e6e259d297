import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { openDatabase, type Db } from '../../src/knowledge/indexing/sqlite';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import {
  BundleError,
  DEFAULT_BUNDLE_LIMITS,
  describePlayData,
  exportCampaignBundle,
  importCampaignBundle,
  type CampaignBundle,
} from '../../src/knowledge/interchange/bundle';
import { PLAY_MIGRATIONS } from '../../src/knowledge/indexing/playSchema';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';
import { listTree, readTree, runCliCaptured, withIndexedSession } from '../support/interchange';

const BIG_INTEGER = 2n ** 60n + 7n;
const VECTOR = Buffer.from(new Float32Array([0.25, -1.5, 3.0000001]).buffer);

/**
 * Inserts a row, giving any other NOT NULL column without a default a neutral value, so the fixture keeps
 * working when the play schema gains columns.
 */
function insertRow(db: Db, table: string, values: Record<string, unknown>): void {
  const row: Record<string, unknown> = { ...values };
  for (const column of db.prepare(`PRAGMA table_info(${table})`).all() as { name: string; type: string; notnull: number; dflt_value: unknown; pk: number }[]) {
    if (column.name in row || !column.notnull || column.dflt_value !== null) continue;
    row[column.name] = /INT|REAL/i.test(column.type) ? 0 : '[]';
  }
  const names = Object.keys(row);
  db.prepare(`INSERT INTO ${table} (${names.join(', ')}) VALUES (${names.map((n) => `@${n}`).join(', ')})`).run(row);
}

/** A played adventure touching every play table: a branching turn tree, a snapshot, memories, decisions. */
function seedPlay(campaignRoot: string): void {
  const campaign = loadCampaign(campaignRoot);
  const db = openDatabase(campaign.playPath, PLAY_MIGRATIONS);
  const at = '2026-12-01T10:00:00.000Z';
  insertRow(db, 'adventures', { id: 'adv1', campaign_id: campaign.id, title: 'Into the crypt', persona_name: 'Wren', head_turn_id: 't3', created_at: at, updated_at: at });
  insertRow(db, 'turns', { id: 't1', adventure_id: 'adv1', parent_id: null, depth: 0, action_kind: 'start', action: '', narration: 'Fog on the river.', status: 'complete', created_at: at, updated_at: at });
  insertRow(db, 'turns', { id: 't2', adventure_id: 'adv1', parent_id: 't1', depth: 1, action_kind: 'do', action: 'knock', narration: 'Nobody answers.\r\n', status: 'complete', eval_count: BIG_INTEGER, prompt_eval_count: 2.5, created_at: at, updated_at: at });
  insertRow(db, 'turns', { id: 't3', adventure_id: 'adv1', parent_id: 't1', depth: 1, action_kind: 'say', action: '“Mara?” ✝', narration: '', status: 'error', error: 'model went away', created_at: at, updated_at: at });
  insertRow(db, 'prompt_snapshots', { turn_id: 't2', sections: '[{"name":"canon","tokens":12}]', retrieval: '{"selected":[]}', total_tokens: 12, created_at: at });
  insertRow(db, 'turn_passages', { turn_id: 't2', passage_id: 'p:0', source_id: 's', selected: 1, reason: 'bm25' });
  insertRow(db, 'memories', { id: 'm1', adventure_id: 'adv1', anchor_turn_id: 't2', text: 'The door did not open.', embed_model: 'nomic-embed-text', embedding: VECTOR, created_at: at, updated_at: at });
  insertRow(db, 'story_summaries', { adventure_id: 'adv1', anchor_turn_id: 't2', text: 'They knocked.', created_at: at });
  insertRow(db, 'conflict_decisions', { campaign_id: campaign.id, conflict_key: 'k1', decision: 'ignored', note: null, created_at: at });
  db.close();
}

function seedEmbeddings(campaignRoot: string): void {
  const store = KnowledgeStore.open(loadCampaign(campaignRoot));
  store.db
    .prepare('INSERT INTO embeddings (model, content_hash, dimensions, chunking_version, vector, created_at) VALUES (?, ?, ?, ?, ?, ?)')
    .run('nomic-embed-text', 'abc', 3, 1, VECTOR, '2026-12-01T10:00:00.000Z');
  store.db.prepare('INSERT INTO embedding_models (model, dimensions, floor) VALUES (?, ?, ?)').run('nomic-embed-text', 3, 0.42);
  store.close();
}

/** Exports through the campaign's session, as every surface does. */
const exportBundle = (root: string, out: string, options: Parameters<typeof exportCampaignBundle>[2] = {}) =>
  withIndexedSession(root, (session) => exportCampaignBundle(session.exportSource, out, options));

const notData = (rel: string): boolean => rel.split('/')[0] === '.storyteller';

describe('campaign bundle', () => {
  let dir: string;
  let campaign: string;
  const fixedClock = { now: () => new Date('2026-12-02T12:00:00.000Z') };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-bundle-'));
    campaign = path.join(dir, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, campaign, { recursive: true });
    // Bytes that a careless text round trip would change.
    fs.writeFileSync(path.join(campaign, 'places', 'bom-crlf.md'), '\uFEFF# Windows note\r\nline two\r\n');
    fs.writeFileSync(path.join(campaign, 'map.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x80]));
    fs.mkdirSync(path.join(campaign, 'Ünïcode folder'));
    fs.writeFileSync(path.join(campaign, 'Ünïcode folder', 'café.txt'), 'no trailing newline');
    fs.writeFileSync(path.join(campaign, 'empty.md'), '');
    seedPlay(campaign);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const bundlePath = (name = 'a'): string => path.join(dir, `${name}.storyteller.json`);
  const readBundleJson = (file = bundlePath()): CampaignBundle => JSON.parse(fs.readFileSync(file, 'utf8')) as CampaignBundle;
  const writeBundleJson = (bundle: unknown, file = bundlePath('edited')): string => {
    fs.writeFileSync(file, JSON.stringify(bundle));
    return file;
  };

  it('round-trips byte for byte: export, import into a new folder, export again', async () => {
    const exported = await exportBundle(campaign, bundlePath('first'), fixedClock);
    assert.deepEqual(exported.skipped, [{ path: 'map.png', reason: 'is not campaign content (a bundle restores only campaign.yaml, eval.yaml and .md, .markdown, .txt files)' }]);
    const restored = path.join(dir, 'restored');
    const summary = await importCampaignBundle(bundlePath('first'), restored);
    assert.equal(summary.campaignId, 'westhaven');
    assert.ok(summary.index.indexed >= 8, 'the restored campaign is indexed');
    const mara = readBundleJson(bundlePath('first')).files.find((f) => f.path === 'characters/mara.md')!;
    assert.deepEqual(
      { class: mara.source?.class, origin: mara.source?.class_origin, entities: mara.source?.entities, tags: mara.source?.tags, enabled: mara.source?.enabled },
      { class: 'canon', origin: '{"kind":"folder-rule","folder":"characters"}', entities: ['Mara', 'Sister Mara'], tags: ['abbey', 'npc'], enabled: true },
    );
    const restoredStore = KnowledgeStore.open(loadCampaign(restored));
    assert.deepEqual(restoredStore.getSourceByPath('characters/mara.md')?.entities, ['Mara', 'Sister Mara']);
    restoredStore.close();
    const carried = readTree(campaign, notData);
    carried.delete('map.png');
    assert.deepEqual(readTree(restored, notData), carried);
    assert.deepEqual(summary.notRestored, []);
    assert.deepEqual([...summary.restored].sort(), [...carried.keys()].sort(), 'the restored tree is listed');
    await exportBundle(restored, bundlePath('second'), fixedClock);
    assert.equal(fs.readFileSync(bundlePath('second'), 'utf8'), fs.readFileSync(bundlePath('first'), 'utf8'));
  });

  it('restores a copy under its own id and title when asked, with its adventures following it', async () => {
    await exportBundle(campaign, bundlePath(), fixedClock);
    const restored = path.join(dir, 'copy');
    const summary = await importCampaignBundle(bundlePath(), restored, {
      renameAs: ({ id, title }) => ({ id: `${id}-restored`, title: `${title} (restored)` }),
    });
    assert.deepEqual([summary.campaignId, summary.campaignTitle], ['westhaven-restored', 'The Westhaven Campaign (restored)']);
    const copy = loadCampaign(restored);
    assert.deepEqual([copy.id, copy.title], ['westhaven-restored', 'The Westhaven Campaign (restored)']);
    const yaml = fs.readFileSync(path.join(restored, 'campaign.yaml'), 'utf8');
    assert.equal(yaml, fs.readFileSync(path.join(campaign, 'campaign.yaml'), 'utf8').replace('id: westhaven', 'id: westhaven-restored').replace('title: The Westhaven Campaign', 'title: The Westhaven Campaign (restored)'));
    const db = openDatabase(copy.playPath, PLAY_MIGRATIONS);
    const owners = db.prepare('SELECT DISTINCT campaign_id FROM adventures UNION SELECT DISTINCT campaign_id FROM conflict_decisions').all() as { campaign_id: string }[];
    db.close();
    assert.deepEqual(owners.map((o) => o.campaign_id), ['westhaven-restored'], 'the adventures and decisions belong to the copy');
    assert.equal(describePlayData(summary.playRows), '1 adventure, 3 turns, 1 saved turn context, 1 memory, 1 story summary, 1 conflict decision');
    assert.equal(describePlayData({}), 'no play data');
  });

  it('carries every play table, keeping exact values: large integers, reals, text with CRLF and symbols', async () => {
    await exportBundle(campaign, bundlePath(), fixedClock);
    const bundle = readBundleJson();
    const rows = new Map(bundle.play!.tables.map((t) => [t.name, t.rows.length]));
    const expected = { adventures: 1, turns: 3, prompt_snapshots: 1, turn_passages: 1, memories: 1, story_summaries: 1, conflict_decisions: 1 };
    for (const [name, count] of Object.entries(expected)) assert.equal(rows.get(name), count, name);
    assert.equal(bundle.play!.schema_version, PLAY_MIGRATIONS.at(-1)!.version);
    await importCampaignBundle(bundlePath(), path.join(dir, 'restored'));
    const db = openDatabase(path.join(dir, 'restored', '.storyteller', 'play.db'), PLAY_MIGRATIONS);
    const t2 = db.prepare('SELECT eval_count, prompt_eval_count, narration FROM turns WHERE id = ?').safeIntegers(true).get('t2') as Record<string, unknown>;
    assert.deepEqual(t2, { eval_count: BIG_INTEGER, prompt_eval_count: 2.5, narration: 'Nobody answers.\r\n' });
    assert.equal((db.prepare("SELECT action FROM turns WHERE id = 't3'").get() as { action: string }).action, '“Mara?” ✝');
    assert.equal((db.prepare("SELECT head_turn_id FROM adventures WHERE id = 'adv1'").get() as { head_turn_id: string }).head_turn_id, 't3');
    db.close();
  });

  it('leaves embeddings out by default: memory vectors are cleared so they are rebuilt', async () => {
    seedEmbeddings(campaign);
    await exportBundle(campaign, bundlePath(), fixedClock);
    const bundle = readBundleJson();
    assert.equal(bundle.embeddings, null);
    await importCampaignBundle(bundlePath(), path.join(dir, 'restored'));
    const db = openDatabase(path.join(dir, 'restored', '.storyteller', 'play.db'), PLAY_MIGRATIONS);
    assert.deepEqual(db.prepare('SELECT text, embedding, embed_model FROM memories').get(), { text: 'The door did not open.', embedding: null, embed_model: null });
    db.close();
  });

  it('carries embeddings with their model metadata on request', async () => {
    seedEmbeddings(campaign);
    await exportBundle(campaign, bundlePath(), { ...fixedClock, embeddings: true });
    const bundle = readBundleJson();
    const vectors = bundle.embeddings!.tables.find((t) => t.name === 'embeddings')!;
    assert.deepEqual(vectors.columns, ['model', 'content_hash', 'dimensions', 'chunking_version', 'vector', 'created_at']);
    const restored = path.join(dir, 'restored');
    const summary = await importCampaignBundle(bundlePath(), restored);
    assert.equal(summary.embeddings, 1);
    const store = KnowledgeStore.open(loadCampaign(restored));
    const row = store.db.prepare('SELECT e.vector, e.dimensions, m.floor FROM embeddings e JOIN embedding_models m USING (model)').get() as { vector: Buffer; dimensions: number; floor: number };
    assert.ok(row.vector.equals(VECTOR));
    assert.equal(row.dimensions, 3);
    assert.equal(row.floor, 0.42);
    store.close();
    const play = openDatabase(path.join(restored, '.storyteller', 'play.db'), PLAY_MIGRATIONS);
    assert.ok((play.prepare('SELECT embedding FROM memories').get() as { embedding: Buffer }).embedding.equals(VECTOR));
    play.close();
  });

  it('restores into an existing empty folder, and a campaign that was never played has no play data', async () => {
    fs.rmSync(path.join(campaign, '.storyteller'), { recursive: true });
    await exportBundle(campaign, bundlePath(), fixedClock);
    assert.equal(readBundleJson().play, null);
    const target = path.join(dir, 'empty-target');
    fs.mkdirSync(target);
    await importCampaignBundle(bundlePath(), target);
    assert.ok(fs.existsSync(path.join(target, 'campaign.yaml')));
    assert.ok(!fs.existsSync(path.join(target, '.storyteller', 'play.db')));
  });

  it('refuses to overwrite an existing bundle unless forced', async () => {
    await exportBundle(campaign, bundlePath(), fixedClock);
    await assert.rejects(exportBundle(campaign, bundlePath(), fixedClock), /already exists/);
    await exportBundle(campaign, bundlePath(), { ...fixedClock, force: true });
  });

  describe('refuses a bad bundle with a clear reason and writes nothing', () => {
    let good: CampaignBundle;
    beforeEach(async () => {
      await exportBundle(campaign, bundlePath(), fixedClock);
      good = readBundleJson();
    });

    /** The bundle with one file's content replaced and its hash and size kept honest. */
    const withFile = (bundle: CampaignBundle, file: { path: string; content: string }): CampaignBundle => {
      const bytes = Buffer.from(file.content);
      bundle.files.push({ path: file.path, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), encoding: 'utf8', content: file.content });
      return bundle;
    };
    const clone = (): CampaignBundle => structuredClone(good);
    const table = (bundle: CampaignBundle, name: string) => bundle.play!.tables.find((t) => t.name === name)!;

    const cases: [string, () => string, RegExp][] = [
      ['a truncated file', () => {
        const text = fs.readFileSync(bundlePath(), 'utf8');
        fs.writeFileSync(bundlePath('cut'), text.slice(0, Math.floor(text.length / 2)));
        return bundlePath('cut');
      }, /not valid JSON, the bundle is truncated or corrupt/],
      ['another format', () => writeBundleJson({ ...clone(), format: 'something-else' }), /not a campaign bundle/],
      ['a newer version', () => writeBundleJson({ ...clone(), version: 2 }), /bundle version 2 is newer than this build reads/],
      ['an unknown member', () => writeBundleJson({ ...clone(), extra: true }), /invalid bundle: top level/],
      ['a path with ..', () => writeBundleJson(withFile(clone(), { path: '../escape.md', content: 'x' })), /"\.\.\/escape\.md" has an empty, '\.' or '\.\.' segment/],
      ['a nested ..', () => writeBundleJson(withFile(clone(), { path: 'lore/../../escape.md', content: 'x' })), /segment/],
      ['an absolute path', () => writeBundleJson(withFile(clone(), { path: '/etc/escape', content: 'x' })), /is absolute/],
      ['a drive letter', () => writeBundleJson(withFile(clone(), { path: 'C:/escape', content: 'x' })), /is absolute/],
      ['a backslash', () => writeBundleJson(withFile(clone(), { path: '..\\escape', content: 'x' })), /backslash/],
      ['a NUL', () => writeBundleJson(withFile(clone(), { path: 'a\u0000b.md', content: 'x' })), /NUL/],
      ['a duplicated path', () => writeBundleJson(withFile(clone(), { path: 'canon.md', content: 'x' })), /"canon\.md" is duplicated/],
      ['paths differing only in case', () => writeBundleJson(withFile(clone(), { path: 'CANON.md', content: 'x' })), /"CANON\.md" is duplicated \(same as "canon\.md"\)/],
      ['a file that is also a folder', () => writeBundleJson(withFile(clone(), { path: 'canon.md/inner.md', content: 'x' })), /"canon\.md" is both a file and a folder/],
      ['a sha256 mismatch', () => { const b = clone(); b.files[1]!.content = b.files[1]!.content.replace('a', 'b'); return writeBundleJson(b); }, /does not match its sha256/],
      ['a size mismatch', () => { const b = clone(); b.files[1]!.size += 1; return writeBundleJson(b); }, /has \d+ bytes, the bundle says/],
      ['bad base64', () => { const b = withFile(clone(), { path: 'notes/latin1.txt', content: 'x' }); Object.assign(b.files.at(-1)!, { encoding: 'base64', content: '!!!!' }); return writeBundleJson(b); }, /notes\/latin1\.txt is not valid base64/],
      ['no campaign file', () => { const b = clone(); b.files = b.files.filter((f) => f.path !== 'campaign.yaml'); return writeBundleJson(b); }, /has no campaign\.yaml/],
      ['a duplicated turn id', () => { const b = clone(); const turns = table(b, 'turns'); turns.rows.push([...turns.rows[0]!]); return writeBundleJson(b); }, /play table 'turns' row 3: duplicated id/],
      ['a table twice', () => { const b = clone(); b.play!.tables.push(table(b, 'memories')); return writeBundleJson(b); }, /play table 'memories' appears twice/],
      ['a table not in the schema', () => { const b = clone(); b.play!.tables.push({ name: 'evil', columns: ['x'], rows: [] }); return writeBundleJson(b); }, /play table 'evil' is not part of schema version/],
      ['an injected table name', () => { const b = clone(); b.play!.tables.push({ name: 'x; DROP TABLE turns', columns: ['x'], rows: [] }); return writeBundleJson(b); }, /table names are plain identifiers/],
      ['wrong columns', () => { const b = clone(); table(b, 'memories').columns[0] = 'nope'; return writeBundleJson(b); }, /play table 'memories' has columns \[nope/],
      ['a short row', () => { const b = clone(); table(b, 'turns').rows[0]!.pop(); return writeBundleJson(b); }, /row 0 has \d+ values for \d+ columns/],
      ['a turn of a missing adventure', () => { const b = clone(); table(b, 'adventures').rows = []; return writeBundleJson(b); }, /pointing at missing rows of 'adventures'/],
      ['a newer play schema', () => { const b = clone(); b.play!.schema_version = 99; return writeBundleJson(b); }, /play schema version 99 is newer than this build understands/],
      // 25 folders of 200 characters: every name fits, the whole path (5,000 characters) does not.
      ['a member whose path is too long for the file system, named short', () => writeBundleJson(withFile(clone(), { path: `deep/${`${'d'.repeat(200)}/`.repeat(25)}x.md`, content: 'x' })), /^[^\n]{0,400}file "deep\/d{35}…d{35}\/x\.md" cannot be restored: a name or the whole path is too long for this file system \(ENAMETOOLONG\); nothing was written$/],
      ['an invalid campaign.yaml', () => { const b = clone(); const file = b.files.find((f) => f.path === 'campaign.yaml')!; file.content = 'id: Not Valid\n'; file.size = 14; file.sha256 = createHash('sha256').update(file.content).digest('hex'); return writeBundleJson(b); }, /campaign\.yaml: id/],
    ];
    for (const [what, make, reason] of cases) {
      it(`refuses ${what}`, async () => {
        const file = make();
        const target = path.join(dir, 'restored');
        const before = listTree(dir);
        await assert.rejects(importCampaignBundle(file, target), (error: unknown) => error instanceof Error && reason.test(error.message));
        assert.deepEqual(listTree(dir), before, 'nothing written, no temporary folder left');
      });
    }

    it('restores the campaign but not a member in its data folder: play data comes only from the play tables', async () => {
      const summary = await importCampaignBundle(writeBundleJson(withFile(clone(), { path: '.storyteller/play.db', content: 'not a database' })), path.join(dir, 'restored'));
      assert.deepEqual(summary.notRestored, [{ path: '.storyteller/play.db', reason: "'.storyteller' is a folder imported content never writes into" }]);
      assert.equal(summary.playRows.turns, 3);
      const db = openDatabase(path.join(dir, 'restored', '.storyteller', 'play.db'), PLAY_MIGRATIONS);
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM turns').get() as { n: number }).n, 3);
      db.close();
    });

    it('refuses members and bundles above the size limits', async () => {
      const limits = { ...DEFAULT_BUNDLE_LIMITS, maxMemberBytes: 900 };
      await assert.rejects(importCampaignBundle(bundlePath(), path.join(dir, 'r'), { limits }), /above the 900-byte limit per member/);
      const bundleLimit = { ...DEFAULT_BUNDLE_LIMITS, maxBundleBytes: 1000 };
      await assert.rejects(importCampaignBundle(bundlePath(), path.join(dir, 'r'), { limits: bundleLimit }), /above the 1000-byte limit/);
      assert.ok(!fs.existsSync(path.join(dir, 'r')));
    });

    it('refuses a target folder that is not empty, leaving it as it was', async () => {
      const target = path.join(dir, 'busy');
      fs.mkdirSync(target);
      fs.writeFileSync(path.join(target, 'mine.md'), 'keep me');
      await assert.rejects(importCampaignBundle(bundlePath(), target), (error: unknown) => error instanceof BundleError && /new or empty folder/.test(error.message));
      assert.deepEqual(listTree(target), ['mine.md']);
    });
  });

  describe('CLI', () => {
    it('exports and imports with --json summaries and exit codes', async () => {
      const out = await runCliCaptured(['export', '--out', '../c.storyteller.json', '--json'], campaign);
      assert.equal(out.code, 0, out.stderr);
      const summary = JSON.parse(out.stdout) as { files: number; playRows: Record<string, number> };
      assert.equal(summary.playRows.turns, 3);
      const back = await runCliCaptured(['import', 'c.storyteller.json', '--into', 'restored', '--json'], dir);
      assert.equal(back.code, 0, back.stderr);
      assert.equal((JSON.parse(back.stdout) as { files: number }).files, summary.files);
      const again = await runCliCaptured(['import', 'c.storyteller.json', '--into', 'restored'], dir);
      assert.equal(again.code, 3);
      assert.match(again.stderr, /restored: the target must be a new or empty folder/);
      assert.equal((await runCliCaptured(['import', 'c.storyteller.json'], dir)).code, 2);
    });
  });
});
